/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: fsaio_fadvise: the caller's access pattern for an fd, passed on
 * to the kernel's own readahead and kept in the fd's facts (fdtable.c),
 * where the engine's readahead (readahead.c) reads it.
 */
#include <errno.h>
#include <fcntl.h>

#include "fdtable.h"
#include "fork.h"
#include "nocancel.h"
#include "parts.h"
#include "req.h"

static int fadvise_body(fsaio_ctx_t *ctx, int fd, int advice)
{
	struct fsaio__fdtable *t;
	struct fsaio__fdinfo fi;
	int saved = errno, ret;

	if (!fsaio__ctx_ok(ctx))
		return -EINVAL;
	if (advice != POSIX_FADV_NORMAL && advice != POSIX_FADV_RANDOM &&
	    advice != POSIX_FADV_SEQUENTIAL)
		return -EINVAL;
	if (fd < 0)
		return -EBADF;
	t = fsaio__parts(ctx)->fdt;
	ret = fsaio__fd_get(t, fd, &fi);
	if (ret)
		goto out;
	/* The kernel's own readahead follows the same advice (RANDOM turns it
	 * off, SEQUENTIAL doubles it); pipes and sockets answer ESPIPE, which
	 * changes nothing for them. */
	ret = -posix_fadvise(fd, 0, 0, advice);
	if (ret == -ESPIPE)
		ret = 0;
	if (ret)
		goto out;
	fsaio__fd_clear(t, fd, FSAIO__FD_ADV_RANDOM | FSAIO__FD_ADV_SEQ);
	if (advice == POSIX_FADV_RANDOM)
		fsaio__fd_set(t, fd, FSAIO__FD_ADV_RANDOM);
	else if (advice == POSIX_FADV_SEQUENTIAL)
		fsaio__fd_set(t, fd, FSAIO__FD_ADV_SEQ);
out:
	errno = saved;
	return ret;
}

FSAIO__API int fsaio_fadvise(fsaio_ctx_t *ctx, int fd, int advice)
{
	return FSAIO__NOCANCEL(fadvise_body(ctx, fd, advice));
}

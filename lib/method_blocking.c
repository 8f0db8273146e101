/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: the generic fallback method: every request runs on a worker with
 * ordinary blocking calls. It serves the kinds of file that have no
 * non-blocking way in, and fsync/fdatasync of every kind.
 */
#include <errno.h>
#include <poll.h>
#include <unistd.h>

#include "carry.h"
#include "cq.h"
#include "parts.h"
#include "fdtable.h"
#include "method.h"
#include "req.h"

static int blocking_start(struct fsaio_ctx *ctx, struct fsaio_req *r, struct fsaio__fdinfo fi,
		 struct fsaio__batch *b)
{
	(void)fi;
	if (r->opcode == FSAIO_OP_POLL && (fsaio__parts(ctx)->flags & FSAIO_CTX_KERNEL_RULES)) {
		/* A directory: ready now for what it will ever be ready for. */
		struct pollfd pfd = { r->fd, (short)r->len, 0 };

		if (poll(&pfd, 1, 0) <= 0)
			return -EINVAL;
		fsaio__complete(ctx, r, (int64_t)(unsigned short)pfd.revents, b);
		return 0;
	}
	if (fsaio__is_rw(r) && !fsaio__total(r)) {
		fsaio__complete(ctx, r, 0, b);
		return 0;
	}
	return fsaio__carry(ctx, r, b, FSAIO__WHY_BLOCKS);
}

const struct fsaio__method fsaio__method_blocking = {
	.start = blocking_start,
	.cancel = NULL,
};

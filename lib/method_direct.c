/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: O_DIRECT files. There is no page cache to hit, so nothing is
 * tried inline: every read, write and fsync goes to the context's io_uring
 * ring (uring.c), whose completions join the context's one stream of
 * events. A short result is continued from req->done_ by the ring's
 * thread; a misaligned buffer, offset or length fails in the kernel and
 * its -EINVAL arrives in the event, as with kernel AIO.
 *
 * Without io_uring (denied, disabled, or miss_backend THREADS) the pool
 * serves O_DIRECT with blocking calls, exactly as the blocking method does.
 *
 * The caller's RWF_NOWAIT is passed to the ring, where it means what it
 * means to kernel AIO: fail with -EAGAIN rather than wait to submit the
 * I/O, not rather than wait for the device.
 *
 * Cancel of a request in the ring (WAITING): io_uring's async cancel takes
 * back what has not been issued to the device; once a bio is in flight it
 * cannot be, and fsaio_cancel answers -EBUSY (the event comes as usual).
 */
#include <errno.h>

#include "carry.h"
#include "cq.h"
#include "parts.h"
#include "fdtable.h"
#include "method.h"
#include "rw.h"
#include "req.h"

static int direct_start(struct fsaio_ctx *ctx, struct fsaio_req *r, struct fsaio__fdinfo fi,
		 struct fsaio__batch *b)
{
	(void)fi;
	if (r->opcode == FSAIO_OP_POLL)
		return fsaio__poll_file(ctx, r, b);
	if (fsaio__is_rw(r) && !fsaio__total(r)) {
		fsaio__complete(ctx, r, 0, b);
		return 0;
	}
	if ((r->rw_flags & RWF_NOWAIT) && (fsaio__parts(ctx)->flags & FSAIO_CTX_KERNEL_RULES)) {
		/* The caller's RWF_NOWAIT gets the kernel's own answer (-EAGAIN,
		 * or -EINVAL for a misaligned buffer), from one call here. */
		struct iovec tmp[FSAIO__IOV_MAX];
		ssize_t n;

		do
			n = fsaio__rw_once(r, tmp, FSAIO__IOV_MAX, r->rw_flags);
		while (n == -EINTR);
		fsaio__complete(ctx, r, n, b);
		return 0;
	}
	r->hints_ = 0;
	return fsaio__carry(ctx, r, b, FSAIO__WHY_DIRECT);
}

const struct fsaio__method fsaio__method_direct = {
	.start = direct_start,
	.cancel = fsaio__carry_ring_cancel,
};

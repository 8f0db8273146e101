/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: the generic fallback method: every request runs on a worker with
 * ordinary blocking calls. It serves the kinds of file that have no
 * non-blocking way in, and fsync/fdatasync of every kind.
 */
#include <errno.h>
#include <poll.h>
#include <unistd.h>

#include "internal.h"
#include "method.h"

static int start(struct fsaio_ctx *ctx, struct fsaio_req *r, struct fsaio__fdinfo fi,
		 struct fsaio__batch *b)
{
	(void)fi;
	if (r->opcode == FSAIO_OP_POLL && (ctx->flags & FSAIO_CTX_KERNEL_RULES)) {
		/* A directory: ready now for what it will ever be ready for. */
		struct pollfd pfd = { r->fd, (short)r->len, 0 };

		if (poll(&pfd, 1, 0) <= 0)
			return -EINVAL;
		fsaio__complete(ctx, r, (int64_t)(unsigned short)pfd.revents, b);
		return 0;
	}
	if (fsaio__is_rw(r) && !fsaio__total(r))
		fsaio__complete(ctx, r, 0, b);
	else
		fsaio__handoff(ctx, r, b);
	return 0;
}

static int64_t sync_retry(struct fsaio_ctx *ctx, struct fsaio_req *r)
{
	int ret;

	FSAIO__INC(ctx, retries, 1);
	ret = r->opcode == FSAIO_OP_FSYNC ? fsync(r->fd) : fdatasync(r->fd);
	return ret < 0 ? -errno : 0;
}

/* FSAIO_OP_POLL on a worker: wait for the events with poll(2). */
static int64_t poll_blocking(struct fsaio_ctx *ctx, struct fsaio_req *r)
{
	struct pollfd pfd = { r->fd, (short)r->len, 0 };
	int n;

	do {
		FSAIO__INC(ctx, retries, 1);
		n = poll(&pfd, 1, -1);
	} while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : (int64_t)(unsigned short)pfd.revents;
}

/* Every method's retry on a worker: what reaches the pool is run there with
 * ordinary blocking calls, whatever the kind of file. */
int64_t fsaio__retry_blocking(struct fsaio_ctx *ctx, struct fsaio_req *r)
{
	if (r->opcode == FSAIO_OP_FSYNC || r->opcode == FSAIO_OP_FDSYNC)
		return sync_retry(ctx, r);
	if (r->opcode == FSAIO_OP_POLL)
		return poll_blocking(ctx, r);
	return fsaio__rw_blocking(ctx, r);
}

const struct fsaio__method fsaio__method_blocking = {
	.name = "blocking",
	.start = start,
	.retry = fsaio__retry_blocking,
	.cancel = NULL,
};

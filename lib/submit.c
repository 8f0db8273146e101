/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: validation, dispatch to the fd's method, completion, cancel.
 *
 * Everything that can be judged without doing the I/O is judged here, so a
 * bad request is refused at submit with -errno and never produces an event;
 * what only the kernel can tell (a bad buffer, an I/O error) comes in the
 * event. A request accepted here produces exactly one event: each method's
 * start() either completes it or hands it on, and every hand-off ends in
 * fsaio__complete().
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "internal.h"
#include "method.h"

#ifndef RWF_NOAPPEND
#define RWF_NOAPPEND 0x00000020
#endif
#define KNOWN_RWF (RWF_HIPRI | RWF_DSYNC | RWF_SYNC | RWF_NOWAIT | RWF_APPEND | RWF_NOAPPEND)
#define KNOWN_REQ_FLAGS ((uint16_t)FSAIO_REQ_FULL)

const struct fsaio__method *const fsaio__methods[FSAIO__KIND_MAX] = {
	[FSAIO__KIND_FILE] = &fsaio__method_file,
	[FSAIO__KIND_POLLABLE] = &fsaio__method_pollable,
	[FSAIO__KIND_DIRECT] = &fsaio__method_direct,
	[FSAIO__KIND_BLOCKING] = &fsaio__method_blocking,
};

/* The kernel's bytes_done rule: progress wins over a later error; only a
 * request that did nothing reports the error. Cancel is the exception and
 * reports -ECANCELED with the progress in res2 (fsaio__complete). */
int64_t fsaio__result(const struct fsaio_req *req, int64_t err)
{
	if (err < 0 && err != -ECANCELED && req->done_)
		return (int64_t)req->done_;
	return err;
}

void fsaio__batch_flush(struct fsaio_ctx *ctx, struct fsaio__batch *b)
{
	fsaio__post(ctx, b->ev, b->n);
	b->n = 0;
}

/* Post req's event (into b when the submitter batches). The request is the
 * caller's again once posted: nothing here touches it afterwards. */
void fsaio__complete(struct fsaio_ctx *ctx, struct fsaio_req *req, int64_t res,
		     struct fsaio__batch *b)
{
	struct fsaio_event ev = {
		.user_data = req->user_data,
		.req = req,
		.res = res,
		.res2 = res == -ECANCELED ? (int64_t)req->done_ : 0,
	};

	if (res == -ECANCELED)
		FSAIO__INC(ctx, cancelled, 1);
	fsaio__state_set(req, FSAIO__DONE);
	if (b) {
		b->ev[b->n++] = ev;
		if (b->n == FSAIO__BATCH)
			fsaio__batch_flush(ctx, b);
	} else {
		fsaio__post(ctx, &ev, 1);
	}
}

int fsaio__iov_rest(const struct fsaio_req *r, struct iovec *tmp, int cap,
		    const struct iovec **out)
{
	uint64_t skip = r->done_;
	const struct iovec *iov;
	int i, n, cnt;

	if (!fsaio__is_vectored(r)) {
		tmp[0].iov_base = (char *)r->buf + skip;
		tmp[0].iov_len = (size_t)(r->len - skip);
		*out = tmp;
		return 1;
	}
	iov = r->iov;
	cnt = (int)r->len;
	if (!skip) {
		*out = iov;
		return cnt;
	}
	for (i = 0; i < cnt && skip >= iov[i].iov_len; i++)
		skip -= iov[i].iov_len;
	n = cnt - i < cap ? cnt - i : cap;
	memcpy(tmp, iov + i, (size_t)n * sizeof(*tmp));
	if (n) {
		tmp[0].iov_base = (char *)tmp[0].iov_base + skip;
		tmp[0].iov_len -= (size_t)skip;
	}
	*out = tmp;
	return n;
}

ssize_t fsaio__rw_once(const struct fsaio_req *r, struct iovec *tmp, int cap, int flags)
{
	const struct iovec *iov;
	int cnt = fsaio__iov_rest(r, tmp, cap, &iov);
	off_t off = fsaio__is_stream(r) ? -1 : (off_t)(r->offset + (int64_t)r->done_);
	ssize_t n;

	/* The raw calls, not glibc's preadv2/pwritev2: those toggle the
	 * thread's async-cancel state around every call (2.7% of the CPU of
	 * hot 4 KiB reads in perf; the API calls run with cancellation
	 * disabled anyway, fsaio__nocancel_begin). The offset goes as the
	 * kernel's low and high words, as glibc passes it. */
	n = syscall(fsaio__is_write(r) ? SYS_pwritev2 : SYS_preadv2, r->fd, iov, cnt, (long)off,
		    (long)((uint64_t)off >> 32), flags);
	return n < 0 ? -errno : n;
}

/* A worker's loop over the remaining range: short counts and EINTR go round
 * again until the range is complete, EOF, or an error. On a pipe or socket
 * a read completes with what one call gave, as read(2) does, unless the
 * caller asked for FSAIO_REQ_FULL; an O_NONBLOCK one is waited on with
 * poll(2) rather than failed. */
int64_t fsaio__rw_blocking(struct fsaio_ctx *ctx, struct fsaio_req *r)
{
	struct iovec tmp[FSAIO__IOV_MAX];
	uint64_t total = fsaio__total(r);
	int flags = r->rw_flags & ~RWF_NOWAIT;
	bool stream = fsaio__is_stream(r);

	while (r->done_ < total) {
		ssize_t n = fsaio__rw_once(r, tmp, FSAIO__IOV_MAX, flags);

		FSAIO__INC(ctx, retries, 1);
		if (n == -EINTR)
			continue;
		if (n == -EAGAIN && stream) {
			struct pollfd pfd = { r->fd, fsaio__is_write(r) ? POLLOUT : POLLIN, 0 };

			poll(&pfd, 1, -1);
			continue;
		}
		if (n < 0)
			return fsaio__result(r, n);
		if (n == 0)
			break;
		r->done_ += (uint64_t)n;
		if (stream && !fsaio__is_write(r) && !(r->flags & FSAIO_REQ_FULL))
			break;
	}
	return (int64_t)r->done_;
}

void fsaio__handoff(struct fsaio_ctx *ctx, struct fsaio_req *r, struct fsaio__batch *b)
{
	if (r->rw_flags & RWF_NOWAIT) {
		fsaio__complete(ctx, r, r->done_ ? (int64_t)r->done_ : -EAGAIN, b);
		return;
	}
	if (r->done_)
		FSAIO__INC(ctx, partial_inline, 1);
	fsaio__pool_queue(ctx, r);
}

static int validate(struct fsaio_ctx *ctx, struct fsaio_req *r, struct fsaio__fdinfo *fi)
{
	uint64_t total = 0;
	int ret;

	if (r->reserved || r->opcode == 0 || r->opcode >= FSAIO_OP__MAX ||
	    (r->flags & ~KNOWN_REQ_FLAGS))
		return -EINVAL;
	if (r->rw_flags & ~KNOWN_RWF)
		return -EOPNOTSUPP;
	if (r->fd < 0)
		return -EBADF;
	if (!fsaio__is_rw(r) && r->rw_flags)
		return -EINVAL;
	if (fsaio__is_rw(r)) {
		if (r->offset < -1)
			return -EINVAL;
		if (fsaio__is_vectored(r)) {
			if (r->len > FSAIO__IOV_MAX)
				return -EINVAL;
			if (r->len && !r->iov)
				return -EFAULT;
			for (uint64_t i = 0; i < r->len; i++) {
				if (r->iov[i].iov_len > (size_t)SSIZE_MAX - total)
					return -EINVAL;
				total += r->iov[i].iov_len;
			}
		} else {
			if (r->len > SSIZE_MAX)
				return -EINVAL;
			/* The kernel's AIO takes a NULL buffer and faults in the event. */
			if (r->len && !r->buf && !(ctx->flags & FSAIO_CTX_KERNEL_RULES))
				return -EFAULT;
			total = r->len;
		}
		if (r->offset >= 0 && total > (uint64_t)(INT64_MAX - r->offset))
			return -EINVAL;
	}
	ret = fsaio__fd_get(ctx, r->fd, fi);
	if (ret)
		return ret;
	if ((ctx->flags & FSAIO_CTX_KERNEL_RULES) && (fi->flags & FSAIO__FD_PATH)) {
		ret = fsaio__fd_refresh(ctx, r->fd, fi);
		if (ret)
			return ret;
		if (fi->flags & FSAIO__FD_PATH)
			return -EBADF;
	}
	if (fsaio__is_rw(r)) {
		uint32_t need = fsaio__is_write(r) ? FSAIO__FD_WRITE : FSAIO__FD_READ;

		/* The cached facts may belong to an fd number since reused. */
		bool seekable = fi->flags & FSAIO__FD_SEEKABLE;

		if (!(fi->flags & need) || (r->offset < 0) == seekable) {
			ret = fsaio__fd_refresh(ctx, r->fd, fi);
			if (ret)
				return ret;
			if (!(fi->flags & need))
				return -EBADF;
			if (r->offset < 0 && (fi->flags & FSAIO__FD_SEEKABLE))
				return -EINVAL;
		}
		uint32_t no_iter = fsaio__is_write(r) ? FSAIO__FD_NO_WRITE_ITER :
			FSAIO__FD_NO_READ_ITER;

		/* The kernel's AIO refuses a file without read_iter/write_iter. */
		if ((ctx->flags & FSAIO_CTX_KERNEL_RULES) && (fi->flags & no_iter)) {
			ret = fsaio__fd_refresh(ctx, r->fd, fi);
			if (ret)
				return ret;
			if (fi->flags & no_iter)
				return -EINVAL;
		}
	}
	r->priv_[0] = total;
	r->priv_[1] = !(fi->flags & FSAIO__FD_SEEKABLE);
	return 0;
}

/* Reserve a completion slot: the queue depth bounds what is in flight. */
static bool reserve(struct fsaio_ctx *ctx)
{
	unsigned v = atomic_load_explicit(&ctx->in_flight, memory_order_relaxed);

	do {
		if (v >= ctx->depth)
			return false;
	} while (!atomic_compare_exchange_weak_explicit(&ctx->in_flight, &v, v + 1,
							memory_order_acquire,
							memory_order_relaxed));
	return true;
}

static int submit_body(fsaio_ctx_t *ctx, struct fsaio_req **reqs, unsigned nr)
{
	struct fsaio__batch b;
	int saved = errno, ret = 0;
	unsigned i;

	if (!fsaio__ctx_ok(ctx))
		return -EINVAL;
	if (nr && !reqs)
		return -EFAULT;
	if (nr > INT_MAX)
		nr = INT_MAX;
	b.n = 0;
	for (i = 0; i < nr; i++) {
		struct fsaio_req *r = reqs[i];
		struct fsaio__fdinfo fi;

		if (!r) {
			ret = -EFAULT;
			break;
		}
		ret = validate(ctx, r, &fi);
		if (ret)
			break;
		if (!reserve(ctx)) {
			ret = -EAGAIN;
			break;
		}
		r->ctx_ = ctx;
		r->done_ = 0;
		r->next_ = r->prev_ = NULL;
		r->method_ = fi.kind;
		fsaio__state_set(r, FSAIO__INLINE);
		ret = fsaio__methods[fi.kind]->start(ctx, r, fi, &b);
		if (ret) {
			fsaio__state_set(r, FSAIO__IDLE);
			atomic_fetch_sub_explicit(&ctx->in_flight, 1, memory_order_relaxed);
			break;
		}
		FSAIO__INC(ctx, requests, 1);
	}
	fsaio__uring_flush(ctx);
	fsaio__batch_flush(ctx, &b);
	errno = saved;
	return i ? (int)i : ret;
}

FSAIO__API int fsaio_submit(fsaio_ctx_t *ctx, struct fsaio_req **reqs, unsigned nr)
{
	int cs = fsaio__nocancel_begin();
	int ret = submit_body(ctx, reqs, nr);

	fsaio__nocancel_end(cs);
	return ret;
}

static int cancel_body(fsaio_ctx_t *ctx, struct fsaio_req *req)
{
	const struct fsaio__method *m;
	int saved = errno, ret;

	if (!fsaio__ctx_ok(ctx))
		return -EINVAL;
	if (!req)
		return -EFAULT;
	if (req->ctx_ != ctx)
		return -EINVAL;
	switch (fsaio__state_get(req)) {
	case FSAIO__QUEUED:
		ret = fsaio__pool_cancel(ctx, req);
		break;
	case FSAIO__WAITING:
		m = fsaio__methods[req->method_];
		ret = m->cancel ? m->cancel(ctx, req) : -EBUSY;
		break;
	case FSAIO__INLINE:
	case FSAIO__RUNNING:
		ret = -EBUSY;
		break;
	default:
		ret = -EINVAL;
		break;
	}
	errno = saved;
	return ret;
}

FSAIO__API int fsaio_cancel(fsaio_ctx_t *ctx, struct fsaio_req *req)
{
	int cs = fsaio__nocancel_begin();
	int ret = cancel_body(ctx, req);

	fsaio__nocancel_end(cs);
	return ret;
}

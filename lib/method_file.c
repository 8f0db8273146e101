/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: regular buffered files, the retry method at the heart of libfsaio.
 *
 * In the submitter: go as far as the page cache allows without blocking,
 * preadv2/pwritev2 with RWF_NOWAIT, round again on a short count (the rest
 * may be cached too, or be EOF). A full result completes at once; EAGAIN or
 * a partial one hands the remainder to the pool (fsaio__handoff), like the
 * 2004 patchset's -EIOCBRETRY, with req->done_ as its bytes_done.
 *
 * The residency probe (probe.c) runs before the attempt when a miss would
 * be dear: always for large requests, and for small ones after the last
 * attempt on the fd missed (FSAIO__FD_PROBE_NEXT), so a hot workload pays
 * nothing and a cold one pays ~140 ns instead of a ~8 us NOWAIT miss.
 *
 * Filesystems that refuse RWF_NOWAIT (tmpfs reads, ext4 writes on 6.18:
 * EOPNOTSUPP; some answer EINVAL) are remembered per fd. Their requests are
 * done inline with a plain call when the probe finds the whole range cached
 * (copying to or from cached pages), and go to the pool otherwise.
 */
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "method.h"

/* Requests at least this large are probed before their first attempt: a
 * NOWAIT miss of 64 KiB already starts I/O and costs the submitter tens of
 * microseconds, the probe a fraction of one. */
#define PROBE_ALWAYS_BYTES (64 * 1024)
#define INLINE_IOV 16
/* The largest write done inline when the fs refuses RWF_NOWAIT for writes
 * (ext4): cold random writes, depth 16, through the pool vs inline here:
 * 4 KiB 103k vs 494k IOPS (kernel AIO 484k), 1 MiB 4.8k vs 2.3k. */
#define INLINE_WRITE_MAX (64 * 1024)

static bool at_eof(const struct fsaio_req *r)
{
	struct stat st;

	return fstat(r->fd, &st) == 0 &&
	       (uint64_t)r->offset + r->done_ >= (uint64_t)st.st_size;
}

/* EBADF or ESPIPE before any progress: the fd number may now name another
 * file. Learn it again and, if it changed, let its own method start the
 * request (or refuse it at submit). False when the facts still hold and the
 * error is the request's. */
static bool stale(struct fsaio_ctx *ctx, struct fsaio_req *r, struct fsaio__fdinfo fi,
		  ssize_t n, struct fsaio__batch *b, int *ret)
{
	uint32_t need = fsaio__is_write(r) ? FSAIO__FD_WRITE : FSAIO__FD_READ;
	struct fsaio__fdinfo now;

	if ((n != -EBADF && n != -ESPIPE) || r->done_)
		return false;
	*ret = fsaio__fd_refresh(ctx, r->fd, &now);
	if (*ret)
		return true;
	if (now.kind == fi.kind && now.flags == fi.flags)
		return false;
	if (!(now.flags & need) || (r->offset < 0) == !!(now.flags & FSAIO__FD_SEEKABLE)) {
		*ret = !(now.flags & need) ? -EBADF : -EINVAL;
		return true;
	}
	r->method_ = now.kind;
	r->priv_[1] = !(now.flags & FSAIO__FD_SEEKABLE);
	*ret = fsaio__methods[now.kind]->start(ctx, r, now, b);
	return true;
}

/*
 * A buffered write blocks on the device only where it must read a page it
 * overwrites in part: the pages that hold its first and last byte when they
 * are not page-aligned. Whole pages are allocated and filled without a read,
 * so a cold aligned write is as cheap as a hot one (kernel AIO's buffered
 * 4 KiB random writes run at ~500k IOPS here, where a hand-off to a worker
 * costs four times that). Only those edge pages are probed.
 */
static bool write_edges_cached(struct fsaio_ctx *ctx, const struct fsaio_req *r)
{
	uint64_t ps = (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t start = (uint64_t)r->offset + r->done_;
	uint64_t end = (uint64_t)r->offset + fsaio__total(r);

	/* Large writes copy for long and meet dirty throttling: workers
	 * overlap them better than one submitter does. */
	if (end - start > INLINE_WRITE_MAX)
		return false;

	bool head = start % ps != 0;

	if (head && fsaio__probe(ctx, r->fd, start, 1) != FSAIO__RES_HOT)
		return false;
	/* The last page, unless it is the first one and was just probed. */
	if (end % ps && !(head && (end - 1) / ps == start / ps) &&
	    fsaio__probe(ctx, r->fd, end - 1, 1) != FSAIO__RES_HOT)
		return false;
	return true;
}

/* The fs refused NOWAIT: copy inline only what the probe says is cached. */
static int start_resident(struct fsaio_ctx *ctx, struct fsaio_req *r,
			   struct fsaio__fdinfo fi, struct fsaio__batch *b)
{
	uint64_t total = fsaio__total(r);
	struct iovec tmp[INLINE_IOV];
	bool sync = (fi.flags & FSAIO__FD_SYNC) || (r->rw_flags & (RWF_DSYNC | RWF_SYNC));

	if ((ctx->flags & FSAIO_CTX_NO_PROBE) || (fsaio__is_write(r) && sync) ||
	    !(fsaio__is_write(r) ? write_edges_cached(ctx, r) :
	      fsaio__probe(ctx, r->fd, (uint64_t)r->offset + r->done_, total - r->done_) ==
	      FSAIO__RES_HOT)) {
		fsaio__handoff(ctx, r, b);
		return 0;
	}
	while (r->done_ < total) {
		ssize_t n = fsaio__rw_once(r, tmp, INLINE_IOV, r->rw_flags & ~RWF_NOWAIT);

		if (n == -EINTR)
			continue;
		if (n <= 0) {
			int ret;

			if (stale(ctx, r, fi, n, b, &ret))
				return ret;
			if (n < 0 && !r->done_) {
				fsaio__complete(ctx, r, n, b);
				return 0;
			}
			break;
		}
		r->done_ += (uint64_t)n;
		FSAIO__INC(ctx, bytes_inline, (uint64_t)n);
	}
	if (r->done_ < total && fsaio__is_write(r)) {
		fsaio__handoff(ctx, r, b);
		return 0;
	}
	FSAIO__INC(ctx, completed_inline, 1);
	fsaio__complete(ctx, r, (int64_t)r->done_, b);
	return 0;
}

static int start_rw(struct fsaio_ctx *ctx, struct fsaio_req *r,
		    struct fsaio__fdinfo fi, struct fsaio__batch *b)
{
	uint64_t total = fsaio__total(r);
	bool write = fsaio__is_write(r);
	uint32_t refused = write ? FSAIO__FD_NOWAIT_WBAD : FSAIO__FD_NOWAIT_RBAD;
	struct iovec tmp[INLINE_IOV];
	int ret;

	if (!total) {
		fsaio__complete(ctx, r, 0, b);
		return 0;
	}
	if (write)
		r->priv_[2] = 0;
	else
		fsaio__stream_enter(ctx, r, fi);
	if (ctx->flags & FSAIO_CTX_NO_INLINE) {
		fsaio__miss(ctx, r, b);
		return 0;
	}
	if (write && (ctx->flags & FSAIO_CTX_INLINE_WRITES) && !(r->rw_flags & RWF_NOWAIT)) {
		int64_t res = fsaio__rw_blocking(ctx, r);

		FSAIO__INC(ctx, bytes_inline, r->done_);
		FSAIO__INC(ctx, completed_inline, 1);
		fsaio__complete(ctx, r, res, b);
		return 0;
	}
	/* The caller's RWF_NOWAIT always gets the kernel's own answer (so
	 * -EOPNOTSUPP where the fs refuses it), whatever the fd's history. */
	if ((fi.flags & refused) && !(r->rw_flags & RWF_NOWAIT))
		return start_resident(ctx, r, fi, b);
	/* Reads only: a write needs few of its pages cached (write_edges_cached).
	 * Not with the caller's RWF_NOWAIT: the kernel answers that one. */
	if (!write && !(ctx->flags & FSAIO_CTX_NO_PROBE) && !(r->rw_flags & RWF_NOWAIT) &&
	    (total >= PROBE_ALWAYS_BYTES || (fi.flags & FSAIO__FD_PROBE_NEXT)) &&
	    fsaio__probe(ctx, r->fd, (uint64_t)r->offset, total) == FSAIO__RES_COLD) {
		FSAIO__INC(ctx, probe_cold, 1);
		fsaio__fd_set(ctx, r->fd, FSAIO__FD_PROBE_NEXT);
		fsaio__miss(ctx, r, b);
		return 0;
	}
	for (;;) {
		ssize_t n = fsaio__rw_once(r, tmp, INLINE_IOV, r->rw_flags | RWF_NOWAIT);

		if (n > 0) {
			r->done_ += (uint64_t)n;
			FSAIO__INC(ctx, bytes_inline, (uint64_t)n);
			if (r->done_ < total)
				continue;
			if (fi.flags & FSAIO__FD_PROBE_NEXT)
				fsaio__fd_clear(ctx, r->fd, FSAIO__FD_PROBE_NEXT);
			fsaio__stream_hit(ctx, r);
			FSAIO__INC(ctx, completed_inline, 1);
			fsaio__complete(ctx, r, (int64_t)total, b);
			return 0;
		}
		/* Kernels 5.9/5.10 may answer 0 to a NOWAIT read before EOF. */
		if (n == 0 && !write && at_eof(r)) {
			FSAIO__INC(ctx, completed_inline, 1);
			fsaio__complete(ctx, r, (int64_t)r->done_, b);
			return 0;
		}
		if (n == 0 || n == -EAGAIN) {
			fsaio__fd_set(ctx, r->fd, FSAIO__FD_PROBE_NEXT);
			/* The NOWAIT miss started readahead of the range itself. */
			r->priv_[2] |= FSAIO__P2_KERNEL_RA;
			fsaio__miss(ctx, r, b);
			return 0;
		}
		if (n == -EINTR)
			continue;
		if ((n == -EOPNOTSUPP || n == -EINVAL) && !(r->rw_flags & RWF_NOWAIT)) {
			fsaio__fd_set(ctx, r->fd, refused);
			return start_resident(ctx, r, fi, b);
		}
		if (stale(ctx, r, fi, n, b, &ret))
			return ret;
		fsaio__complete(ctx, r, fsaio__result(r, n), b);
		return 0;
	}
}

static int start(struct fsaio_ctx *ctx, struct fsaio_req *r, struct fsaio__fdinfo fi,
		 struct fsaio__batch *b)
{
	if (fsaio__is_rw(r))
		return start_rw(ctx, r, fi, b);
	if (r->opcode == FSAIO_OP_POLL) {
		int64_t revents = fsaio__file_revents(r);

		/* The kernel's AIO refuses to wait for what can never come. */
		if (!revents && (ctx->flags & FSAIO_CTX_KERNEL_RULES))
			return -EINVAL;
		fsaio__complete(ctx, r, revents, b);
		return 0;
	}
	fsaio__handoff(ctx, r, b);      /* fsync, fdatasync: always a worker */
	return 0;
}

const struct fsaio__method fsaio__method_file = {
	.name = "file",
	.start = start,
	.retry = fsaio__retry_blocking,
	.cancel = fsaio__uring_cancel,  /* misses carried by io_uring (uring.c) */
};

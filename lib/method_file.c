/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: regular buffered files, the retry method at the heart of libfsaio.
 *
 * In the submitter: go as far as the page cache allows without blocking,
 * preadv2/pwritev2 with RWF_NOWAIT, round again on a short count (the rest
 * may be cached too, or be EOF). A full result completes at once; EAGAIN or
 * a partial one hands the remainder on (fsaio__carry, carry.c: io_uring
 * or the pool), like the 2004 patchset's -EIOCBRETRY, with req->done_ as
 * its bytes_done.
 *
 * The residency probe (probe.c) runs before the attempt when a miss would
 * be dear: always for large requests, and for small ones after the last
 * attempt on the fd missed (FSAIO__FD_PROBE_NEXT), so a hot workload pays
 * nothing and a cold one pays a probe instead of a failed NOWAIT attempt.
 * An fd whose reads keep missing may skip both (STRAIGHT_AFTER: carry.c
 * decides whether the ring takes it untried).
 *
 * A drop-in may ask for a read's attempt alone, before it makes its own
 * records of the request (file_now, through fsaio__reads_now): only where
 * the attempt is likely to finish it, and it keeps nothing if it does not.
 *
 * Filesystems that refuse RWF_NOWAIT (tmpfs reads, ext4 writes on 6.18:
 * EOPNOTSUPP; some answer EINVAL) are remembered per fd. Their requests are
 * done inline with a plain call when the probe finds the whole range cached
 * (copying to or from cached pages), and go to the pool otherwise.
 *
 * Under fsaio__submit_batch (dropin.h) a read or write starts with the
 * caller's cancellation enabled: every branch that hands the request on
 * disables it first (fsaio__carry, fsaio__batch_nocancel); the inline attempt makes only
 * raw system calls, which are not cancellation points.
 */
#include <errno.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "carry.h"
#include "cq.h"
#include "parts.h"
#include "fdtable.h"
#include "method.h"
#include "probe.h"
#include "readahead.h"
#include "req.h"
#include "rw.h"
#include "rw_batch.h"

/* Requests at least this large are probed before their first attempt: a
 * NOWAIT miss of 64 KiB already starts I/O and costs the submitter tens of
 * microseconds, the probe a fraction of one. */
#define PROBE_ALWAYS_BYTES (64 * 1024)
#define INLINE_IOV 16
/* The largest write done inline when the fs refuses RWF_NOWAIT for writes
 * (ext4): small ones cost less inline than a hand-off, large ones overlap
 * better on workers (docs/design-notes.md). */
#define INLINE_WRITE_MAX (64 * 1024)

/* Whether r's position is at or past the end of its file: st_size for a
 * regular file, the device's size for a block device (whose st_size is 0). */
static bool at_eof(const struct fsaio_req *r)
{
	struct stat st;
	uint64_t size;

	if (fstat(r->fd, &st) < 0)
		return false;
	size = (uint64_t)st.st_size;
	if (S_ISBLK(st.st_mode) && ioctl(r->fd, BLKGETSIZE64, &size) < 0)
		return false;
	return (uint64_t)r->offset + r->done_ >= size;
}

/* EBADF or ESPIPE before any progress: the fd number may now name another
 * file. True when its facts changed (start again: FSAIO__RESTART); false
 * when they still hold and the error is the request's. */
static bool stale(struct fsaio_ctx *ctx, const struct fsaio_req *r, struct fsaio__fdinfo fi,
		  ssize_t n)
{
	return (n == -EBADF || n == -ESPIPE) && !r->done_ &&
	       fsaio__fd_changed(fsaio__parts(ctx)->fdt, r->fd, fi);
}

/*
 * A buffered write blocks on the device only where it must read a page it
 * overwrites in part: the pages that hold its first and last byte when they
 * are not page-aligned. Whole pages are allocated and filled without a read,
 * so a cold aligned write is as cheap as a hot one, and far cheaper than a
 * hand-off to a worker. Only those edge pages are probed.
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

	if (head && fsaio__probe(fsaio__parts(ctx)->st, r->fd, start, 1) != FSAIO__RES_HOT)
		return false;
	/* The last page, unless it is the first one and was just probed. */
	if (end % ps && !(head && (end - 1) / ps == start / ps) &&
	    fsaio__probe(fsaio__parts(ctx)->st, r->fd, end - 1, 1) != FSAIO__RES_HOT)
		return false;
	return true;
}

/* A read on an fd whose last STRAIGHT_AFTER reads all missed is offered to
 * fsaio__carry untried (FSAIO__WHY_UNTRIED): the ring, which tries the page
 * cache itself, may take it without a probe or a failed NOWAIT attempt.
 * One hit ends the streak. */
#define STRAIGHT_AFTER 4

/* The fs refused NOWAIT: copy inline only what the probe says is cached. */
static int start_resident(struct fsaio_ctx *ctx, struct fsaio_req *r,
			   struct fsaio__fdinfo fi, struct fsaio__batch *b)
{
	uint64_t total = fsaio__total(r);
	struct iovec tmp[INLINE_IOV];
	bool sync = (fi.flags & FSAIO__FD_SYNC) || (r->rw_flags & (RWF_DSYNC | RWF_SYNC));

	fsaio__batch_nocancel(b);
	if ((fsaio__parts(ctx)->flags & FSAIO_CTX_NO_PROBE) || (fsaio__is_write(r) && sync) ||
	    !(fsaio__is_write(r) ? write_edges_cached(ctx, r) :
	      fsaio__probe(fsaio__parts(ctx)->st, r->fd, (uint64_t)r->offset + r->done_,
			   total - r->done_) == FSAIO__RES_HOT)) {
		return fsaio__carry(ctx, r, b, FSAIO__WHY_BLOCKS);
	}
	while (r->done_ < total) {
		ssize_t n = fsaio__rw_once(r, tmp, INLINE_IOV, r->rw_flags & ~RWF_NOWAIT);

		if (n == -EINTR)
			continue;
		if (n <= 0) {
			if (stale(ctx, r, fi, n))
				return FSAIO__RESTART;
			if (n < 0 && !r->done_) {
				fsaio__complete(ctx, r, n, b);
				return 0;
			}
			break;
		}
		r->done_ += (uint64_t)n;
		FSAIO__INC(ctx, bytes_inline, (uint64_t)n);
	}
	if (r->done_ < total && fsaio__is_write(r))
		return fsaio__carry(ctx, r, b, FSAIO__WHY_BLOCKS);
	FSAIO__INC(ctx, completed_inline, 1);
	fsaio__complete(ctx, r, (int64_t)r->done_, b);
	return 0;
}

/* The inline attempt of read r missed: its remainder goes on. */
static int missed(struct fsaio_ctx *ctx, struct fsaio_req *r, struct fsaio__fdinfo fi,
		  struct fsaio__batch *b)
{
	fsaio__fd_missed(fsaio__parts(ctx)->fdt, r->fd, fi);
	/* The NOWAIT miss started readahead of the range itself. */
	r->hints_ |= FSAIO__HINT_KERNEL_RA;
	return fsaio__carry(ctx, r, b, FSAIO__WHY_MISS);
}

/* The inline attempt's answer when r is done: all of it, or up to EOF. */
#define DONE 1

/* The inline attempt: RWF_NOWAIT rounds until r is done (DONE), or the
 * last round's 0 (a miss, or EOF for a write) or -errno. first: its first
 * round's answer, had already with other reads (rw_batch.c), or NULL. */
static ssize_t attempt(struct fsaio_ctx *ctx, struct fsaio_req *r, struct iovec *tmp,
		       const int64_t *first)
{
	uint64_t total = fsaio__total(r);

	for (;;) {
		ssize_t n;

		if (first) {
			n = (ssize_t)*first;
			first = NULL;
		} else {
			n = fsaio__rw_once(r, tmp, INLINE_IOV, r->rw_flags | RWF_NOWAIT);
		}

		if (n > 0) {
			r->done_ += (uint64_t)n;
			FSAIO__INC(ctx, bytes_inline, (uint64_t)n);
			if (r->done_ < total)
				continue;
			return DONE;
		}
		if (n == -EINTR)
			continue;
		/* Kernels 5.9/5.10 may answer 0 to a NOWAIT read before EOF. */
		if (n == 0 && !fsaio__is_write(r) && at_eof(r))
			return DONE;
		return n;
	}
}

/* A write its call's batch made already (rw_batch.c), blocking where it
 * had to, as the kernel's AIO makes it inside io_submit: its answer is the
 * event's, a short count too (the kernel's AIO answers one; going on after
 * the run would follow the run's later writes). */
static int batched_write(struct fsaio_ctx *ctx, struct fsaio_req *r, struct fsaio__batch *b)
{
	int64_t n = b->first;

	b->has_first = false;
	FSAIO__INC(ctx, blocking_inline, 1);
	if (n > 0) {
		r->done_ += (uint64_t)n;
		FSAIO__INC(ctx, bytes_inline, (uint64_t)n);
	}
	FSAIO__INC(ctx, completed_inline, 1);
	fsaio__complete(ctx, r, n < 0 ? fsaio__result(r, n) : (int64_t)r->done_, b);
	return 0;
}

static int start_rw(struct fsaio_ctx *ctx, struct fsaio_req *r,
		    struct fsaio__fdinfo fi, struct fsaio__batch *b)
{
	uint64_t total = fsaio__total(r);
	bool write = fsaio__is_write(r);
	uint32_t refused = write ? FSAIO__FD_NOWAIT_WBAD : FSAIO__FD_NOWAIT_RBAD;
	struct iovec tmp[INLINE_IOV];
	ssize_t n;

	if (!total) {
		fsaio__complete(ctx, r, 0, b);
		return 0;
	}
	if (write)
		r->hints_ = 0;
	else
		fsaio__stream_enter(fsaio__parts(ctx)->ra, r, fi);
	if (fsaio__parts(ctx)->flags & FSAIO_CTX_NO_INLINE)
		return fsaio__carry(ctx, r, b, FSAIO__WHY_MISS);
	if (write && b->has_first)
		return batched_write(ctx, r, b);
	if (write && !fsaio__carry(ctx, r, b, FSAIO__WHY_UNTRIED))
		return 0;
	/* The caller's RWF_NOWAIT always gets the kernel's own answer (so
	 * -EOPNOTSUPP where the fs refuses it), whatever the fd's history. */
	if ((fi.flags & refused) && !(r->rw_flags & RWF_NOWAIT))
		return start_resident(ctx, r, fi, b);
	if (!write && fsaio__fd_misses(fi) >= STRAIGHT_AFTER - 1 &&
	    !fsaio__carry(ctx, r, b, FSAIO__WHY_UNTRIED))
		return 0;
	/* Reads only: a write needs few of its pages cached (write_edges_cached).
	 * Not with the caller's RWF_NOWAIT: the kernel answers that one. */
	if (!write && !(fsaio__parts(ctx)->flags & FSAIO_CTX_NO_PROBE) && !(r->rw_flags & RWF_NOWAIT) &&
	    (total >= PROBE_ALWAYS_BYTES || (fi.flags & FSAIO__FD_PROBE_NEXT)) &&
	    fsaio__probe(fsaio__parts(ctx)->st, r->fd, (uint64_t)r->offset, total) == FSAIO__RES_COLD) {
		FSAIO__INC(ctx, probe_cold, 1);
		fsaio__fd_missed(fsaio__parts(ctx)->fdt, r->fd, fi);
		return fsaio__carry(ctx, r, b, FSAIO__WHY_MISS);
	}
	n = attempt(ctx, r, tmp, b->has_first ? &b->first : NULL);
	b->has_first = false;
	if (n == DONE) {
		if (r->done_ == total) {
			if (fi.flags & FSAIO__FD_PROBE_NEXT)
				fsaio__fd_clear(fsaio__parts(ctx)->fdt, r->fd,
						FSAIO__FD_PROBE_NEXT | FSAIO__FD_MISS_MASK);
			fsaio__stream_hit(fsaio__parts(ctx)->ra, r);
		}
		FSAIO__INC(ctx, completed_inline, 1);
		fsaio__complete(ctx, r, (int64_t)r->done_, b);
		return 0;
	}
	if (n == 0 || n == -EAGAIN)
		return missed(ctx, r, fi, b);
	if ((n == -EOPNOTSUPP || n == -EINVAL) && !(r->rw_flags & RWF_NOWAIT)) {
		fsaio__fd_set(fsaio__parts(ctx)->fdt, r->fd, refused);
		return start_resident(ctx, r, fi, b);
	}
	if (stale(ctx, r, fi, n))
		return FSAIO__RESTART;
	fsaio__complete(ctx, r, fsaio__result(r, n), b);
	return 0;
}

/* What joins its call's batch (rw_batch.c): a read whose start_rw makes
 * its inline attempt before anything else (no probe, no hand-off untried),
 * as file_now asks, so the attempt is likely to finish it; and a write
 * that start_rw would do here with a blocking call (INLINE_WRITES: carry's
 * HERE), which the batch does the same way. */
static bool file_batchable(struct fsaio_ctx *ctx, const struct fsaio_req *r,
			   struct fsaio__fdinfo fi)
{
	uint32_t flags = fsaio__parts(ctx)->flags;

	if (!fsaio__rw_batchable(r) || (flags & FSAIO_CTX_NO_INLINE))
		return false;
	if (fsaio__is_write(r))
		return (flags & FSAIO_CTX_INLINE_WRITES) && !r->rw_flags;
	return fsaio__total(r) < PROBE_ALWAYS_BYTES &&
	       !(fi.flags & (FSAIO__FD_NOWAIT_RBAD | FSAIO__FD_PROBE_NEXT | FSAIO__FD_MISS_MASK));
}

/*
 * A read done in the caller alone, for a drop-in whose own records cost
 * more than the read when the page cache has it (fsaio__reads_now): only
 * where the attempt is likely to finish it (a small read on an fd whose
 * last attempt hit), and only if it does. r is left as submit would find
 * it otherwise, except that a miss is remembered on the fd, so that the
 * submit that follows probes instead of trying again.
 */
static bool file_now(struct fsaio_ctx *ctx, struct fsaio_req *r, struct fsaio__fdinfo fi,
		     const int64_t *first, int64_t *res)
{
	uint64_t total = fsaio__total(r);
	struct iovec tmp[INLINE_IOV];
	ssize_t n;

	if (r->rw_flags || !file_batchable(ctx, r, fi))
		return false;
	n = attempt(ctx, r, tmp, first);
	if (n != DONE) {
		if (n == 0 || n == -EAGAIN)
			fsaio__fd_missed(fsaio__parts(ctx)->fdt, r->fd, fi);
		r->done_ = 0;
		return false;
	}
	/* Seen by the stream detector as start_rw would show it, after the
	 * fact: a read that is not done here is shown once, by submit. */
	fsaio__stream_enter(fsaio__parts(ctx)->ra, r, fi);
	if (r->done_ == total)
		fsaio__stream_hit(fsaio__parts(ctx)->ra, r);
	FSAIO__INC(ctx, completed_inline, 1);
	*res = (int64_t)r->done_;
	return true;
}

static int file_start(struct fsaio_ctx *ctx, struct fsaio_req *r, struct fsaio__fdinfo fi,
		 struct fsaio__batch *b)
{
	if (fsaio__is_rw(r))
		return start_rw(ctx, r, fi, b);
	fsaio__batch_nocancel(b);
	if (r->opcode == FSAIO_OP_POLL)
		return fsaio__poll_file(ctx, r, b);
	return fsaio__carry(ctx, r, b, FSAIO__WHY_BLOCKS); /* fsync, fdatasync: a worker */
}

const struct fsaio__method fsaio__method_file = {
	.start = file_start,
	.now = file_now,
	.batchable = file_batchable,
	.cancel = fsaio__carry_ring_cancel,  /* misses carried by io_uring (uring.c) */
};

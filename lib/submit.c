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
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "nocancel.h"
#include "cq.h"
#include "ctx.h"
#include "fdtable.h"
#include "ioprio.h"
#include "method.h"
#include "pool.h"
#include "req.h"
#include "uring.h"
#include "usercopy.h"

#ifndef RWF_NOAPPEND
#define RWF_NOAPPEND 0x00000020
#endif
#define KNOWN_RWF (RWF_HIPRI | RWF_DSYNC | RWF_SYNC | RWF_NOWAIT | RWF_APPEND | RWF_NOAPPEND | \
		   RWF_DONTCACHE)
#define KNOWN_REQ_FLAGS ((uint16_t)FSAIO_REQ_FULL)

const struct fsaio__method *const fsaio__methods[FSAIO__KIND_MAX] = {
	[FSAIO__KIND_FILE] = &fsaio__method_file,
	[FSAIO__KIND_POLLABLE] = &fsaio__method_pollable,
	[FSAIO__KIND_DIRECT] = &fsaio__method_direct,
	[FSAIO__KIND_BLOCKING] = &fsaio__method_blocking,
};

/* FSAIO_CTX_KERNEL_RULES: what the kernel's AIO refuses at submit from the
 * file alone: an O_PATH fd (-EBADF), a file without read_iter/write_iter
 * (-EINVAL). */
static int kernel_refuses(const struct fsaio_req *r, struct fsaio__fdinfo fi)
{
	if (fi.flags & FSAIO__FD_PATH)
		return -EBADF;
	if (fsaio__is_rw(r) &&
	    (fi.flags & (fsaio__is_write(r) ? FSAIO__FD_NO_WRITE_ITER : FSAIO__FD_NO_READ_ITER)))
		return -EINVAL;
	return 0;
}

/* The bytes of the caller's iovec array iov[cnt], read as the kernel's
 * import_iovec reads it: -EFAULT when it cannot be read, -EINVAL when the
 * lengths add up past SSIZE_MAX. */
static int iov_total(const struct iovec *iov, uint64_t cnt, uint64_t *total)
{
	struct iovec chunk[32];

	for (uint64_t at = 0; at < cnt; at += 32) {
		unsigned n = cnt - at < 32 ? (unsigned)(cnt - at) : 32;

		if (fsaio__copy_user(chunk, iov + at, n * sizeof(*chunk)))
			return -EFAULT;
		for (unsigned i = 0; i < n; i++) {
			if (chunk[i].iov_len > (size_t)SSIZE_MAX - *total)
				return -EINVAL;
			*total += chunk[i].iov_len;
		}
	}
	return 0;
}

static int validate(struct fsaio_ctx *ctx, struct fsaio_req *r, struct fsaio__fdinfo *fi)
{
	uint64_t total = 0;
	int ret;

	if (r->reserved || r->opcode == 0 || r->opcode >= FSAIO_OP__MAX ||
	    (r->flags & ~KNOWN_REQ_FLAGS))
		return -EINVAL;
	/* Before rw_flags, as the kernel's aio_prep_rw checks them. A poll
	 * does no I/O to prioritise. */
	if (r->ioprio) {
		if (r->opcode == FSAIO_OP_POLL)
			return -EINVAL;
		ret = fsaio__ioprio_check(r->ioprio);
		if (ret)
			return ret;
	}
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
			ret = iov_total(r->iov, r->len, &total);
			if (ret)
				return ret;
		} else {
			if (r->len > SSIZE_MAX)
				return -EINVAL;
			/* The kernel's AIO takes a NULL buffer and faults in the event. */
			if (r->len && !r->buf && !(ctx->parts.flags & FSAIO_CTX_KERNEL_RULES))
				return -EFAULT;
			total = r->len;
		}
		if (r->offset >= 0 && total > (uint64_t)(INT64_MAX - r->offset))
			return -EINVAL;
	}
	r->total_ = total;
	ret = fsaio__fd_get(fsaio__parts(ctx)->fdt, r->fd, fi);
	if (ret)
		return ret;
	ret = fsaio__fd_fit(r, *fi);
	if (!ret && (ctx->parts.flags & FSAIO_CTX_KERNEL_RULES))
		ret = kernel_refuses(r, *fi);
	if (!ret && fsaio__dontcache(r) && fsaio__fd_dontcache_refused(fsaio__parts(ctx)->fdt, r->fd, fi))
		ret = -EOPNOTSUPP;
	/* The cached facts may belong to an fd number since reused: a refusal
	 * is judged again on fresh ones. */
	if (ret) {
		ret = fsaio__fd_recheck(fsaio__parts(ctx)->fdt, r, fi);
		if (!ret && (ctx->parts.flags & FSAIO_CTX_KERNEL_RULES))
			ret = kernel_refuses(r, *fi);
		if (!ret && fsaio__dontcache(r) &&
		    fsaio__fd_dontcache_refused(fsaio__parts(ctx)->fdt, r->fd, fi))
			ret = -EOPNOTSUPP;
	}
	return ret;
}

/* Hand r to the method of its fd's kind. A method that finds the fd names
 * another kind of file now (FSAIO__RESTART, before any progress) has it
 * checked again here and started by the right method. */
static int dispatch(struct fsaio_ctx *ctx, struct fsaio_req *r, struct fsaio__fdinfo fi,
		    struct fsaio__batch *b)
{
	int ret, tries = 0;

	for (;;) {
		ret = fsaio__methods[fi.kind]->start(ctx, r, fi, b);
		if (ret != FSAIO__RESTART)
			return ret;
		/* The file may be of another kind now. */
		fsaio__batch_nocancel(b);
		ret = fsaio__fd_recheck(fsaio__parts(ctx)->fdt, r, &fi);
		if (ret)
			return ret;
		/* A number replaced again and again: give up as the kernel
		 * would on a closed fd. */
		if (++tries == 3)
			return -EBADF;
	}
}

/* Reserve a completion slot: the queue depth bounds what is in flight,
 * unless the caller bounds it (fsaio__set_deliver). */
static bool reserve(struct fsaio_ctx *ctx)
{
	unsigned v = atomic_load_explicit(&ctx->in_flight, memory_order_relaxed);

	if (ctx->deliver)
		return true;

	do {
		if (v >= ctx->depth)
			return false;
	} while (!atomic_compare_exchange_weak_explicit(&ctx->in_flight, &v, v + 1,
							memory_order_acquire,
							memory_order_relaxed));
	return true;
}

/* Take back r's reservation: it was refused, and makes no event. */
static void unreserve(struct fsaio_ctx *ctx, struct fsaio_req *r)
{
	fsaio__state_set(r, FSAIO__IDLE);
	if (!ctx->deliver)
		atomic_fetch_sub_explicit(&ctx->in_flight, 1, memory_order_relaxed);
}

/* Start accepted request r: 0, or -errno and it was refused. */
static int start(struct fsaio_ctx *ctx, struct fsaio_req *r, struct fsaio__fdinfo fi,
		 struct fsaio__batch *b)
{
	int ret;

	/* method_file.c disables cancellation itself on the paths that need
	 * it; the other methods are not audited for it. */
	if (fi.kind != FSAIO__KIND_FILE || !fsaio__is_rw(r))
		fsaio__batch_nocancel(b);
	ret = dispatch(ctx, r, fi, b);
	b->has_first = false;
	if (ret) {
		unreserve(ctx, r);
		return ret;
	}
	FSAIO__INC(ctx, requests, 1);
	return 0;
}

/* Reads of one call, accepted and waiting to start, whose first attempts
 * are made together (rw_batch.c) when the run is started. */
struct run {
	unsigned n;
	struct fsaio_req *r[FSAIO__RW_BATCH_MAX];
	struct fsaio__fdinfo fi[FSAIO__RW_BATCH_MAX];
};

/* Start the run's reads in order, each with its first attempt's answer
 * from the batch: how many were accepted; at the first refusal *err is
 * set and the ones after it are refused too (their reads were attempted,
 * which wrote only their own buffers). A run of writes is never refused
 * here: the file method takes a batched write with its answer, whatever
 * it is. */
static unsigned start_run(struct fsaio_ctx *ctx, struct run *run, struct fsaio__batch *b,
			  int *err)
{
	int64_t first[FSAIO__RW_BATCH_MAX];
	unsigned had = fsaio__rw_batch_run(fsaio__parts(ctx)->rwb, run->r, run->n, first);
	unsigned i;

	for (i = 0; i < run->n; i++) {
		b->has_first = i < had;
		b->first = b->has_first ? first[i] : 0;
		*err = start(ctx, run->r[i], run->fi[i], b);
		if (*err)
			break;
	}
	for (unsigned j = i + 1; j < run->n; j++)
		unreserve(ctx, run->r[j]);
	run->n = 0;
	return i;
}

/* The i-th request of a call. From a program (user), its pointer and the
 * request itself are the caller's memory, read as the kernel reads an
 * iocb: a pointer that cannot be read, or a request that cannot be read
 * and written (the engine keeps its state in it), is -EFAULT. A drop-in's
 * requests are its own. */
static int take_req(struct fsaio_req **reqs, unsigned i, bool user, struct fsaio_req **out)
{
	struct fsaio_req *r;

	if (!user)
		r = reqs[i];
	else if (fsaio__copy_user(&r, FSAIO__USER_AT(reqs, i * sizeof(*reqs)), sizeof(r)))
		return -EFAULT;
	if (!r || (user && fsaio__user_rw_ok(r, sizeof(*r))))
		return -EFAULT;
	*out = r;
	return 0;
}

/* cs: FSAIO__CS_LAZY when the caller's cancellation is still enabled and
 * is to be disabled only before a step that may reach a cancellation point
 * (nocancel.h), or any other value when the caller disabled it. flush:
 * submit what went to the io_uring ring now; else the caller does, with
 * fsaio__submit_end. alone: the caller's call brings one request
 * (fsaio__batch.alone).
 *
 * Requests start in order. A read (or, with FSAIO_CTX_INLINE_WRITES, a
 * write) whose first attempt may be batched (method->batchable) waits in a
 * run until a request of another kind, the run's limit or the call's end
 * starts the run: the attempts of a call's cached reads cost one system
 * call, and nothing of the call starts out of order. */
static int submit_body(fsaio_ctx_t *ctx, struct fsaio_req **reqs, unsigned nr, int cs,
		       bool flush, bool alone, bool user)
{
	struct fsaio__batch b;
	struct run run;
	int saved = errno, ret = 0, err = 0;
	unsigned i, accepted = 0;

	if (!fsaio__ctx_ok(ctx))
		return -EINVAL;
	if (nr && !reqs)
		return -EFAULT;
	if (nr > INT_MAX)
		nr = INT_MAX;
	fsaio__uring_back(&ctx->uring);
	b.n = 0;
	b.cs = cs;
	b.alone = alone;
	b.has_first = false;
	run.n = 0;
	for (i = 0; i < nr; i++) {
		struct fsaio_req *r;
		const struct fsaio__method *m;
		struct fsaio__fdinfo fi;

		ret = take_req(reqs, i, user, &r);
		if (ret)
			break;
		ret = validate(ctx, r, &fi);
		if (!ret && !reserve(ctx))
			ret = -EAGAIN;
		if (ret)
			break;
		r->ctx_ = ctx;
		r->done_ = 0;
		r->next_ = r->prev_ = NULL;
		fsaio__state_set(r, FSAIO__INLINE);
		m = fsaio__methods[fi.kind];
		if (nr > 1 && m->batchable && m->batchable(ctx, r, fi)) {
			/* A run is of reads or of writes: a read's attempt may
			 * leave a remainder for after the run, which must not
			 * follow a later write of the run. */
			if (run.n && fsaio__is_write(run.r[0]) != fsaio__is_write(r)) {
				accepted += start_run(ctx, &run, &b, &ret);
				if (ret) {
					unreserve(ctx, r);
					break;
				}
			}
			run.r[run.n] = r;
			run.fi[run.n++] = fi;
			if (run.n == FSAIO__RW_BATCH_MAX) {
				accepted += start_run(ctx, &run, &b, &ret);
				if (ret)
					break;
			}
			continue;
		}
		if (run.n) {
			accepted += start_run(ctx, &run, &b, &ret);
			if (ret) {
				unreserve(ctx, r);
				break;
			}
		}
		ret = start(ctx, r, fi, &b);
		if (ret)
			break;
		accepted++;
	}
	/* A refusal in the run comes before whatever ended the loop. */
	if (run.n) {
		accepted += start_run(ctx, &run, &b, &err);
		if (err)
			ret = err;
	}
	if (flush)
		fsaio__uring_flush_soon(&ctx->uring);
	if (cs == FSAIO__CS_LAZY && b.cs != FSAIO__CS_LAZY)
		fsaio__nocancel_end(b.cs);
	fsaio__batch_flush(ctx, &b);
	errno = saved;
	return accepted ? (int)accepted : ret;
}

FSAIO__API int fsaio_submit(fsaio_ctx_t *ctx, struct fsaio_req **reqs, unsigned nr)
{
	return FSAIO__NOCANCEL(submit_body(ctx, reqs, nr, PTHREAD_CANCEL_DISABLE, true, nr == 1, true));
}

/* The drop-ins' way in (dropin.h). */
int fsaio__submit_batch(fsaio_ctx_t *ctx, struct fsaio_req **reqs, unsigned nr, bool alone)
{
	return submit_body(ctx, reqs, nr, FSAIO__CS_LAZY, false, alone, false);
}

void fsaio__submit_end(fsaio_ctx_t *ctx)
{
	int saved = errno;

	if (fsaio__ctx_ok(ctx))
		fsaio__uring_flush_soon(&ctx->uring);
	errno = saved;
}

/* The drop-ins' hit path (dropin.h): each read checked as submit checks
 * it, the first attempts of those its method may do now made in one
 * system call, then each method's now(). */
uint64_t fsaio__reads_now(fsaio_ctx_t *ctx, struct fsaio_req **reqs, unsigned nr, int64_t *res)
{
	struct fsaio_req *cand[FSAIO__RW_BATCH_MAX];
	struct fsaio__fdinfo fi[FSAIO__RW_BATCH_MAX];
	unsigned at[FSAIO__RW_BATCH_MAX], n = 0, had;
	int64_t first[FSAIO__RW_BATCH_MAX];
	uint64_t done = 0;

	if (!fsaio__ctx_ok(ctx))
		return 0;
	if (nr > FSAIO__RW_BATCH_MAX)
		nr = FSAIO__RW_BATCH_MAX;
	for (unsigned i = 0; i < nr; i++) {
		struct fsaio_req *r = reqs[i];
		const struct fsaio__method *m;

		if (r->opcode != FSAIO_OP_PREAD || validate(ctx, r, &fi[n]))
			continue;
		m = fsaio__methods[fi[n].kind];
		r->ctx_ = ctx;
		r->done_ = 0;
		if (!m->now || !m->batchable || !m->batchable(ctx, r, fi[n]))
			continue;
		cand[n] = r;
		at[n++] = i;
	}
	if (!n)
		return 0;
	had = fsaio__rw_batch_run(fsaio__parts(ctx)->rwb, cand, n, first);
	for (unsigned k = 0; k < n; k++) {
		const struct fsaio__method *m = fsaio__methods[fi[k].kind];

		if (m->now(ctx, cand[k], fi[k], k < had ? &first[k] : NULL, &res[at[k]])) {
			FSAIO__INC(ctx, requests, 1);
			done |= 1ull << at[k];
		}
	}
	return done;
}

static int cancel_body(fsaio_ctx_t *ctx, struct fsaio_req *req)
{
	const struct fsaio__method *m;
	int saved = errno, ret;

	void *owner;

	if (!fsaio__ctx_ok(ctx))
		return -EINVAL;
	/* A request of ctx was read and written at submit: one that cannot
	 * be read is none of its own. */
	if (!req || fsaio__copy_user(&owner, FSAIO__USER_AT(req, offsetof(struct fsaio_req, ctx_)), sizeof(owner)))
		return -EFAULT;
	if (owner != ctx)
		return -EINVAL;
	switch (fsaio__state_get(req)) {
	case FSAIO__QUEUED:
		ret = fsaio__pool_cancel(&ctx->pool, req);
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
	return FSAIO__NOCANCEL(cancel_body(ctx, req));
}

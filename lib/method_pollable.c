/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: the retry method of pollable fds (pipes, FIFOs, sockets, ttys,
 * eventfds, other character devices): the 2004 patchset's AIO for pipes.
 * A request is carried by non-blocking calls only, first in the submitter,
 * then by the poller thread (poller.c) each time its fd becomes ready, so a
 * waiting request holds no thread: a thousand pending pipe reads cost a
 * thousand list entries and one thread per context.
 *
 * A call is made non-blocking without touching the caller's fd: O_NONBLOCK
 * belongs to the open file description, shared with every dup and with
 * other processes, so setting it would change the caller's fd behind its
 * back. In order of preference:
 *  1. preadv2/pwritev2 with RWF_NOWAIT and offset -1, per call: pipes,
 *     sockets, eventfd, timerfd on 6.18.
 *  2. Where that is refused (EOPNOTSUPP, remembered per fd: FIFOs opened by
 *     name, ttys, most character devices) and the fd is O_NONBLOCK (looked
 *     at before every call: the caller may change it), a plain call.
 *  3. A blocking FIFO is a pipe, and splice takes SPLICE_F_NONBLOCK per
 *     call: reads by vmsplice() out of it when it is open read-only (on a fd
 *     open for writing vmsplice would write instead); writes, in the poller,
 *     by copying into the poller's private pipe and splicing from there, so
 *     the caller's buffer is not referenced after the event (vmsplice into
 *     the FIFO would lend it the caller's pages).
 *  4. Anything else (a blocking tty): the submitter reads only after
 *     poll(.., 0) said it may (another reader of the same fd outside this
 *     library could still take the bytes first and make it wait, as it
 *     would a read(2)); the poller never calls it: it waits for readiness
 *     and hands the request to a worker.
 *
 * Completion rules, those of read(2) and write(2):
 *  - a read completes with what is there once at least one byte arrived;
 *    with FSAIO_REQ_FULL only when its whole range is filled;
 *  - a write completes when all of it is written, in as many rounds as the
 *    pipe or socket buffer needs;
 *  - end of file (a read giving 0: no writer left, the peer shut down)
 *    completes with the bytes done so far, possibly 0;
 *  - an error completes with the bytes done if any, else -errno. A write
 *    without readers gives -EPIPE; SIGPIPE is raised only when the call was
 *    made in the submitting thread, as write(2) would raise it; the poller
 *    thread blocks it;
 *  - the caller's RWF_NOWAIT: one attempt, then the bytes done or -EAGAIN;
 *  - offsets are ignored: these fds have no position to honour;
 *  - FSAIO_OP_POLL: res is the revents poll(2) would give (the events asked
 *    for, POLLERR, POLLHUP, POLLNVAL), waited for in the poller as well;
 *    -EPERM if the fd is not ready and epoll cannot watch it.
 * Requests on one fd wait in FIFO order per direction, and a submitter that
 * finds requests of its direction waiting queues behind them without
 * trying, so one thread's requests consume and produce bytes in submission
 * order (several submitting threads race as read(2) callers do).
 * Cancel takes a WAITING request off its list: -ECANCELED, res2 the bytes
 * done; -EBUSY while the poller runs it. A fd closed while requests wait on
 * it leaves them waiting (epoll forgets a closed file) until they are
 * cancelled or the context is destroyed: close only after the events.
 *
 * priv_[3] carries a finished request's res from the poller's lock to its
 * completion; priv_[2] is unused.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "internal.h"
#include "method.h"

#define INLINE_IOV 16
/* nb_call: the call can only be made blocking here: give it to a worker. */
#define NB_POOL ((ssize_t)-100000)

/* Reads out of a FIFO without O_NONBLOCK; vmsplice copies, as read does. */
static ssize_t fifo_read(const struct fsaio_req *r, struct iovec *tmp, int cap)
{
	const struct iovec *iov;
	int cnt = fsaio__iov_rest(r, tmp, cap, &iov);
	ssize_t n = vmsplice(r->fd, iov, (unsigned long)cnt, SPLICE_F_NONBLOCK);

	return n < 0 ? -errno : n;
}

/* Writes into a FIFO without O_NONBLOCK, in the poller thread (the private
 * pipe is that thread's): the bytes are copied into the private pipe, then
 * moved into the FIFO by splice, which does not block with its flag. A
 * write of at most PIPE_BUF bytes is one pipe buffer, moved whole or not at
 * all, so it stays atomic. */
static ssize_t fifo_write(struct fsaio_ctx *ctx, const struct fsaio_req *r,
			  struct iovec *tmp, int cap)
{
	int *spl = ctx->poller.spl;
	const struct iovec *iov;
	ssize_t in, out;
	int cnt, err;

	if (spl[0] < 0 && pipe2(spl, O_NONBLOCK | O_CLOEXEC) < 0) {
		spl[0] = spl[1] = -1;
		return NB_POOL;
	}
	cnt = fsaio__iov_rest(r, tmp, cap, &iov);
	in = writev(spl[1], iov, cnt);
	if (in <= 0)
		return in < 0 && errno != EAGAIN ? -errno : NB_POOL;
	out = splice(spl[0], NULL, r->fd, NULL, (size_t)in, SPLICE_F_NONBLOCK);
	err = errno;
	if (out < in) {
		/* What did not fit must not reach the next write: drop the
		 * private pipe with it, a new one is made on next use. */
		close(spl[0]);
		close(spl[1]);
		spl[0] = spl[1] = -1;
	}
	return out < 0 ? -err : out;
}

/* One non-blocking call on r's remainder: bytes, 0 (EOF), -errno (-EAGAIN:
 * wait for readiness), or NB_POOL. */
static ssize_t nb_call(struct fsaio_ctx *ctx, struct fsaio_req *r, bool poller,
		       struct iovec *tmp, int cap)
{
	bool write = fsaio__is_write(r);
	uint32_t refused = write ? FSAIO__FD_NOWAIT_WBAD : FSAIO__FD_NOWAIT_RBAD;
	struct fsaio__fdinfo fi;
	ssize_t n;
	int fl;

	n = fsaio__fd_get(ctx, r->fd, &fi);
	if (n)
		return n;
	if (!(fi.flags & refused)) {
		n = fsaio__rw_once(r, tmp, cap, r->rw_flags | RWF_NOWAIT);
		if (n != -EOPNOTSUPP)
			return n;
		fsaio__fd_set(ctx, r->fd, refused);
	}
	fl = fcntl(r->fd, F_GETFL);
	if (fl < 0)
		return -errno;
	if (fl & O_NONBLOCK)
		return fsaio__rw_once(r, tmp, cap, r->rw_flags & ~RWF_NOWAIT);
	if (fi.flags & FSAIO__FD_FIFO) {
		if (!write && (fl & O_ACCMODE) == O_RDONLY)
			return fifo_read(r, tmp, cap);
		if (write && poller)
			return fifo_write(ctx, r, tmp, cap);
	}
	if (poller)
		return NB_POOL;
	if (!write) {
		struct pollfd pfd = { .fd = r->fd, .events = POLLIN };

		if (poll(&pfd, 1, 0) > 0)
			return fsaio__rw_once(r, tmp, cap, r->rw_flags & ~RWF_NOWAIT);
	}
	return -EAGAIN;
}

/* Carry r's remainder as far as non-blocking calls go: its res, or
 * FSAIO__STEP_AGAIN (wait for readiness), or FSAIO__STEP_POOL. */
static int64_t step(struct fsaio_ctx *ctx, struct fsaio_req *r, bool poller,
		    struct iovec *tmp, int cap)
{
	uint64_t total = fsaio__total(r);
	bool full = fsaio__is_write(r) || (r->flags & FSAIO_REQ_FULL);

	for (;;) {
		ssize_t n = nb_call(ctx, r, poller, tmp, cap);

		if (n > 0) {
			r->done_ += (uint64_t)n;
			if (r->done_ >= total || !full)
				return (int64_t)r->done_;
			continue;
		}
		if (n == 0)
			return (int64_t)r->done_;
		if (n == -EINTR)
			continue;
		if (n == -EAGAIN)
			return FSAIO__STEP_AGAIN;
		if (n == NB_POOL)
			return FSAIO__STEP_POOL;
		return fsaio__result(r, n);
	}
}

int64_t fsaio__pollable_step(struct fsaio_ctx *ctx, struct fsaio_req *r)
{
	struct iovec tmp[FSAIO__IOV_MAX];

	return step(ctx, r, true, tmp, FSAIO__IOV_MAX);
}

static int start_poll(struct fsaio_ctx *ctx, struct fsaio_req *r, struct fsaio__batch *b)
{
	struct pollfd pfd = { .fd = r->fd, .events = (short)r->len };
	int ret;

	if (!(ctx->flags & FSAIO_CTX_NO_INLINE) && poll(&pfd, 1, 0) > 0) {
		FSAIO__INC(ctx, completed_inline, 1);
		fsaio__complete(ctx, r, (unsigned short)pfd.revents, b);
		return 0;
	}
	ret = fsaio__poller_park(ctx, r);
	if (ret == -EPERM) {
		/* epoll refuses files whose readiness never changes: what
		 * poll(2) says now is all there will ever be. The kernel's
		 * AIO refuses to wait for anything else. */
		if (poll(&pfd, 1, 0) > 0)
			ret = (unsigned short)pfd.revents;
		else if (ctx->flags & FSAIO_CTX_KERNEL_RULES)
			return -EINVAL;
		fsaio__complete(ctx, r, ret, b);
	} else if (ret) {
		fsaio__pool_queue(ctx, r);
	}
	return 0;
}

/* With FSAIO_CTX_KERNEL_RULES, an O_NONBLOCK fd's request that would wait
 * ends now, as read(2) and the kernel's AIO end it. Asked only then: the
 * caller may change O_NONBLOCK at any time. */
static bool nonblocking(struct fsaio_ctx *ctx, const struct fsaio_req *r)
{
	int fl;

	if (!(ctx->flags & FSAIO_CTX_KERNEL_RULES))
		return false;
	fl = fcntl(r->fd, F_GETFL);
	return fl >= 0 && (fl & O_NONBLOCK);
}

static int start(struct fsaio_ctx *ctx, struct fsaio_req *r, struct fsaio__fdinfo fi,
		 struct fsaio__batch *b)
{
	struct iovec tmp[INLINE_IOV];
	int64_t res = FSAIO__STEP_AGAIN;

	if (r->opcode == FSAIO_OP_POLL)
		return start_poll(ctx, r, b);
	if (!fsaio__is_rw(r)) {
		fsaio__handoff(ctx, r, b);      /* fsync, fdatasync: a worker */
		return 0;
	}
	if (r->offset >= 0 && lseek(r->fd, 0, SEEK_CUR) >= 0) {
		/* An offset, which a pipe or socket has no use for, on a fd
		 * that seeks: the cached facts may be those of a closed fd
		 * whose number now names a file. Learn them again; lseek is
		 * the cheapest question (ESPIPE on pipes, sockets and ttys). */
		struct fsaio__fdinfo now;
		int ret = fsaio__fd_refresh(ctx, r->fd, &now);

		if (ret)
			return ret;
		if (now.kind != FSAIO__KIND_POLLABLE) {
			r->method_ = now.kind;
			r->priv_[1] = !(now.flags & FSAIO__FD_SEEKABLE);
			if (!(now.flags & (fsaio__is_write(r) ? FSAIO__FD_WRITE : FSAIO__FD_READ)))
				return -EBADF;
			return fsaio__methods[now.kind]->start(ctx, r, now, b);
		}
	}
	if ((ctx->flags & FSAIO_CTX_KERNEL_RULES) && r->offset > 0 &&
	    (fi.flags & FSAIO__FD_SOCKET)) {
		/* A socket has no position: the kernel's AIO refuses one. */
		fsaio__complete(ctx, r, -ESPIPE, b);
		return 0;
	}
	if (!fsaio__total(r)) {
		/* A zero-length read(2) never reaches the file; the kernel's
		 * AIO calls its read_iter, and the counters of eventfd, timerfd
		 * and signalfd refuse a buffer too small for one value. */
		bool tiny = (ctx->flags & FSAIO_CTX_KERNEL_RULES) && !fsaio__is_write(r) &&
			    (fi.flags & FSAIO__FD_ANON);

		int64_t res = tiny ? -EINVAL : 0;

		/* sock_write_iter sends even nothing: a closed peer is EPIPE. */
		if ((ctx->flags & FSAIO_CTX_KERNEL_RULES) && fsaio__is_write(r) &&
		    (fi.flags & FSAIO__FD_SOCKET) && send(r->fd, "", 0, MSG_DONTWAIT) < 0)
			res = -errno;
		fsaio__complete(ctx, r, res, b);
		return 0;
	}
	if (!(ctx->flags & FSAIO_CTX_NO_INLINE) &&
	    (!fsaio__poller_queued(ctx, r) || nonblocking(ctx, r))) {
		res = step(ctx, r, false, tmp, INLINE_IOV);
		FSAIO__INC(ctx, bytes_inline, r->done_);
		if (res != FSAIO__STEP_AGAIN && res != FSAIO__STEP_POOL) {
			FSAIO__INC(ctx, completed_inline, 1);
			fsaio__complete(ctx, r, res, b);
			return 0;
		}
	}
	if ((r->rw_flags & RWF_NOWAIT) || (res == FSAIO__STEP_AGAIN && nonblocking(ctx, r))) {
		fsaio__complete(ctx, r, r->done_ ? (int64_t)r->done_ : -EAGAIN, b);
		return 0;
	}
	if (r->done_)
		FSAIO__INC(ctx, partial_inline, 1);
	/* Once parked, r may complete and be reused at any moment: not a
	 * field of it is touched after a successful park. */
	if (res == FSAIO__STEP_POOL || fsaio__poller_park(ctx, r))
		fsaio__pool_queue(ctx, r);
	return 0;
}

const struct fsaio__method fsaio__method_pollable = {
	.name = "pollable",
	.start = start,
	.retry = fsaio__retry_blocking,
	.cancel = fsaio__poller_cancel,
};

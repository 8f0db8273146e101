/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: the retry method of pollable fds (pipes, FIFOs, sockets, ttys,
 * eventfds, other character devices): the 2004 patchset's AIO for pipes.
 * A request is carried by non-blocking calls only, first in the submitter,
 * then by the poller thread (poller.c) each time its file becomes ready,
 * so a waiting request holds no thread.
 *
 * A call is made non-blocking without touching the caller's O_NONBLOCK
 * (it belongs to the open file description, shared with every dup). In
 * order of preference: preadv2/pwritev2 with RWF_NOWAIT (pipes, sockets,
 * eventfd); where that is refused (remembered per fd) and the fd is
 * O_NONBLOCK, a plain call; a blocking FIFO through splice with
 * SPLICE_F_NONBLOCK (reads by vmsplice when open read-only; writes, in the
 * poller, copied into its private pipe first, so the caller's pages are
 * not lent to the FIFO); anything else (a blocking tty) is read in the
 * submitter only after poll(.., 0) said so, and handed to a worker by the
 * poller once ready.
 *
 * Completion follows read(2) and write(2) (fsaio.h: FSAIO_REQ_FULL): a read
 * of a file that reads what is ready completes with what is there once a
 * byte arrived, a read of a memory device (/dev/zero, /dev/urandom) with
 * its full count, whose RWF_NOWAIT calls may stop early under CPU
 * pressure (fsaio__short_is_final), a write when all of it is written; EOF and errors with the bytes done, else -errno (-EPIPE;
 * SIGPIPE only from the submitting thread); the caller's RWF_NOWAIT makes
 * one attempt; offsets are ignored; FSAIO_OP_POLL gives poll(2)'s revents
 * (-EPERM when the fd is not ready and epoll cannot watch it). A submitter
 * that finds requests of its direction waiting on the file queues behind
 * them, so one thread's requests move bytes in submission order. A
 * parked request is bound to its file (poller_table.c), closed fd or not.
 * exec_ carries a finished request's res from the poller's lock to its
 * completion.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "carry.h"
#include "cq.h"
#include "parts.h"
#include "fdtable.h"
#include "method.h"
#include "poller.h"
#include "req.h"
#include "rw.h"

#define INLINE_IOV 16
/* nb_call: the call can only be made blocking here: give it to a worker. */
#define NB_POOL ((ssize_t)-100000)

/* Reads out of a FIFO without O_NONBLOCK; vmsplice copies, as read does. */
static ssize_t fifo_read(const struct fsaio_req *r, struct iovec *tmp, int cap)
{
	const struct iovec *iov;
	int cnt = fsaio__iov_rest(r, tmp, cap, &iov);
	ssize_t n = vmsplice(fsaio__fd(r), iov, (unsigned long)cnt, SPLICE_F_NONBLOCK);

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
	int *spl = fsaio__parts(ctx)->poller->spl;
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
	out = splice(spl[0], NULL, fsaio__fd(r), NULL, (size_t)in, SPLICE_F_NONBLOCK);
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

	n = fsaio__fd_get(fsaio__parts(ctx)->fdt, r->fd, &fi);
	if (n)
		return n;
	if (!(fi.flags & refused)) {
		n = fsaio__rw_once(r, tmp, cap, r->rw_flags | RWF_NOWAIT);
		if (n != -EOPNOTSUPP)
			return n;
		fsaio__fd_set(fsaio__parts(ctx)->fdt, r->fd, refused);
	}
	fl = fcntl(fsaio__fd(r), F_GETFL);
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
		struct pollfd pfd = { .fd = fsaio__fd(r), .events = POLLIN };

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
	bool full = !fsaio__short_is_final(r);

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

/* 0, or -EAGAIN when r can go nowhere: refused at submit. */
static int start_poll(struct fsaio_ctx *ctx, struct fsaio_req *r, struct fsaio__batch *b)
{
	struct pollfd pfd = { .fd = r->fd, .events = (short)r->len };
	int ret;

	if (!(fsaio__parts(ctx)->flags & FSAIO_CTX_NO_INLINE) && poll(&pfd, 1, 0) > 0) {
		FSAIO__INC(ctx, completed_inline, 1);
		fsaio__complete(ctx, r, (unsigned short)pfd.revents, b);
		return 0;
	}
	ret = fsaio__carry(ctx, r, b, FSAIO__WHY_POLLABLE);
	if (ret == -EPERM) {
		/* epoll refuses files whose readiness never changes: what
		 * poll(2) says now is all there will ever be. */
		if (poll(&pfd, 1, 0) > 0)
			ret = (unsigned short)pfd.revents;
		else if (fsaio__parts(ctx)->flags & FSAIO_CTX_KERNEL_RULES)
			return -EINVAL;         /* the kernel's AIO will not wait for it */
		fsaio__complete(ctx, r, ret, b);
		return 0;
	}
	return ret;
}

/* With FSAIO_CTX_KERNEL_RULES, an O_NONBLOCK fd's request that would wait
 * ends now, as read(2) and the kernel's AIO end it. Asked only then: the
 * caller may change O_NONBLOCK at any time. */
static bool nonblocking(struct fsaio_ctx *ctx, const struct fsaio_req *r)
{
	int fl;

	if (!(fsaio__parts(ctx)->flags & FSAIO_CTX_KERNEL_RULES))
		return false;
	fl = fcntl(r->fd, F_GETFL);
	return fl >= 0 && (fl & O_NONBLOCK);
}

static int pollable_start(struct fsaio_ctx *ctx, struct fsaio_req *r, struct fsaio__fdinfo fi,
		 struct fsaio__batch *b)
{
	struct iovec tmp[INLINE_IOV];
	int64_t res = FSAIO__STEP_AGAIN;

	if (r->opcode == FSAIO_OP_POLL)
		return start_poll(ctx, r, b);
	if (!fsaio__is_rw(r))
		return fsaio__carry(ctx, r, b, FSAIO__WHY_BLOCKS); /* fsync, fdatasync: a worker */
	/* An offset, which a pipe or socket has no use for, on a fd that
	 * seeks: the cached facts may be those of a closed fd whose number
	 * now names a file (lseek is the cheapest question: ESPIPE on pipes,
	 * sockets and ttys). */
	if (r->offset >= 0 && lseek(r->fd, 0, SEEK_CUR) >= 0 &&
	    fsaio__fd_changed(fsaio__parts(ctx)->fdt, r->fd, fi))
		return FSAIO__RESTART;
	if ((fsaio__parts(ctx)->flags & FSAIO_CTX_KERNEL_RULES) && r->offset > 0 &&
	    (fi.flags & FSAIO__FD_SOCKET)) {
		/* A socket has no position: the kernel's AIO refuses one. */
		fsaio__complete(ctx, r, -ESPIPE, b);
		return 0;
	}
	if (!fsaio__total(r)) {
		/* A zero-length read(2) never reaches the file; the kernel's
		 * AIO calls its read_iter, and the counters of eventfd, timerfd
		 * and signalfd refuse a buffer too small for one value. */
		bool tiny = (fsaio__parts(ctx)->flags & FSAIO_CTX_KERNEL_RULES) && !fsaio__is_write(r) &&
			    (fi.flags & FSAIO__FD_ANON);
		int64_t zres = tiny ? -EINVAL : 0;

		/* sock_write_iter sends even nothing: a closed peer is EPIPE. */
		if ((fsaio__parts(ctx)->flags & FSAIO_CTX_KERNEL_RULES) && fsaio__is_write(r) &&
		    (fi.flags & FSAIO__FD_SOCKET) && send(r->fd, "", 0, MSG_DONTWAIT) < 0)
			zres = -errno;
		fsaio__complete(ctx, r, zres, b);
		return 0;
	}
	if (!(fsaio__parts(ctx)->flags & FSAIO_CTX_NO_INLINE) &&
	    (!fsaio__poller_queued(fsaio__parts(ctx)->poller, r) || nonblocking(ctx, r))) {
		res = step(ctx, r, false, tmp, INLINE_IOV);
		FSAIO__INC(ctx, bytes_inline, r->done_);
		if (res != FSAIO__STEP_AGAIN && res != FSAIO__STEP_POOL) {
			FSAIO__INC(ctx, completed_inline, 1);
			fsaio__complete(ctx, r, res, b);
			return 0;
		}
	}
	/* An O_NONBLOCK fd's answer under the kernel's rules, as read(2)'s
	 * (the caller's RWF_NOWAIT is fsaio__carry's to answer). */
	if (!(r->rw_flags & RWF_NOWAIT) && res == FSAIO__STEP_AGAIN && nonblocking(ctx, r)) {
		fsaio__complete(ctx, r, r->done_ ? (int64_t)r->done_ : -EAGAIN, b);
		return 0;
	}
	return fsaio__carry(ctx, r, b, res == FSAIO__STEP_POOL ? FSAIO__WHY_PIPE_BLOCKS :
			    FSAIO__WHY_POLLABLE);
}

static int pollable_cancel(struct fsaio_ctx *ctx, struct fsaio_req *r)
{
	return fsaio__poller_cancel(fsaio__parts(ctx)->poller, r);
}

const struct fsaio__method fsaio__method_pollable = {
	.start = pollable_start,
	.cancel = pollable_cancel,
};

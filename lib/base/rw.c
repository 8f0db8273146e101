/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: the I/O of one request, for every layer that runs requests: the
 * iovecs of what remains after req->done_, one non-blocking or blocking
 * call on them, a blocking run to the end, and the descriptor a request
 * runs on (fsaio__bind). Nothing here completes a request or knows who
 * carries it.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "nocancel.h"
#include "counters.h"
#include "ioprio_thread.h"
#include "req.h"
#include "rw.h"
#include "usercopy.h"

/* A caller's iovec array that can no longer be read: one entry the kernel
 * refuses by its address (above user space), so that whoever passes it on
 * gets -EFAULT from the kernel, as for the array itself. */
static int unreadable(struct iovec *tmp)
{
	tmp[0].iov_base = (void *)(uintptr_t)-4096;
	tmp[0].iov_len = 1;
	return 1;
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
	/* The caller's array, read in chunks of tmp with the fault-safe copy:
	 * skip the entries done, keep the first one not done and up to cap
	 * after it. */
	*out = tmp;
	for (i = 0, n = 0; i < cnt; i += n) {
		int j;

		n = cnt - i < cap ? cnt - i : cap;
		if (fsaio__copy_user(tmp, iov + i, (size_t)n * sizeof(*tmp)))
			return unreadable(tmp);
		for (j = 0; j < n && skip >= tmp[j].iov_len; j++)
			skip -= tmp[j].iov_len;
		if (j == n)
			continue;
		memmove(tmp, tmp + j, (size_t)(n - j) * sizeof(*tmp));
		i += j;
		n -= j;
		if (cnt - i > n && n < cap) {
			int more = cnt - i - n < cap - n ? cnt - i - n : cap - n;

			if (fsaio__copy_user(tmp + n, iov + i + n, (size_t)more * sizeof(*tmp)))
				return unreadable(tmp);
			n += more;
		}
		tmp[0].iov_base = (char *)tmp[0].iov_base + skip;
		tmp[0].iov_len -= (size_t)skip;
		return n;
	}
	return 0;
}

ssize_t fsaio__rw_once(const struct fsaio_req *r, struct iovec *tmp, int cap, int flags)
{
	const struct iovec *iov;
	int cnt = fsaio__iov_rest(r, tmp, cap, &iov);
	off_t off = fsaio__is_stream(r) ? -1 : (off_t)(r->offset + (int64_t)r->done_);
	ssize_t n;

	/* The raw calls, not glibc's preadv2/pwritev2: those toggle the
	 * thread's async-cancel state around every call, a cost on the hot
	 * path (docs/design-notes.md, "Raw system calls on the inline path"),
	 * and the API calls run with cancellation disabled anyway
	 * (fsaio__nocancel_begin). The offset goes as the kernel's low and
	 * high words, as glibc passes it. */
	n = syscall(fsaio__is_write(r) ? SYS_pwritev2 : SYS_preadv2, fsaio__fd(r), iov, cnt, (long)off,
		    (long)((uint64_t)off >> 32), flags);
	return n < 0 ? -errno : n;
}

/* One blocking call made: by a worker (retries), or here, outside the pool
 * (blocking_inline). */
static void count_call(struct fsaio__counters *st, bool here)
{
	if (here)
		FSAIO__COUNT(st, blocking_inline, 1);
	else
		FSAIO__COUNT(st, retries, 1);
}

/* A blocking loop over the remaining range, by a worker or (here) outside
 * the pool: short counts and EINTR go round
 * again until the range is complete, EOF, or an error. Where a short count
 * is final (fsaio__short_is_final: a pipe, socket, tty...) a read completes
 * with what one call gave, as read(2) does; an O_NONBLOCK stream is waited
 * on with poll(2) rather than failed. */
int64_t fsaio__rw_blocking(struct fsaio__counters *st, struct fsaio_req *r, bool here)
{
	struct iovec tmp[FSAIO__IOV_MAX];
	uint64_t total = fsaio__total(r);
	int flags = r->rw_flags & ~RWF_NOWAIT;
	bool stream = fsaio__is_stream(r);

	while (r->done_ < total) {
		ssize_t n = fsaio__rw_once(r, tmp, FSAIO__IOV_MAX, flags);

		count_call(st, here);
		if (n == -EINTR)
			continue;
		if (n == -EAGAIN && stream) {
			struct pollfd pfd = { fsaio__fd(r), fsaio__is_write(r) ? POLLOUT : POLLIN, 0 };

			poll(&pfd, 1, -1);
			continue;
		}
		if (n < 0)
			return fsaio__result(r, n);
		if (n == 0)
			break;
		r->done_ += (uint64_t)n;
		if (fsaio__short_is_final(r))
			break;
	}
	return (int64_t)r->done_;
}

int fsaio__bind(struct fsaio_req *r)
{
	int fd;

	if (r->run_fd_ & FSAIO__RUN_BOUND)
		return 0;
	fd = fcntl(fsaio__fd(r), F_DUPFD_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	r->run_fd_ = (r->run_fd_ & FSAIO__RUN_HOW) | FSAIO__RUN_BOUND | (uint32_t)fd;
	return 0;
}

void fsaio__unbind(struct fsaio_req *r)
{
	if (r->run_fd_ & FSAIO__RUN_BOUND)
		close(fsaio__fd(r));
	r->run_fd_ = (r->run_fd_ & FSAIO__RUN_HOW) | (uint32_t)r->fd;
}

static int64_t sync_retry(struct fsaio__counters *st, struct fsaio_req *r, bool here)
{
	int ret;

	count_call(st, here);
	ret = r->opcode == FSAIO_OP_FSYNC ? fsync(fsaio__fd(r)) : fdatasync(fsaio__fd(r));
	return ret < 0 ? -errno : 0;
}

/* FSAIO_OP_POLL on a worker: wait for the events with poll(2). */
static int64_t poll_blocking(struct fsaio__counters *st, struct fsaio_req *r, bool here)
{
	struct pollfd pfd = { fsaio__fd(r), (short)r->len, 0 };
	int n;

	do {
		count_call(st, here);
		n = poll(&pfd, 1, -1);
	} while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : (int64_t)(unsigned short)pfd.revents;
}

static int64_t retry(struct fsaio__counters *st, struct fsaio_req *r, bool here)
{
	if (r->opcode == FSAIO_OP_FSYNC || r->opcode == FSAIO_OP_FDSYNC)
		return sync_retry(st, r, here);
	if (r->opcode == FSAIO_OP_POLL)
		return poll_blocking(st, r, here);
	return fsaio__rw_blocking(st, r, here);
}

/* Every method's retry on a worker: what reaches the pool is run there with
 * ordinary blocking calls, whatever the kind of file, by a thread at the
 * request's I/O priority (ioprio_thread.c). */
int64_t fsaio__retry_blocking(struct fsaio__counters *st, struct fsaio_req *r, bool here)
{
	int64_t res;

	fsaio__ioprio_enter(r->ioprio);
	res = retry(st, r, here);
	fsaio__ioprio_leave();
	return res;
}


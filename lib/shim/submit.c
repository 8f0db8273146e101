/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: io_submit and io_cancel, with the kernel's rules.
 *
 * Each iocb is read once (the kernel copies it: a program may reuse or free
 * its iocb after io_submit) and judged in the order of the kernel's
 * io_submit_one() and aio_prep_rw(), so a bad iocb gets the same -errno at
 * submit, and what the kernel only learns by doing the I/O comes in the
 * event. The rules, measured on Linux 6.18:
 *   aio_reserved2 != 0, negative aio_nbytes            EINVAL
 *   no slot left (in flight + unreaped = ring->nr - 1) EAGAIN
 *   bad aio_fildes                                     EBADF
 *   IOCB_FLAG_RESFD: closed fd EBADF, not an eventfd   EINVAL
 *   then aio_key is set to 0 in the caller's iocb
 *   opcode not PREAD/PWRITE/FSYNC/FDSYNC/POLL/PREADV/PWRITEV (NOOP too) EINVAL
 *   IOCB_FLAG_IOPRIO with a bad class or level          EINVAL (RT unprivileged EPERM)
 *   aio_rw_flags: unknown bit EOPNOTSUPP, APPEND|NOAPPEND EINVAL, ATOMIC EOPNOTSUPP
 *   fd not open for reading/writing                    EBADF (the engine checks)
 *   more than 1024 iovecs, a negative iov_len          EINVAL
 *   a buffer beyond the user address space             EFAULT
 *   negative offset, offset + count overflowing        EINVAL
 *   FSYNC/FDSYNC with buf/nbytes/offset/rw_flags, or on a file without fsync EINVAL
 *   POLL with events past 16 bits, offset, nbytes or rw_flags EINVAL
 * aio_flags bits other than RESFD and IOPRIO are ignored, as the kernel
 * ignores them. Lengths are clamped to MAX_RW_COUNT as the kernel clamps.
 *
 * The iocbs of one call are prepared up to the first bad one and handed to
 * the engine in batches; the engine attempts each inline in this thread, so
 * a request whose data is cached has its event in the ring when io_submit
 * returns, as with the kernel.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shim.h"

/* RWF_* as this kernel knows them (include/uapi/linux/fs.h, 6.18). */
#define K_RWF_HIPRI 0x01
#define K_RWF_DSYNC 0x02
#define K_RWF_SYNC 0x04
#define K_RWF_NOWAIT 0x08
#define K_RWF_APPEND 0x10
#define K_RWF_NOAPPEND 0x20
#define K_RWF_ATOMIC 0x40
#define K_RWF_DONTCACHE 0x80
#define K_RWF_NOSIGNAL 0x100
#define K_RWF_SUPPORTED 0x1ff
/* What the engine is given: the kernel drops HIPRI for aio ("no one is
 * going to poll for this I/O"), and DONTCACHE/NOSIGNAL are hints the engine
 * does not take; NOAPPEND only matters on O_APPEND files. */
#define ENGINE_RWF (K_RWF_DSYNC | K_RWF_SYNC | K_RWF_NOWAIT | K_RWF_APPEND)

/* The highest user address on x86-64 with 5-level paging: beyond it, the
 * kernel's access_ok() refuses a buffer at submit. */
#define USER_ADDR_MAX 0x00fffffffffff000ull

#define BATCH 32

static bool user_range_ok(uint64_t addr, uint64_t len)
{
	return addr <= USER_ADDR_MAX && len <= USER_ADDR_MAX - addr;
}

static bool capable_ioprio_rt(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d) < 0)
		return false;
	return (d[0].effective & (1u << CAP_SYS_ADMIN)) || (d[0].effective & (1u << CAP_SYS_NICE));
}

/* ioprio_check_cap(): class in bits 13-15, level in bits 0-2. */
static int check_ioprio(int16_t prio)
{
	int v = prio, class = (v >> 13) & 7, level = v & 7;

	if (v < 0)
		return -EINVAL;
	switch (class) {
	case 1: /* RT */
		return capable_ioprio_rt() ? 0 : -EPERM;
	case 2: /* BE */
	case 3: /* IDLE */
		return 0;
	case 0: /* NONE */
		return level ? -EINVAL : 0;
	default:
		return -EINVAL;
	}
}

/* eventfd_ctx_fdget(): EBADF for no file, EINVAL for a file that is not an
 * eventfd. We keep our own descriptor for the file until the event, as the
 * kernel keeps its reference, so the program may close its own. */
static int take_resfd(uint32_t fd, int *out)
{
	char path[40], link[32];
	struct stat st;
	ssize_t n;
	int dup;

	if ((int)fd < 0)
		return -EBADF;
	dup = fcntl((int)fd, F_DUPFD_CLOEXEC, 0);
	if (dup < 0)
		return errno == EBADF ? -EBADF : -errno;
	/* An eventfd is an anonymous inode: no file type bits. */
	if (fstat(dup, &st) < 0 || (st.st_mode & S_IFMT) != 0)
		goto notefd;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", dup);
	n = readlink(path, link, sizeof(link) - 1);
	if (n >= 0) {
		link[n] = 0;
		if (strcmp(link, "anon_inode:[eventfd]") != 0)
			goto notefd;
	}
	*out = dup;
	return 0;
notefd:
	close(dup);
	return -EINVAL;
}

/* The kernel checks the fd's access mode (EBADF) after the rw flags and
 * before the buffers and offset; the engine checks it at submit, after us.
 * So when we refuse a request for its buffers or offset, the access mode is
 * looked at first, on that error path only. */
static bool fd_mode_wrong(int fd, bool write)
{
	int saved = errno, fl = fcntl(fd, F_GETFL);

	errno = saved;
	if (fl < 0 || (fl & O_PATH))
		return true;
	fl &= O_ACCMODE;
	return write ? fl == O_RDONLY : fl == O_WRONLY;
}

static int prep_rw_buffers(struct shim_slot *s, const struct iocb *cb, bool vec, bool write);

static int prep_rw(struct shim_slot *s, const struct iocb *cb, uint16_t op)
{
	bool vec = op == IOCB_CMD_PREADV || op == IOCB_CMD_PWRITEV;
	bool write = op == IOCB_CMD_PWRITE || op == IOCB_CMD_PWRITEV;
	uint32_t flags = (uint32_t)cb->aio_rw_flags;
	int ret;

	if (cb->aio_flags & IOCB_FLAG_IOPRIO) {
		ret = check_ioprio(cb->aio_reqprio);
		if (ret)
			return ret;
	}
	if (flags & ~(uint32_t)K_RWF_SUPPORTED)
		return -EOPNOTSUPP;
	if ((flags & K_RWF_APPEND) && (flags & K_RWF_NOAPPEND))
		return -EINVAL;
	if (flags & K_RWF_ATOMIC)
		return -EOPNOTSUPP;
	ret = prep_rw_buffers(s, cb, vec, write);
	if (ret && fd_mode_wrong((int)cb->aio_fildes, write))
		return -EBADF;
	if (!ret)
		s->req.rw_flags = (int32_t)(flags & ENGINE_RWF);
	return ret;
}

static int prep_rw_buffers(struct shim_slot *s, const struct iocb *cb, bool vec, bool write)
{
	uint64_t total = 0;

	if (vec) {
		/* __import_iovec takes the count as unsigned int. */
		uint32_t nseg = (uint32_t)cb->aio_nbytes;
		const struct iovec *uv = (const struct iovec *)(uintptr_t)cb->aio_buf;

		if (nseg > SHIM_UIO_MAXIOV)
			return -EINVAL;
		if (nseg && !uv)
			return -EFAULT;
		if (nseg > SHIM_IOV_INLINE) {
			s->iov = malloc(nseg * sizeof(struct iovec));
			if (!s->iov) {
				s->iov = s->iov_inline;
				return -ENOMEM;
			}
		}
		/* Read the vector once, as the kernel copies it: a bad pointer
		 * is EFAULT at submit, and the caller may free it afterwards. */
		if (nseg && shim__user_copy(s->iov, uv, nseg * sizeof(struct iovec), false))
			return -EFAULT;
		for (uint32_t i = 0; i < nseg; i++) {
			uint64_t len = s->iov[i].iov_len;

			if ((int64_t)len < 0)
				return -EINVAL;
			if (!user_range_ok((uintptr_t)s->iov[i].iov_base, len))
				return -EFAULT;
			if (len > SHIM_MAX_RW_COUNT - total)
				len = SHIM_MAX_RW_COUNT - total;
			s->iov[i].iov_len = (size_t)len;
			total += len;
		}
		if (write)
			fsaio_prep_pwritev(&s->req, (int)cb->aio_fildes, s->iov, (int)nseg,
					   cb->aio_offset);
		else
			fsaio_prep_preadv(&s->req, (int)cb->aio_fildes, s->iov, (int)nseg,
					  cb->aio_offset);
	} else {
		total = cb->aio_nbytes;
		if (!user_range_ok(cb->aio_buf, total))
			return -EFAULT;
		if (total > SHIM_MAX_RW_COUNT)
			total = SHIM_MAX_RW_COUNT;
		if (write)
			fsaio_prep_pwrite(&s->req, (int)cb->aio_fildes,
					  (const void *)(uintptr_t)cb->aio_buf, (size_t)total,
					  cb->aio_offset);
		else
			fsaio_prep_pread(&s->req, (int)cb->aio_fildes,
					 (void *)(uintptr_t)cb->aio_buf, (size_t)total,
					 cb->aio_offset);
	}
	/* rw_verify_area() */
	if (cb->aio_offset < 0 || (uint64_t)cb->aio_offset + total > (uint64_t)INT64_MAX)
		return -EINVAL;
	return 0;
}

static int prep_sync(struct shim_slot *s, const struct iocb *cb, bool datasync)
{
	struct stat st;

	if (cb->aio_buf || cb->aio_offset || cb->aio_nbytes || cb->aio_rw_flags)
		return -EINVAL;
	/* Pipes, sockets and most character devices have no ->fsync. */
	if (fstat((int)cb->aio_fildes, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode) && !S_ISBLK(st.st_mode))
		return -EINVAL;
	if (datasync)
		fsaio_prep_fdatasync(&s->req, (int)cb->aio_fildes);
	else
		fsaio_prep_fsync(&s->req, (int)cb->aio_fildes);
	return 0;
}

static int prep_poll(struct shim_slot *s, const struct iocb *cb)
{
	if ((uint16_t)cb->aio_buf != cb->aio_buf)
		return -EINVAL;
	if (cb->aio_offset || cb->aio_nbytes || cb->aio_rw_flags)
		return -EINVAL;
	/* The kernel always reports errors and hang-ups. */
	fsaio_prep_poll(&s->req, (int)cb->aio_fildes,
			(short)(cb->aio_buf | POLLERR | POLLHUP));
	return 0;
}

static bool fd_closed(uint32_t fd)
{
	int saved = errno;
	bool closed = fcntl((int)fd, F_GETFD) < 0 && errno == EBADF;

	errno = saved;
	return closed;
}

/* Judge one iocb and fill a slot for it. On success *out holds the slot. */
static int prepare(struct shim_ctx *c, struct iocb *ucb, struct shim_slot **out)
{
	struct iocb cb;
	struct shim_slot *s;
	int ret, resfd = -1;

	memcpy(&cb, ucb, sizeof(cb));
	if (cb.aio_reserved2)
		return -EINVAL;
	if ((int64_t)cb.aio_nbytes < 0)
		return -EINVAL;
	if (!shim__take_slot(c, &s))
		return -EAGAIN;
	s->resfd = -1;
	s->iov = s->iov_inline;
	if ((int)cb.aio_fildes < 0) {
		ret = -EBADF;
		goto bad;
	}
	if (cb.aio_flags & IOCB_FLAG_RESFD) {
		ret = take_resfd(cb.aio_resfd, &resfd);
		if (ret)
			goto bad;
		s->resfd = resfd;
	}
	ucb->aio_key = 0;

	switch (cb.aio_lio_opcode) {
	case IOCB_CMD_PREAD:
	case IOCB_CMD_PWRITE:
	case IOCB_CMD_PREADV:
	case IOCB_CMD_PWRITEV:
		ret = prep_rw(s, &cb, cb.aio_lio_opcode);
		break;
	case IOCB_CMD_FSYNC:
	case IOCB_CMD_FDSYNC:
		ret = prep_sync(s, &cb, cb.aio_lio_opcode == IOCB_CMD_FDSYNC);
		break;
	case IOCB_CMD_POLL:
		ret = prep_poll(s, &cb);
		break;
	default:
		ret = -EINVAL;
		break;
	}
	if (ret)
		goto bad;
	s->old_key = cb.aio_key;
	s->req.user_data = s;
	s->data = cb.aio_data;
	s->obj = (uint64_t)(uintptr_t)ucb;
	s->opcode = cb.aio_lio_opcode;
	*out = s;
	return 0;
bad:
	/* The kernel looks the fd up first: with a closed fd, whatever else
	 * is wrong, the answer is EBADF and aio_key is left alone. Checked
	 * only here, on the way out, to keep the fast path free of it. */
	if (fd_closed(cb.aio_fildes)) {
		ucb->aio_key = cb.aio_key;
		ret = -EBADF;
	}
	shim__slot_release(c, s);
	return ret;
}

long shim__submit(struct shim_ctx *c, long nr, struct iocb **ios)
{
	struct fsaio_req *reqs[BATCH];
	struct shim_slot *slots[BATCH];
	long done = 0;
	int ret = 0;

	if (nr < 0)
		return -EINVAL;
	if (nr > (long)c->ring->nr)
		nr = c->ring->nr;
	if (nr && !ios)
		return -EFAULT;
	while (done < nr && !ret) {
		unsigned k = 0, off;
		int n;

		while (k < BATCH && done + k < nr) {
			struct iocb *ucb = ios[done + k];

			if (!ucb) {
				ret = -EFAULT;
				break;
			}
			ret = prepare(c, ucb, &slots[k]);
			if (ret)
				break;
			reqs[k] = &slots[k]->req;
			k++;
		}
		if (!k)
			break;
		/* The engine stops at a request it refuses and returns how many
		 * it took; asked again, it answers the refused one's error. */
		for (off = 0; off < k; off += (unsigned)n) {
			n = fsaio_submit(c->engine, reqs + off, k - off);
			if (n <= 0) {
				ret = n ? n : -EAGAIN;
				break;
			}
		}
		/* The kernel stops at the refused iocb: it never looked at the
		 * ones after it, and leaves the refused one's key alone if its
		 * fd was bad. */
		for (unsigned i = off; i < k; i++) {
			struct iocb *ucb = (struct iocb *)(uintptr_t)slots[i]->obj;

			if (i > off || (ret == -EBADF && fd_closed((uint32_t)slots[i]->req.fd)))
				ucb->aio_key = slots[i]->old_key;
			shim__slot_release(c, slots[i]);
		}
		done += off;
	}
	return done ? done : ret;
}

/*
 * io_cancel: only a request that has not started can be taken back. The
 * kernel can cancel only polls (its buffered reads and writes are done by
 * the time io_submit returns); here a read or write still waiting in the
 * engine's queue can be cancelled too. -EINPROGRESS when cancelled (the
 * event follows through the ring), -EINVAL otherwise.
 */
int shim__cancel(struct shim_ctx *c, struct iocb *iocb)
{
	struct shim_slot *s = NULL;
	int ret;

	pthread_mutex_lock(&c->cancel_lock);
	pthread_mutex_lock(&c->lock);
	for (uint32_t i = 0; i < c->used; i++) {
		if (c->slots[i].busy && c->slots[i].obj == (uint64_t)(uintptr_t)iocb) {
			s = &c->slots[i];
			s->pinned = true;
			break;
		}
	}
	pthread_mutex_unlock(&c->lock);
	if (!s) {
		pthread_mutex_unlock(&c->cancel_lock);
		return -EINVAL;
	}
	/* Pinned: the slot may complete meanwhile, but not be reused, so the
	 * engine is never asked to cancel some later request. */
	ret = fsaio_cancel(c->engine, &s->req) == 0 ? -EINPROGRESS : -EINVAL;
	pthread_mutex_lock(&c->lock);
	s->pinned = false;
	if (s->free_on_unpin) {
		s->free_on_unpin = false;
		s->next_free = c->free;
		c->free = s;
	}
	pthread_mutex_unlock(&c->lock);
	pthread_mutex_unlock(&c->cancel_lock);
	return ret;
}

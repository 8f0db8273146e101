/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: judging one iocb at submit, in the kernel's order.
 *
 * The checks follow fs/aio.c (io_submit_one, aio_prep_rw, aio_read,
 * aio_write, aio_fsync, aio_poll) and what they call (kiocb_set_rw_flags,
 * import_ubuf, __import_iovec, rw_verify_area), so a bad iocb gets the
 * kernel's -errno at submit and what the kernel learns only by doing the
 * I/O comes in the event. In that order, measured on Linux 6.18:
 *   aio_reserved2 != 0, negative aio_nbytes            EINVAL  (shim__decode_head)
 *   no slot left                                       EAGAIN  (the caller)
 *   aio_fildes closed or O_PATH                        EBADF   (shim__decode_fd)
 *   IOCB_FLAG_RESFD: closed or O_PATH EBADF, not an eventfd EINVAL
 *   then aio_key is set to 0 in the caller's iocb      (the caller)
 *   opcode not PREAD/PWRITE/FSYNC/FDSYNC/POLL/PREADV/PWRITEV EINVAL (shim__decode_op)
 *   read/write: IOCB_FLAG_IOPRIO bad class or level EINVAL (RT unprivileged
 *     EPERM); aio_rw_flags unknown bit EOPNOTSUPP, APPEND|NOAPPEND EINVAL,
 *     NOWAIT on a file that cannot (tmpfs, directory, named FIFO, most
 *     character devices) EOPNOTSUPP, ATOMIC EOPNOTSUPP, DONTCACHE where the
 *     filesystem has no FOP_DONTCACHE EOPNOTSUPP; fd not open for
 *     reading/writing EBADF; a file without read_iter/write_iter
 *     (directory; eventfd, timerfd, signalfd writes; inotify, epoll) EINVAL;
 *     more than 1024 iovecs or a negative iov_len EINVAL; a buffer beyond
 *     the user address space EFAULT (a single buffer, or a vector of one,
 *     is clamped to MAX_RW_COUNT first; longer vectors after); negative offset or offset +
 *     count overflowing EINVAL
 *   FSYNC/FDSYNC: buf/nbytes/offset/rw_flags set, or a file without fsync EINVAL
 *   POLL: events past 16 bits, offset, nbytes or rw_flags EINVAL; on a file
 *     that cannot wait, events it will never have EINVAL (the engine)
 * The per-file facts (access mode, O_PATH, kind of file) are the engine's,
 * learnt once per fd (FSAIO_CTX_KERNEL_RULES makes it answer as the kernel
 * does); this file asks the kernel itself only on paths that are already
 * errors or rare (RWF_NOWAIT, RWF_DONTCACHE, RESFD, FSYNC), so a good
 * PREAD or PWRITE costs no system call here (a vector is copied in with
 * process_vm_readv, which turns a bad array into EFAULT).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "decode.h"
#include "fdfacts.h"
#include "ioprio.h"
#include "resfd.h"
#include "self.h"
#include "usermem.h"

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
 * going to poll for this I/O"), and NOSIGNAL is a hint the engine does not
 * take (its writes to pipes and sockets made off the submitter raise no
 * SIGPIPE anyway). */
#define ENGINE_RWF (K_RWF_DSYNC | K_RWF_SYNC | K_RWF_NOWAIT | K_RWF_APPEND | K_RWF_NOAPPEND | \
		    K_RWF_DONTCACHE)

/* kiocb_set_rw_flags(): RWF_NOWAIT needs FMODE_NOWAIT, which regular files
 * of the disk filesystems, block devices, pipes, sockets, anonymous inodes
 * and the memory devices have on 6.18, and tmpfs files, directories, FIFOs
 * opened by name and other character devices do not. Asked only of a
 * request that carries RWF_NOWAIT. */
static bool nowait_refused(int fd)
{
	struct statfs sf;
	struct stat st;

	if (fstat(fd, &st) < 0)
		return false;
	switch (st.st_mode & S_IFMT) {
	case S_IFDIR:
		return true;
	case S_IFREG:
		return fstatfs(fd, &sf) == 0 &&
		       (sf.f_type == TMPFS_MAGIC || sf.f_type == HUGETLBFS_MAGIC ||
			sf.f_type == RAMFS_MAGIC);
	case S_IFIFO:
		return fstatfs(fd, &sf) == 0 && sf.f_type != PIPEFS_MAGIC;
	case S_IFCHR:
		return major(st.st_rdev) != 1;
	default:
		return false;
	}
}

/* What aio_read/aio_write find wrong with the fd before the buffers: the
 * access mode (EBADF), then a missing read_iter/write_iter (EINVAL). Only
 * asked when the buffers or offset are refused; otherwise the engine
 * checks both. 0 when the fd is fine. */
static int fd_before_buffers(int fd, bool write)
{
	int saved = errno, fl = fcntl(fd, F_GETFL), ret = 0;
	struct stat st;

	if (fl < 0 || (fl & O_PATH)) {
		ret = -EBADF;
	} else if (write ? (fl & O_ACCMODE) == O_RDONLY : (fl & O_ACCMODE) == O_WRONLY) {
		ret = -EBADF;
	} else if (fstat(fd, &st) == 0) {
		uint32_t no = S_ISDIR(st.st_mode) ? FSAIO__FD_NO_READ_ITER | FSAIO__FD_NO_WRITE_ITER
			    : !(st.st_mode & S_IFMT) ? fsaio__anon_no_iter(fd) : 0;

		if (no & (write ? FSAIO__FD_NO_WRITE_ITER : FSAIO__FD_NO_READ_ITER))
			ret = -EINVAL;
	}
	errno = saved;
	return ret;
}

/* import_ubuf / __import_iovec, then rw_verify_area. */
static int rw_buffers(struct shim_slot *s, const struct iocb *cb, bool vec, bool write)
{
	uint64_t total = 0;

	if (vec) {
		/* __import_iovec takes the count as unsigned int. */
		uint32_t nseg = (uint32_t)cb->aio_nbytes;
		const struct iovec *uv = (const struct iovec *)(uintptr_t)cb->aio_buf;

		if (nseg > SHIM_UIO_MAXIOV)
			return -EINVAL;
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
		/* Every length is checked as the vector is copied, before any
		 * address is. */
		for (uint32_t i = 0; i < nseg; i++)
			if ((int64_t)s->iov[i].iov_len < 0)
				return -EINVAL;
		for (uint32_t i = 0; i < nseg; i++) {
			uint64_t len = s->iov[i].iov_len;

			/* One segment is imported as a single buffer: clamped
			 * before its range is checked; more, after. */
			if (nseg == 1 && len > SHIM_MAX_RW_COUNT)
				len = SHIM_MAX_RW_COUNT;
			if (!shim__user_ok(s->iov[i].iov_base, len))
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
		if (total > SHIM_MAX_RW_COUNT)
			total = SHIM_MAX_RW_COUNT;
		if (!shim__user_ok((const void *)(uintptr_t)cb->aio_buf, total))
			return -EFAULT;
		if (write)
			fsaio_prep_pwrite(&s->req, (int)cb->aio_fildes,
					  (const void *)(uintptr_t)cb->aio_buf, (size_t)total,
					  cb->aio_offset);
		else
			fsaio_prep_pread(&s->req, (int)cb->aio_fildes,
					 (void *)(uintptr_t)cb->aio_buf, (size_t)total,
					 cb->aio_offset);
	}
	if (cb->aio_offset < 0 || (uint64_t)cb->aio_offset + total > (uint64_t)INT64_MAX)
		return -EINVAL;
	return 0;
}

static int decode_rw(struct shim_slot *s, const struct iocb *cb, uint16_t op)
{
	bool vec = op == IOCB_CMD_PREADV || op == IOCB_CMD_PWRITEV;
	bool write = op == IOCB_CMD_PWRITE || op == IOCB_CMD_PWRITEV;
	uint32_t flags = (uint32_t)cb->aio_rw_flags;
	int ret;

	/* ioprio_check_cap(), as the engine checks fsaio_req.ioprio. */
	if (cb->aio_flags & IOCB_FLAG_IOPRIO) {
		ret = fsaio__ioprio_check((uint16_t)cb->aio_reqprio);
		if (ret)
			return ret;
	}
	if (flags) {
		if (flags & ~(uint32_t)K_RWF_SUPPORTED)
			return -EOPNOTSUPP;
		if ((flags & K_RWF_APPEND) && (flags & K_RWF_NOAPPEND))
			return -EINVAL;
		if ((flags & K_RWF_NOWAIT) && nowait_refused((int)cb->aio_fildes))
			return -EOPNOTSUPP;
		if (flags & K_RWF_ATOMIC)
			return -EOPNOTSUPP;
		if ((flags & K_RWF_DONTCACHE) && fsaio__dontcache_refused((int)cb->aio_fildes))
			return -EOPNOTSUPP;
	}
	ret = rw_buffers(s, cb, vec, write);
	if (ret) {
		int fd_ret = fd_before_buffers((int)cb->aio_fildes, write);

		return fd_ret ? fd_ret : ret;
	}
	s->req.rw_flags = (int32_t)(flags & ENGINE_RWF);
	if (cb->aio_flags & IOCB_FLAG_IOPRIO)
		s->req.ioprio = (uint16_t)cb->aio_reqprio;
	return 0;
}

static int decode_sync(struct shim_slot *s, const struct iocb *cb, bool datasync)
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

static int decode_poll(struct shim_slot *s, const struct iocb *cb)
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

int shim__decode_head(const struct iocb *cb)
{
	if (cb->aio_reserved2)
		return -EINVAL;
	if ((int64_t)cb->aio_nbytes < 0)
		return -EINVAL;
	return 0;
}

int shim__decode_fd(struct shim_ctx *c, struct shim_slot *s, const struct iocb *cb)
{
	int ret, resfd = -1;

	s->resfd = -1;
	s->resfd_e = NULL;
	s->iov = s->iov_inline;
	/* A closed or O_PATH fd is found on the way out (shim__decode_fail)
	 * or by the engine, so that a good one costs nothing here. */
	if ((int)cb->aio_fildes < 0)
		return -EBADF;
	if (cb->aio_flags & IOCB_FLAG_RESFD) {
		ret = shim__resfd_take(c, cb->aio_resfd, &resfd, &s->resfd_e);
		if (ret)
			return ret;
		s->resfd = resfd;
	}
	return 0;
}

int shim__decode_op(struct shim_slot *s, const struct iocb *cb)
{
	switch (cb->aio_lio_opcode) {
	case IOCB_CMD_PREAD:
	case IOCB_CMD_PWRITE:
	case IOCB_CMD_PREADV:
	case IOCB_CMD_PWRITEV:
		return decode_rw(s, cb, cb->aio_lio_opcode);
	case IOCB_CMD_FSYNC:
	case IOCB_CMD_FDSYNC:
		return decode_sync(s, cb, cb->aio_lio_opcode == IOCB_CMD_FDSYNC);
	case IOCB_CMD_POLL:
		return decode_poll(s, cb);
	default:
		return -EINVAL;
	}
}

/* The kernel looks the fd up first: with a closed or O_PATH fd, whatever
 * else is wrong, the answer is EBADF and aio_key is left alone (*fd_bad).
 * Asked only on the way out, to keep the fast path free of it. */
int shim__decode_fail(const struct iocb *cb, int ret, bool *fd_bad)
{
	*fd_bad = (int)cb->aio_fildes < 0 || shim__fd_unusable((int)cb->aio_fildes);
	return *fd_bad ? -EBADF : ret;
}

void shim__decode_undo(struct shim_slot *s)
{
	if (s->resfd >= 0)
		shim__resfd_drop(s->resfd, s->resfd_e);
	s->resfd = -1;
	s->resfd_e = NULL;
	if (s->iov != s->iov_inline)
		free(s->iov);
	s->iov = s->iov_inline;
}

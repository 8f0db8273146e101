/* SPDX-License-Identifier: MIT */
/*
 * Where the kernel's AIO answers from the kind of file: sockets, O_NONBLOCK
 * pipes, O_PATH fds, eventfds, files without RWF_NOWAIT, poll on regular
 * files, the user address limit and the length clamp. Every expectation is
 * the kernel's own, and holds on both modes.
 */
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <unistd.h>

#include "t_aio.h"

#define T_RWF_NOWAIT 0x08

static char buf[8192];

T_AIO_FIXTURE(65536, 9)

TestSuite(rules, .init = setup, .fini = teardown);

static void refused(struct iocb *cb, int err)
{
	struct io_event ev;
	struct timespec zero = { 0, 0 };

	T_EXPECT(t_submit1(ctx, cb), err);
	T_EXPECT(io_getevents(ctx, 0, 1, &ev, &zero), 0);
}

/* Accepted, and its event is there when io_submit returns. */
static long at_once(struct iocb *cb)
{
	struct io_event ev;
	struct timespec ts = { T_WAIT_SEC, 0 };

	T_EXPECT(t_submit1(ctx, cb), 1);
	T_EXPECT(io_getevents(ctx, 1, 1, &ev, &ts), 1);
	cr_assert_eq((void *)ev.obj, (void *)cb);
	return (long)ev.res;
}

/* sock_read_iter/sock_write_iter: a position other than 0 is ESPIPE, in
 * the event; no data moves. */
Test(rules, socket_offset_is_espipe)
{
	int sv[2];
	struct iocb cb;
	char got[8];

	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	cr_assert_eq(write(sv[1], "abcdef", 6), 6);
	io_prep_pread(&cb, sv[0], buf, 6, 3);
	cr_assert_eq(at_once(&cb), -ESPIPE);
	io_prep_pwrite(&cb, sv[0], "xyz", 3, 4096);
	cr_assert_eq(at_once(&cb), -ESPIPE);
	/* The bytes are still there for offset 0; a negative one is refused. */
	io_prep_pread(&cb, sv[0], buf, 16, -1);
	refused(&cb, -EINVAL);
	io_prep_pread(&cb, sv[0], got, sizeof(got), 0);
	cr_assert_eq(t_do(ctx, &cb), 6);
	cr_assert_eq(memcmp(got, "abcdef", 6), 0);
	t_close_pair(sv);
}

/* pipe_read on an O_NONBLOCK pipe with nothing in it: EAGAIN at once. */
Test(rules, nonblocking_empty_pipe_is_eagain)
{
	int p[2];
	struct iocb cb;

	cr_assert_eq(pipe2(p, O_NONBLOCK | O_CLOEXEC), 0);
	io_prep_pread(&cb, p[0], buf, 16, 0);
	cr_assert_eq(at_once(&cb), -EAGAIN);
	/* With data: what is there. */
	cr_assert_eq(write(p[1], "hello", 5), 5);
	io_prep_pread(&cb, p[0], buf, 16, 0);
	cr_assert_eq(at_once(&cb), 5);
	cr_assert_eq(memcmp(buf, "hello", 5), 0);
	/* A full O_NONBLOCK pipe: EAGAIN for a write that cannot start. */
	cr_assert_eq(fcntl(p[1], F_SETPIPE_SZ, 4096), 4096);
	memset(buf, 'p', sizeof(buf));
	cr_assert_eq(write(p[1], buf, 4096), 4096);
	io_prep_pwrite(&cb, p[1], buf, 16, 0);
	cr_assert_eq(at_once(&cb), -EAGAIN);
	t_close_pair(p);
}

/* access_ok() with the limit of this machine's paging: a range ending at
 * the limit is the caller's (its fault comes in the event), one past it is
 * EFAULT at submit. */
Test(rules, user_address_limit)
{
	uint64_t limit = 0x7ffffffff000ull;
	struct iocb cb;
	/* Raw calls: the kernel's answer, not a sanitizer's (TSan refuses a
	 * mapping outside its application range). */
	void *p = (void *)syscall(SYS_mmap, (void *)(uintptr_t)0x800000000000ull, 4096, PROT_NONE,
				  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);

	if (p != MAP_FAILED) {
		syscall(SYS_munmap, p, 4096);
		limit = 0x00fffffffffff000ull;
	}
	io_prep_pread(&cb, fd, (void *)(uintptr_t)limit, 0, 0);
	cr_assert_eq(at_once(&cb), 0);
	io_prep_pread(&cb, fd, (void *)(uintptr_t)(limit + 1), 0, 0);
	refused(&cb, -EFAULT);
	io_prep_pread(&cb, fd, (void *)(uintptr_t)(limit - 4096), 4097, 0);
	refused(&cb, -EFAULT);
	/* Between the 4-level and the 5-level limits. */
	io_prep_pread(&cb, fd, (void *)(uintptr_t)0x800000000000ull, 16, 0);
	if (limit == 0x7ffffffff000ull)
		refused(&cb, -EFAULT);
	else
		cr_assert_eq(at_once(&cb), -EFAULT);
	io_prep_pread(&cb, fd, (void *)(uintptr_t)0x00fffffffffff000ull, 1, 0);
	refused(&cb, -EFAULT);
}

/* import_ubuf() clamps to MAX_RW_COUNT before it checks the range: a huge
 * length on a good buffer reads what the file has. An iovec's range is
 * checked with its whole length. */
Test(rules, huge_length_is_clamped_first)
{
	struct iovec iov[2] = { { buf, 1ull << 62 }, { buf, 16 } };
	struct iocb cb;

	io_prep_pread(&cb, fd, buf, 1ull << 62, 65536 - 100);
	cr_assert_eq(at_once(&cb), 100);
	t_check(buf, 100, 65536 - 100, 9);
	/* One segment is a single buffer: clamped too. */
	io_prep_preadv(&cb, fd, iov, 1, 65536 - 50);
	cr_assert_eq(at_once(&cb), 50);
	io_prep_preadv(&cb, fd, iov, 2, 0);
	refused(&cb, -EFAULT);
	/* Lengths are all checked before any address. */
	iov[0] = (struct iovec){ (void *)(uintptr_t)0xffff800000000000ull, 16 };
	iov[1] = (struct iovec){ buf, (size_t)-1 };
	io_prep_preadv(&cb, fd, iov, 2, 0);
	refused(&cb, -EINVAL);
}

/* fget() refuses O_PATH files: EBADF for every opcode, before the resfd
 * and the opcode are looked at, and aio_key is not written. */
Test(rules, o_path_is_ebadf)
{
	char path[4096];
	int pfd, efd = eventfd(0, EFD_CLOEXEC);
	struct iocb cb;

	close(t_file_path(4096, 3, path, sizeof(path)));
	pfd = open(path, O_PATH | O_CLOEXEC);
	cr_assert_geq(pfd, 0);
	for (short op = 0; op < 10; op++) {
		io_prep_pread(&cb, pfd, buf, 16, 0);
		cb.aio_lio_opcode = op;
		if (op == IO_CMD_FSYNC || op == IO_CMD_FDSYNC || op == 5 /* POLL */) {
			cb.u.c.buf = op == 5 ? (void *)(uintptr_t)POLLIN : NULL;
			cb.u.c.nbytes = 0;
			cb.u.c.offset = 0;
		}
		cb.key = 55;
		refused(&cb, -EBADF);
		cr_assert_eq(cb.key, 55, "opcode %d wrote aio_key", op);
	}
	io_prep_pread(&cb, pfd, buf, 16, 0);
	cb.aio_rw_flags = 1 << 20;
	cb.key = 55;
	refused(&cb, -EBADF);
	cr_assert_eq(cb.key, 55);
	io_prep_pread(&cb, pfd, buf, 16, 0);
	io_set_eventfd(&cb, efd);
	refused(&cb, -EBADF);
	/* An O_PATH resfd is no file to the kernel either. */
	io_prep_pread(&cb, fd, buf, 16, 0);
	io_set_eventfd(&cb, pfd);
	cb.key = 55;
	refused(&cb, -EBADF);
	cr_assert_eq(cb.key, 55);
	close(pfd);
	close(efd);
}

/* eventfd has read_iter and no write_iter: a write is EINVAL at submit; a
 * short read is eventfd_read's EINVAL, in the event. */
Test(rules, eventfd_read_and_write)
{
	int efd = eventfd(5, EFD_CLOEXEC | EFD_NONBLOCK);
	uint64_t v = 0;
	struct iocb cb;

	io_prep_pwrite(&cb, efd, &v, sizeof(v), 0);
	refused(&cb, -EINVAL);
	io_prep_pread(&cb, efd, &v, 0, 0);
	cr_assert_eq(at_once(&cb), -EINVAL);
	io_prep_pread(&cb, efd, &v, 4, 0);
	cr_assert_eq(at_once(&cb), -EINVAL);
	io_prep_pread(&cb, efd, &v, sizeof(v), 0);
	cr_assert_eq(at_once(&cb), 8);
	cr_assert_eq(v, 5);
	/* timerfd: the same, no write_iter. */
	int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);

	io_prep_pwrite(&cb, tfd, &v, sizeof(v), 0);
	refused(&cb, -EINVAL);
	close(tfd);
	close(efd);
}

/* A directory has no read_iter: EINVAL at submit, even before its buffer. */
Test(rules, directory_read_is_einval)
{
	int dfd = open(t_dir(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct iocb cb;

	io_prep_pread(&cb, dfd, buf, 16, 0);
	refused(&cb, -EINVAL);
	io_prep_pread(&cb, dfd, (void *)-1, 16, 0);
	refused(&cb, -EINVAL);
	io_prep_pwrite(&cb, dfd, buf, 16, 0);
	refused(&cb, -EBADF);
	close(dfd);
}

/* kiocb_set_rw_flags(): RWF_NOWAIT on a file without FMODE_NOWAIT. */
Test(rules, nowait_needs_fmode_nowait)
{
	int mfd = memfd_create("t_nowait", MFD_CLOEXEC);
	int dfd = open(t_dir(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct iovec iov = { buf, 16 };
	struct iocb cb;

	cr_assert_eq(write(mfd, "0123456789abcdef", 16), 16);
	io_prep_preadv2(&cb, mfd, &iov, 1, 0, T_RWF_NOWAIT);
	refused(&cb, -EOPNOTSUPP);
	io_prep_pwritev2(&cb, mfd, &iov, 1, 0, T_RWF_NOWAIT);
	refused(&cb, -EOPNOTSUPP);
	io_prep_preadv2(&cb, dfd, &iov, 1, 0, T_RWF_NOWAIT);
	refused(&cb, -EOPNOTSUPP);
	/* Without the flag the memfd reads; the regular file takes it. */
	io_prep_preadv2(&cb, mfd, &iov, 1, 0, 0);
	cr_assert_eq(at_once(&cb), 16);
	io_prep_preadv2(&cb, fd, &iov, 1, 0, T_RWF_NOWAIT);
	cr_assert_eq(at_once(&cb), 16);
	close(mfd);
	close(dfd);
}

/* aio_poll on a file without ->poll: ready for IN/OUT at once, and EINVAL
 * at submit for events it will never have. */
Test(rules, poll_on_regular_file)
{
	int dfd = open(t_dir(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct iocb cb;

	io_prep_poll(&cb, fd, POLLPRI);
	refused(&cb, -EINVAL);
	io_prep_poll(&cb, fd, 0);
	refused(&cb, -EINVAL);
	io_prep_poll(&cb, dfd, POLLPRI);
	refused(&cb, -EINVAL);
	io_prep_poll(&cb, fd, POLLIN | POLLPRI);
	cr_assert_eq(at_once(&cb), POLLIN);
	io_prep_poll(&cb, fd, POLLOUT);
	cr_assert_eq(at_once(&cb), POLLOUT);
	close(dfd);
}

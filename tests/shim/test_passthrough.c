/* SPDX-License-Identifier: MIT */
/*
 * Every number but the io_* ones goes through the drop-in's syscall() to
 * the kernel unchanged: ordinary system calls made with syscall(2) give
 * the same results and errno with the drop-in (shim-sys-passthrough) as
 * with glibc's syscall() (kernel-sys-passthrough), all six arguments
 * included. Each expectation is the kernel's documented answer, checked
 * in both modes; errno is left alone on success and set on failure.
 */
#include "t_aio.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

TestSuite(passthrough, .init = t_setup, .fini = t_teardown);

#define SENTINEL 4242

/* syscall(2) with errno set to a sentinel first: the result and errno
 * after it (SENTINEL when untouched). */
#define SC(err, ...) __extension__({					\
	errno = SENTINEL;						\
	long r_ = syscall(__VA_ARGS__);					\
	*(err) = errno;							\
	r_;								\
})

static void ok(long got, int err, long want)
{
	cr_assert_eq(got, want, "got %ld, want %ld", got, want);
	cr_assert_eq(err, SENTINEL, "errno changed to %d on success", err);
}

static void fails(long got, int err, int want)
{
	cr_assert_eq(got, -1, "got %ld, want -1", got);
	cr_assert_eq(err, want, "errno %d (%s), want %d (%s)", err, strerror(err), want,
		     strerror(want));
}

Test(passthrough, ids)
{
	int err;
	long r;

	r = SC(&err, SYS_getpid);
	ok(r, err, getpid());
	r = SC(&err, SYS_gettid);
	ok(r, err, gettid());
	r = SC(&err, SYS_getppid);
	ok(r, err, getppid());
}

/* Numbers no kernel has: ENOSYS, whatever the arguments. */
Test(passthrough, invalid_numbers)
{
	static const long nrs[] = { 1000, 4095, 99999, -1, -2, 0x7fffffffL, 0x40000000L + 1000 };
	int err;

	for (size_t i = 0; i < sizeof(nrs) / sizeof(nrs[0]); i++) {
		long r = SC(&err, nrs[i], 1, 2, 3, 4, 5, 6);

		fails(r, err, ENOSYS);
	}
}

Test(passthrough, pipe_read_write)
{
	int p[2], err;
	char buf[16] = { 0 };
	long r;

	r = SC(&err, SYS_pipe2, p, O_CLOEXEC);
	ok(r, err, 0);
	r = SC(&err, SYS_write, p[1], "hello", 5L);
	ok(r, err, 5);
	r = SC(&err, SYS_read, p[0], buf, sizeof(buf));
	ok(r, err, 5);
	cr_assert_str_eq(buf, "hello");
	r = SC(&err, SYS_fcntl, p[0], F_SETFL, (long)O_NONBLOCK);
	ok(r, err, 0);
	r = SC(&err, SYS_read, p[0], buf, sizeof(buf));
	fails(r, err, EAGAIN);
	r = SC(&err, SYS_write, p[1], (void *)-1L, 5L);
	fails(r, err, EFAULT);
	t_close_pair(p);
	r = SC(&err, SYS_read, p[0], buf, sizeof(buf));
	fails(r, err, EBADF);
}

Test(passthrough, futex)
{
	static _Atomic uint32_t word = 7;
	struct timespec zero = { 0, 0 };
	int err;
	long r;

	/* Nobody waits: no one woken. */
	r = SC(&err, SYS_futex, &word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	ok(r, err, 0);
	/* The word is not what the waiter expects. */
	r = SC(&err, SYS_futex, &word, FUTEX_WAIT_PRIVATE, 8, NULL, NULL, 0);
	fails(r, err, EAGAIN);
	r = SC(&err, SYS_futex, &word, FUTEX_WAIT_PRIVATE, 7, &zero, NULL, 0);
	fails(r, err, ETIMEDOUT);
	/* FUTEX_WAIT_BITSET takes its mask in the sixth argument: 0 is EINVAL. */
	r = SC(&err, SYS_futex, &word, FUTEX_WAIT_BITSET_PRIVATE, 7, &zero, NULL, 0);
	fails(r, err, EINVAL);
	r = SC(&err, SYS_futex, &word, FUTEX_WAIT_BITSET_PRIVATE, 7, &zero, NULL, 1);
	fails(r, err, ETIMEDOUT);
	r = SC(&err, SYS_futex, (void *)1L, FUTEX_WAIT_PRIVATE, 7, NULL, NULL, 0);
	fails(r, err, EINVAL);
	r = SC(&err, SYS_futex, (void *)4096L, FUTEX_WAIT_PRIVATE, 7, NULL, NULL, 0);
	fails(r, err, EFAULT);
}

/* mmap's sixth argument is the file offset: the page mapped is the one
 * asked for. Every argument is passed as a long, as syscall(2) reads them:
 * an int passed to a variadic function may carry garbage in its upper half
 * (clang at -O3 leaves it there), and mmap reads all six as longs. */
Test(passthrough, mmap_six_arguments)
{
	int fd = t_file(4 * 4096, 41), err;
	unsigned char *m;
	long r;

	m = (void *)SC(&err, SYS_mmap, NULL, 4096L, (long)PROT_READ, (long)MAP_SHARED, (long)fd, 2 * 4096L);
	cr_assert_neq((void *)m, MAP_FAILED);
	cr_assert_eq(err, SENTINEL);
	t_check(m, 4096, 2 * 4096, 41);
	r = SC(&err, SYS_munmap, m, 4096L);
	ok(r, err, 0);
	/* An offset that is not page aligned. */
	r = SC(&err, SYS_mmap, NULL, 4096L, (long)PROT_READ, (long)MAP_SHARED, (long)fd, 100L);
	fails(r, err, EINVAL);
	r = SC(&err, SYS_mmap, NULL, 4096L, (long)PROT_READ, (long)MAP_SHARED, -1L, 0L);
	fails(r, err, EBADF);
	close(fd);
}

/* A result wider than 32 bits comes back whole; a negative offset is an
 * error. */
Test(passthrough, wide_results)
{
	int fd = t_file(4096, 42), err;
	long r;

	r = SC(&err, SYS_lseek, fd, 1L << 40, SEEK_SET);
	ok(r, err, 1L << 40);
	r = SC(&err, SYS_lseek, fd, -1L, SEEK_SET);
	fails(r, err, EINVAL);
	close(fd);
}

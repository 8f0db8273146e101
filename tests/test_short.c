/* SPDX-License-Identifier: MIT */
/*
 * The short-read rule: a request's result is what one blocking read(2) or
 * readv(2) of the same range would return, on every kind of file the engine
 * knows. Each test sets up two files in the same state (or reads a file
 * whose content does not change), reads one with the engine and the other
 * with the blocking call, and asserts the same count and the same bytes.
 * Where a short count could come from the kernel stopping a RWF_NOWAIT call
 * early (the memory devices under CPU pressure, a partly cached file), the
 * test makes that pressure itself: hog threads spin in the test process.
 */
#include "t_helpers.h"
#include "t_short.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <linux/loop.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <unistd.h>

#define KiB 1024u
#define MiB (1024u * 1024u)

TestSuite(short, .init = t_setup, .fini = t_teardown, .timeout = 120);

/* ------------------------------------------------------------------ helpers */

/* len bytes as iovecs of about equal parts (the last takes the rest). */
static int split(struct iovec *iov, int parts, void *buf, size_t len)
{
	size_t each = len / (size_t)parts;

	for (int i = 0; i < parts; i++) {
		iov[i].iov_base = (char *)buf + (size_t)i * each;
		iov[i].iov_len = i == parts - 1 ? len - (size_t)i * each : each;
	}
	return parts;
}

/* The engine's read of [off, off+len) of fd into buf (vectored as parts
 * iovecs when parts > 1): the event's res. */
static int64_t engine_read(fsaio_ctx_t *ctx, int fd, char *buf, size_t len, int64_t off, int parts)
{
	struct iovec iov[8];
	struct fsaio_req r;
	struct fsaio_event ev;

	memset(buf, T_SHORT_FILL, len);
	if (parts > 1)
		fsaio_prep_preadv(&r, fd, iov, split(iov, parts, buf, len), off);
	else
		fsaio_prep_pread(&r, fd, buf, len, off);
	ev = t_run1(ctx, &r);
	return ev.res;
}

/* The blocking call of the same request: pread/preadv on a file with a
 * position to honour, read/readv elsewhere. */
static int64_t blocking_read(int fd, char *buf, size_t len, int64_t off, int parts)
{
	struct iovec iov[8];
	ssize_t n;

	if (off < 0)
		return t_blocking_read(fd, buf, len, parts);
	memset(buf, T_SHORT_FILL, len);
	n = parts > 1 ? preadv(fd, iov, split(iov, parts, buf, len), off) : pread(fd, buf, len, off);
	return n < 0 ? -errno : n;
}

/* t_read_fn of the engine: arg is the context. */
static int64_t engine_read_fn(void *arg, int fd, char *buf, size_t len, int parts)
{
	return engine_read(arg, fd, buf, len, -1, parts);
}

/* Read with the engine from efd and with the blocking call from bfd (two
 * files in the same state, or the same file of fixed content): assert the
 * same result and the same bytes. */
static void same_as_blocking(fsaio_ctx_t *ctx, int efd, int bfd, size_t len, int64_t off,
			     int parts, const char *what)
{
	char *e = malloc(len), *k = malloc(len);
	int64_t got, want;

	cr_assert(e && k);
	got = engine_read(ctx, efd, e, len, off, parts);
	want = blocking_read(bfd, k, len, off, parts);
	cr_assert_eq(got, want, "%s: %zu bytes at %lld in %d iovec(s): the engine read %lld, "
		     "the blocking call %lld", what, len, (long long)off, parts,
		     (long long)got, (long long)want);
	if (want > 0)
		cr_assert_eq(memcmp(e, k, (size_t)want), 0, "%s: the bytes differ", what);
	free(e);
	free(k);
}

static void write_all(int fd, const void *buf, size_t len)
{
	cr_assert_eq(write(fd, buf, len), (ssize_t)len);
}

/* Wait until fd is readable (the data written to its peer has arrived). */
static void wait_readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	cr_assert_eq(poll(&p, 1, T_EVENT_TIMEOUT_MS), 1);
}

/* ------------------------------------------------------------------ files */

/* Only the first MiB cached: the RWF_NOWAIT attempt stops there; the rest
 * and the EOF inside the range come from the engine carrying on. */
Test(short, regular_file_partly_cached)
{
	fsaio_ctx_t *ctx = t_ctx(NULL);
	size_t size = 4 * MiB + 1000;
	int fd = t_tmpfile(size, 7);

	for (int parts = 1; parts <= 4; parts += 3) {
		t_make_cold(fd);
		t_make_hot(fd, 0, MiB);
		same_as_blocking(ctx, fd, fd, 8 * MiB, 0, parts, "regular file");
		same_as_blocking(ctx, fd, fd, 2 * MiB, 3 * MiB, parts, "regular file tail");
	}
	t_ctx_destroy(ctx);
	close(fd);
}

/* A loop device over a test file, detached when its last fd is closed;
 * -1 when this process may not make one. */
static int loop_device(int backing)
{
	for (int tries = 0; tries < 8; tries++) {
		int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC), n, fd;
		struct loop_config cfg = { .fd = (uint32_t)backing };
		char path[32];

		if (ctl < 0)
			return -1;
		n = ioctl(ctl, LOOP_CTL_GET_FREE);
		close(ctl);
		if (n < 0)
			return -1;
		snprintf(path, sizeof(path), "/dev/loop%d", n);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return -1;
		cfg.info.lo_flags = LO_FLAGS_AUTOCLEAR | LO_FLAGS_READ_ONLY;
		if (ioctl(fd, LOOP_CONFIGURE, &cfg) == 0)
			return fd;
		close(fd);
		if (errno != EBUSY)     /* else another process took it first */
			return -1;
	}
	return -1;
}

/* A block device's st_size is 0: a read across its end, cold, must still
 * be carried to the device's end and no further. */
Test(short, block_device)
{
	fsaio_ctx_t *ctx = t_ctx(NULL);
	int backing = t_tmpfile(2 * MiB, 11), dev;
	uint64_t size = 0;

	dev = loop_device(backing);
	if (dev < 0)
		cr_skip_test("no loop device for this process\n");
	cr_assert_eq(ioctl(dev, BLKGETSIZE64, &size), 0);
	cr_assert_eq(size, 2 * MiB);
	for (int parts = 1; parts <= 4; parts += 3) {
		cr_assert_eq(posix_fadvise(dev, 0, 0, POSIX_FADV_DONTNEED), 0);
		same_as_blocking(ctx, dev, dev, MiB, 0, parts, "block device");
		cr_assert_eq(posix_fadvise(dev, 0, 0, POSIX_FADV_DONTNEED), 0);
		same_as_blocking(ctx, dev, dev, 4 * MiB, MiB + 4096, parts, "block device end");
		same_as_blocking(ctx, dev, dev, MiB, 2 * MiB, parts, "block device past its end");
	}
	t_ctx_destroy(ctx);
	close(dev);
	close(backing);
}

/* ------------------------------------------------------------------ devices */

/* Memory devices at 1 MiB and 16 MiB, plain and vectored, with hog threads
 * spinning: the full count read(2) gives, however often the kernel stops a
 * RWF_NOWAIT call. */
Test(short, dev_zero_under_cpu_pressure)
{
	fsaio_ctx_t *ctx = t_ctx(NULL);

	t_short_memory_device("/dev/zero", true, 4, 4, engine_read_fn, ctx);
	t_ctx_destroy(ctx);
}

Test(short, dev_urandom_under_cpu_pressure)
{
	fsaio_ctx_t *ctx = t_ctx(NULL);

	t_short_memory_device("/dev/urandom", false, 2, 4, engine_read_fn, ctx);
	t_ctx_destroy(ctx);
}

Test(short, dev_null_is_eof)
{
	fsaio_ctx_t *ctx = t_ctx(NULL);
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

	cr_assert_geq(fd, 0);
	same_as_blocking(ctx, fd, fd, MiB, 0, 1, "/dev/null");
	same_as_blocking(ctx, fd, fd, MiB, -1, 4, "/dev/null");
	t_ctx_destroy(ctx);
	close(fd);
}

/* ------------------------------------------------------------------ what is ready */

/* A pipe or socket with less than asked ready: one read(2) returns what is
 * there, and so does the engine. */
Test(short, pipe_returns_what_is_ready)
{
	fsaio_ctx_t *ctx = t_ctx(NULL);

	t_short_twin_streams(-1, 4, engine_read_fn, ctx);
	t_ctx_destroy(ctx);
}

Test(short, socket_returns_what_is_ready)
{
	fsaio_ctx_t *ctx = t_ctx(NULL);

	t_short_twin_streams(AF_UNIX, 4, engine_read_fn, ctx);
	t_ctx_destroy(ctx);
}

/* A pty in canonical mode: one read(2) returns one line. */
static int pty_with_lines(int *slave)
{
	int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);

	if (m < 0)
		cr_skip_test("no pty: %s\n", strerror(errno));
	cr_assert_eq(grantpt(m), 0);
	cr_assert_eq(unlockpt(m), 0);
	*slave = open(ptsname(m), O_RDWR | O_NOCTTY | O_CLOEXEC);
	cr_assert_geq(*slave, 0);
	write_all(m, "first line\nsecond\n", 18);
	wait_readable(*slave);
	return m;
}

Test(short, tty_returns_one_line)
{
	fsaio_ctx_t *ctx = t_ctx(NULL);

	for (int parts = 1; parts <= 4; parts += 3) {
		int s1, s2, m1 = pty_with_lines(&s1), m2 = pty_with_lines(&s2);

		same_as_blocking(ctx, s1, s2, 4 * KiB, -1, parts, "tty");
		close(s1);
		close(s2);
		close(m1);
		close(m2);
	}
	t_ctx_destroy(ctx);
}

/* A counter answers 8 bytes to a larger read, as read(2) does. */
Test(short, eventfd_gives_its_counter)
{
	fsaio_ctx_t *ctx = t_ctx(NULL);
	int a = eventfd(5, EFD_CLOEXEC), b = eventfd(5, EFD_CLOEXEC);

	cr_assert(a >= 0 && b >= 0);
	same_as_blocking(ctx, a, b, 64, -1, 1, "eventfd");
	close(a);
	close(b);
	t_ctx_destroy(ctx);
}

Test(short, timerfd_gives_its_expirations)
{
	fsaio_ctx_t *ctx = t_ctx(NULL);
	struct itimerspec once = { .it_value = { .tv_nsec = 1 } };
	int a = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	int b = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);

	cr_assert(a >= 0 && b >= 0);
	cr_assert_eq(timerfd_settime(a, 0, &once, NULL), 0);
	cr_assert_eq(timerfd_settime(b, 0, &once, NULL), 0);
	wait_readable(a);
	wait_readable(b);
	same_as_blocking(ctx, a, b, 64, -1, 1, "timerfd");
	close(a);
	close(b);
	t_ctx_destroy(ctx);
}

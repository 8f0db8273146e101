/* SPDX-License-Identifier: MIT */
/*
 * A buffered write to a regular file is complete when io_submit returns,
 * as with the kernel's AIO: io_getevents with min_nr 0 and a zero timeout
 * finds its event, and the data is in the file. Each kind of write: a
 * sub-page one into a page that is not cached, O_APPEND, 1 MiB, one cut
 * short by RLIMIT_FSIZE, O_DSYNC.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "t_aio.h"

static io_context_t ctx;

static void setup(void)
{
	t_setup();
	ctx = t_ctx(32);
}

static void teardown(void)
{
	T_EXPECT(io_destroy(ctx), 0);
	t_teardown();
}

TestSuite(inline_writes, .init = setup, .fini = teardown);

/* Submit, then poll once: the event must already be there. */
static long done_at_submit(struct iocb *cb)
{
	struct io_event ev;
	struct timespec zero = { 0, 0 };

	T_EXPECT(t_submit1(ctx, cb), 1);
	T_EXPECT(io_getevents(ctx, 0, 1, &ev, &zero), 1);
	cr_assert_eq((void *)ev.obj, (void *)cb);
	cr_assert_eq(ev.res2, 0);
	return (long)ev.res;
}

/* Fill w[0..len) with c and write it to fd at off (done_at_submit): the
 * write's result. */
static long fill_and_write(int fd, char *w, size_t len, char c, long long off)
{
	struct iocb cb;

	memset(w, c, len);
	io_prep_pwrite(&cb, fd, w, len, off);
	return done_at_submit(&cb);
}

/* A t_file of size bytes of seed's pattern, and in *again a second open
 * of it with flags (a file description of its own). */
static int file_opened_twice(size_t size, unsigned seed, int flags, int *again)
{
	char path[4096];
	int fd = t_file_path(size, seed, path, sizeof(path));

	*again = open(path, flags | O_CLOEXEC);
	cr_assert_geq(*again, 0, "open %s: %s", path, strerror(errno));
	return fd;
}

/* The size of the file behind fd (fstat). */
static off_t file_size(int fd)
{
	struct stat st;

	cr_assert_eq(fstat(fd, &st), 0);
	return st.st_size;
}

/* Assert that the file holds w[0..len) at off, read back with pread. */
static void file_holds(int fd, off_t off, const void *w, size_t len)
{
	char *back = malloc(len);

	cr_assert_not_null(back);
	cr_assert_eq(pread(fd, back, len, off), (ssize_t)len, "pread of %zu at %lld", len,
		     (long long)off);
	cr_assert_eq(memcmp(back, w, len), 0, "the %zu bytes at %lld are not those written", len,
		     (long long)off);
	free(back);
}

Test(inline_writes, sub_page_into_cold_page)
{
	int fd = t_file(1 << 20, 4);
	char w[100], back[100];

	t_cold(fd);
	cr_assert_eq(fill_and_write(fd, w, sizeof(w), 'c', 300000 + 17), 100);
	file_holds(fd, 300000 + 17, w, sizeof(w));
	/* Its neighbours were read in, not lost. */
	cr_assert_eq(pread(fd, back, 17, 300000), 17);
	t_check(back, 17, 300000, 4);
	close(fd);
}

Test(inline_writes, append)
{
	int afd, fd = file_opened_twice(5000, 6, O_WRONLY | O_APPEND, &afd);
	char w[300];

	cr_assert_eq(fill_and_write(afd, w, sizeof(w), 'a', 0), 300);
	cr_assert_eq(file_size(fd), 5300);
	file_holds(fd, 5000, w, sizeof(w));
	close(afd);
	close(fd);
}

Test(inline_writes, one_mib)
{
	int fd = t_file(0, 7);
	size_t n = 1 << 20;
	char *w = malloc(n), *back = malloc(n);
	struct iocb cb;

	t_fill(w, n, 4096, 8);
	io_prep_pwrite(&cb, fd, w, n, 4096);
	cr_assert_eq(done_at_submit(&cb), (long)n);
	cr_assert_eq(pread(fd, back, n, 4096), (ssize_t)n);
	t_check(back, n, 4096, 8);
	free(w);
	free(back);
	close(fd);
}

/* generic_write_check_limits(): a write crossing RLIMIT_FSIZE is cut at
 * the limit; one starting at it is EFBIG (with SIGXFSZ, ignored here). */
Test(inline_writes, cut_short_by_rlimit_fsize)
{
	int fd = t_file(0, 9);
	struct rlimit old, lim;
	char w[8192];

	cr_assert_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, SIG_IGN);
	lim = (struct rlimit){ 20000, old.rlim_max };
	cr_assert_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
	cr_assert_eq(fill_and_write(fd, w, sizeof(w), 'r', 20000 - 1000), 1000);
	cr_assert_eq(fill_and_write(fd, w, sizeof(w), 'r', 20000), -EFBIG);
	cr_assert_eq(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, SIG_DFL);
	cr_assert_eq(file_size(fd), 20000);
	close(fd);
}

Test(inline_writes, dsync)
{
	int sfd, fd = file_opened_twice(8192, 10, O_WRONLY | O_DSYNC, &sfd);
	char w[4096];
	struct iovec iov = { w, sizeof(w) };
	struct iocb cb;

	cr_assert_eq(fill_and_write(sfd, w, sizeof(w), 'd', 4096), 4096);
	/* RWF_DSYNC on a plain fd too. */
	io_prep_pwritev2(&cb, fd, &iov, 1, 0, 0x02);
	cr_assert_eq(done_at_submit(&cb), 4096);
	file_holds(fd, 0, w, sizeof(w));
	close(sfd);
	close(fd);
}

/* Several in one call: all of them done when it returns. */
Test(inline_writes, batch)
{
	int fd = t_file(0, 11);
	static char w[8][4096];
	struct iocb cb[8], *list[8];
	struct io_event ev[8];
	struct timespec zero = { 0, 0 };

	for (int i = 0; i < 8; i++) {
		memset(w[i], 'A' + i, sizeof(w[i]));
		io_prep_pwrite(&cb[i], fd, w[i], sizeof(w[i]), (long long)i * 8192 + 100);
		list[i] = &cb[i];
	}
	T_EXPECT(io_submit(ctx, 8, list), 8);
	T_EXPECT(io_getevents(ctx, 0, 8, ev, &zero), 8);
	for (int i = 0; i < 8; i++)
		cr_assert_eq(ev[i].res, 4096);
	close(fd);
}

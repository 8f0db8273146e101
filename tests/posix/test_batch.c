/* SPDX-License-Identifier: MIT */
/*
 * lio_listio(LIO_WAIT) of many reads at once, cached ones with a cold one,
 * a partly cached one and reads at and across the end of the file among
 * them: when it
 * returns, every element is complete with its own aio_return (the whole
 * count, the short count across EOF, 0 at it) and its bytes, and nothing
 * past the count is written; an element whose buffer cannot be written
 * fails alone, with EFAULT, and the list with EIO.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "t_px.h"

TestSuite(batch, .init = t_setup, .fini = t_teardown);

#define PAGE 4096
#define NHOT 32
#define SENT 0xee
#define PARTLY_OFF ((2 << 20) + 200)

/* Make fd cold but for the page holding PARTLY_OFF. */
static void warm_first(int fd)
{
	char path[64];
	uint8_t page[PAGE];

	t_cold(fd);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	int rfd = open(path, O_RDONLY | O_CLOEXEC);
	cr_assert_geq(rfd, 0);
	cr_assert_eq(posix_fadvise(rfd, 0, 0, POSIX_FADV_RANDOM), 0);
	cr_assert_eq(pread(rfd, page, PAGE, PARTLY_OFF / PAGE * PAGE), PAGE);
	close(rfd);
}

enum { COLD = NHOT, PARTLY, AT_EOF, ACROSS_EOF, FAR_PAST, N };

struct lio {
	struct aiocb cb[N + 1];
	struct aiocb *list[N + 1];
	uint8_t buf[N + 1][2 * PAGE];
	ssize_t want[N + 1];
	off_t off[N + 1];
	unsigned seed[N + 1];
};

static void elem(struct lio *l, int i, int fd, off_t off, size_t len, ssize_t want, unsigned seed)
{
	memset(l->buf[i], SENT, sizeof(l->buf[i]));
	t_cb(&l->cb[i], fd, l->buf[i], len, off, LIO_READ);
	l->list[i] = &l->cb[i];
	l->want[i] = want;
	l->off[i] = off;
	l->seed[i] = seed;
}

/* Element i: aio_error 0, aio_return want, the file's bytes, nothing past. */
static void check_elem(struct lio *l, int i)
{
	cr_assert_eq(aio_error(&l->cb[i]), 0, "element %d: aio_error %d", i, aio_error(&l->cb[i]));
	ssize_t got = aio_return(&l->cb[i]);
	cr_assert_eq(got, l->want[i], "element %d: aio_return %zd, want %zd", i, got, l->want[i]);
	t_check(l->buf[i], (size_t)got, (uint64_t)l->off[i], l->seed[i]);
	for (size_t k = (size_t)got; k < sizeof(l->buf[i]); k++)
		cr_assert_eq(l->buf[i][k], SENT, "element %d: byte %zu past the count written", i, k);
}

/* NHOT cached reads of hot, then a cold read of cold, one of cold whose
 * first page is cached (warm_first) and three at the end of small (size
 * 10000). */
static void fill(struct lio *l, int hot, int cold, int small)
{
	for (int i = 0; i < NHOT; i++)
		elem(l, i, hot, (off_t)(i * 7 % NHOT) * 3 * PAGE + i, PAGE, PAGE, 40);
	elem(l, COLD, cold, (1 << 20) + 100, 2 * PAGE, 2 * PAGE, 41);
	elem(l, PARTLY, cold, PARTLY_OFF, 2 * PAGE, 2 * PAGE, 41);
	elem(l, AT_EOF, small, 10000, PAGE, 0, 42);
	elem(l, ACROSS_EOF, small, 9000, 2 * PAGE, 1000, 42);
	elem(l, FAR_PAST, small, (off_t)1 << 40, PAGE, 0, 42);
}

/* One read done and waited for, so that the implementation has made
 * whatever it makes on first use before the lists. */
static void first_use(int fd)
{
	struct aiocb cb;
	char buf[16];

	t_read_start(&cb, fd, buf, sizeof(buf), 0);
	T_RETURNS(&cb, (ssize_t)sizeof(buf));
}

Test(batch, lio_wait_of_cached_cold_and_eof_reads)
{
	int hot = t_file(1 << 20, 40);
	int small = t_file(10000, 42);
	int cold[3];
	static struct lio l;

	first_use(hot);
	/* A new cold file each round, all kept open: a file whose reads
	 * missed before may be attempted differently. */
	for (int round = 0; round < 3; round++) {
		cold[round] = t_file(4 << 20, 41);
		warm_first(cold[round]);
		fill(&l, hot, cold[round], small);
		cr_assert_eq(lio_listio(LIO_WAIT, l.list, N, NULL), 0, "round %d: lio_listio: %s", round,
			     strerror(errno));
		for (int i = 0; i < N; i++)
			check_elem(&l, i);
	}
	for (int round = 0; round < 3; round++)
		close(cold[round]);
	close(hot);
	close(small);
}

/* One element reading into a PROT_NONE page among them: it alone fails,
 * EFAULT; the list says EIO; the others are complete and right. */
Test(batch, lio_wait_with_a_bad_buffer)
{
	int hot = t_file(1 << 20, 40);
	int cold = t_file(4 << 20, 41);
	int small = t_file(10000, 42);
	static struct lio l;
	void *none = mmap(NULL, PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	cr_assert_neq(none, MAP_FAILED);
	first_use(hot);
	warm_first(cold);
	fill(&l, hot, cold, small);
	t_cb(&l.cb[N], hot, none, PAGE, 5 * PAGE, LIO_READ);
	l.list[N] = &l.cb[N];
	errno = 0;
	cr_assert_eq(lio_listio(LIO_WAIT, l.list, N + 1, NULL), -1);
	cr_assert_eq(errno, EIO, "errno %d", errno);
	cr_assert_eq(aio_error(&l.cb[N]), EFAULT, "the bad buffer's aio_error %d", aio_error(&l.cb[N]));
	cr_assert_eq(aio_return(&l.cb[N]), -1);
	for (int i = 0; i < N; i++)
		check_elem(&l, i);
	munmap(none, PAGE);
	close(hot);
	close(cold);
	close(small);
}

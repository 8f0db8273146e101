/* SPDX-License-Identifier: MIT */
/*
 * IOCB_FLAG_RESFD: each event adds exactly 1 to the iocb's eventfd, after
 * the event is in the ring.
 */
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "t_aio.h"

TestSuite(resfd, .init = t_setup, .fini = t_teardown);

static uint64_t efd_read(int efd)
{
	uint64_t v = 0;

	if (read(efd, &v, sizeof(v)) != sizeof(v))
		return 0;
	return v;
}

/* What the eventfd counts once want events were signalled: its signal may
 * trail an event a program already reaped (the kernel, too, puts the event
 * in the ring before it signals), so collect for up to T_WAIT_SEC, then
 * look once more for anything beyond. */
static uint64_t efd_count(int efd, uint64_t want)
{
	uint64_t sum = 0;

	for (int ms = 0; sum < want && ms < T_WAIT_SEC * 1000; ms++) {
		struct pollfd pfd = { .fd = efd, .events = POLLIN };

		if (poll(&pfd, 1, 1) == 1)
			sum += efd_read(efd);
	}
	return sum + efd_read(efd);
}

Test(resfd, one_per_event)
{
	io_context_t ctx = t_ctx(64);
	int fd = t_file(1 << 20, 30), efd = eventfd(0, EFD_NONBLOCK);
	static char buf[40][4096];
	struct iocb cb[40], *list[40];
	struct io_event ev[40];

	cr_assert_geq(efd, 0);
	t_cold(fd);
	/* Hot and cold requests, some without the flag. */
	for (int i = 0; i < 40; i++) {
		io_prep_pread(&cb[i], fd, buf[i], 4096, (long long)i * 20000);
		if (i % 4 != 3)
			io_set_eventfd(&cb[i], efd);
		list[i] = &cb[i];
	}
	T_EXPECT(io_submit(ctx, 40, list), 40);
	t_reap(ctx, 40, ev);
	cr_assert_eq(efd_count(efd, 30), 30);
	T_DONE(ctx, fd);
	close(efd);
}

/* The eventfd says "ready" only once the event can be reaped. */
Test(resfd, signalled_after_publish)
{
	io_context_t ctx = t_ctx(8);
	int fd = t_file(1 << 20, 31), efd = eventfd(0, 0);
	char buf[65536];
	struct iocb cb;
	struct io_event ev;
	struct timespec zero = { 0, 0 };
	struct pollfd pfd = { .fd = efd, .events = POLLIN };

	t_cold(fd);
	io_prep_pread(&cb, fd, buf, sizeof(buf), 0);
	io_set_eventfd(&cb, efd);
	T_EXPECT(t_submit1(ctx, &cb), 1);
	cr_assert_eq(poll(&pfd, 1, T_WAIT_SEC * 1000), 1);
	T_EXPECT(io_getevents(ctx, 1, 1, &ev, &zero), 1);
	cr_assert_eq(ev.res, (long)sizeof(buf));
	cr_assert_eq(efd_read(efd), 1);
	T_DONE(ctx, fd);
	close(efd);
}

/* The kernel holds its own reference: the caller may close the eventfd. */
Test(resfd, caller_may_close_it)
{
	io_context_t ctx = t_ctx(8);
	int fd = t_file(1 << 20, 32), efd = eventfd(0, 0), other;
	char buf[4096];
	struct iocb cb;
	struct io_event ev;

	t_cold(fd);
	io_prep_pread(&cb, fd, buf, sizeof(buf), 4096 * 100);
	io_set_eventfd(&cb, efd);
	T_EXPECT(t_submit1(ctx, &cb), 1);
	close(efd);
	/* Whatever takes the number now must not be written to. */
	other = eventfd(0, EFD_NONBLOCK);
	t_reap(ctx, 1, &ev);
	cr_assert_eq(ev.res, 4096);
	cr_assert_eq(efd_read(other), 0);
	T_DONE(ctx, fd);
	close(other);
}

/* The number is looked up at each submit: once it names another eventfd,
 * the events go there, and the first one gets nothing more. */
Test(resfd, a_reused_number_names_the_new_eventfd)
{
	io_context_t ctx = t_ctx(8);
	int fd = t_file(1 << 20, 33), efd = eventfd(0, EFD_NONBLOCK), first, second;
	char buf[4096];
	struct iocb cb;
	struct io_event ev;

	cr_assert_geq(efd, 0);
	for (int round = 0; round < 3; round++) {
		io_prep_pread(&cb, fd, buf, sizeof(buf), 4096 * round);
		io_set_eventfd(&cb, efd);
		T_EXPECT(t_submit1(ctx, &cb), 1);
		t_reap(ctx, 1, &ev);
		cr_assert_eq(efd_count(efd, 1), 1);
	}
	/* Keep the first eventfd, put another at its number. */
	first = dup(efd);
	second = eventfd(0, EFD_NONBLOCK);
	cr_assert(first >= 0 && second >= 0);
	cr_assert_eq(dup2(second, efd), efd);
	close(second);
	t_cold(fd);
	for (int round = 0; round < 3; round++) {
		io_prep_pread(&cb, fd, buf, sizeof(buf), 4096 * (100 + round));
		io_set_eventfd(&cb, efd);
		T_EXPECT(t_submit1(ctx, &cb), 1);
		t_reap(ctx, 1, &ev);
		cr_assert_eq(ev.res, 4096);
		cr_assert_eq(efd_count(efd, 1), 1);
		cr_assert_eq(efd_read(first), 0);
	}
	T_DONE(ctx, fd);
	close(efd);
	close(first);
}

/* More eventfds than a context keeps at hand, in turns: each counts
 * exactly its own events. */
Test(resfd, many_eventfds_in_turn)
{
	enum { NEFD = 7, PER = 5 };
	io_context_t ctx = t_ctx(64);
	int fd = t_file(1 << 20, 34), efd[NEFD];
	static char buf[NEFD * PER][4096];
	struct iocb cb[NEFD * PER], *list[NEFD * PER];
	struct io_event ev[NEFD * PER];

	for (int e = 0; e < NEFD; e++)
		cr_assert_geq(efd[e] = eventfd(0, EFD_NONBLOCK), 0);
	t_cold(fd);
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < NEFD * PER; i++) {
			io_prep_pread(&cb[i], fd, buf[i], 4096, 4096LL * (i + round * NEFD * PER));
			io_set_eventfd(&cb[i], efd[(i + round) % NEFD]);
			list[i] = &cb[i];
		}
		T_EXPECT(io_submit(ctx, NEFD * PER, list), NEFD * PER);
		t_reap(ctx, NEFD * PER, ev);
		for (int e = 0; e < NEFD; e++)
			cr_assert_eq(efd_count(efd[e], PER), PER, "eventfd %d, round %d", e, round);
	}
	T_EXPECT(io_destroy(ctx), 0);
	for (int e = 0; e < NEFD; e++)
		close(efd[e]);
	close(fd);
}

/* The file at path (written through fd) opened again with O_DIRECT, and
 * an aligned buffer of blocks 4 KiB blocks; skips where O_DIRECT is refused. */
static int open_direct(int fd, const char *path, char **buf, int blocks)
{
	int dfd;

	cr_assert_eq(fsync(fd), 0);
	dfd = open(path, O_RDONLY | O_DIRECT);
	if (dfd < 0)
		cr_skip_test("O_DIRECT refused here: %s", strerror(errno));
	cr_assert_eq(posix_memalign((void **)buf, 4096, (size_t)blocks * 4096), 0);
	return dfd;
}

struct spin_reader {
	io_context_t ctx;
	int efd, want;
	uint64_t signals;
	int reaped;
	atomic_bool done;
};

/* Wait on the eventfd and reap, as a program whose I/O thread sleeps on it. */
static void *spin_reader(void *arg)
{
	struct spin_reader *r = arg;
	struct io_event ev[8];

	r->signals = efd_count(r->efd, (uint64_t)r->want);
	while (r->reaped < r->want) {
		struct timespec ts = { T_WAIT_SEC, 0 };
		int n = io_getevents(r->ctx, 1, 8, ev, &ts);

		if (n <= 0)
			break;
		for (int i = 0; i < n; i++)
			if (ev[i].res == 4096)
				r->reaped++;
	}
	atomic_store(&r->done, true);
	return NULL;
}

/* A submitter that never enters the kernel after io_submit (it computes)
 * still has its O_DIRECT requests completed and signalled while it does:
 * the completion of a request the engine hands to io_uring must not wait
 * for the submitter's next system call. */
Test(resfd, a_submitter_that_stays_in_user_space_is_not_waited_for)
{
	enum { N = 8 };
	io_context_t ctx = t_ctx(16);
	char path[4096];
	int fd = t_file_path(1 << 20, 35, path, sizeof(path)), dfd;
	int efd = eventfd(0, EFD_NONBLOCK);
	struct spin_reader r = { .ctx = ctx, .efd = efd, .want = N };
	struct iocb cb[N], *list[N];
	struct timespec t0, t;
	volatile unsigned long spins = 0;
	pthread_t th;
	char *buf = NULL;

	cr_assert_geq(efd, 0);
	dfd = open_direct(fd, path, &buf, N);
	for (int i = 0; i < N; i++) {
		io_prep_pread(&cb[i], dfd, buf + i * 4096, 4096, 4096LL * 16 * i);
		io_set_eventfd(&cb[i], efd);
		list[i] = &cb[i];
	}
	cr_assert_eq(pthread_create(&th, NULL, spin_reader, &r), 0);
	/* The clock is read through the vDSO: no system call. */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	T_EXPECT(io_submit(ctx, N, list), N);
	do {
		for (int i = 0; i < 1 << 20 && !atomic_load(&r.done); i++)
			spins++;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (!atomic_load(&r.done) && t.tv_sec - t0.tv_sec < T_WAIT_SEC);
	cr_assert(atomic_load(&r.done), "no events while the submitter computed");
	pthread_join(th, NULL);
	cr_assert_eq(r.reaped, N);
	cr_assert_eq(r.signals, N);
	for (int i = 0; i < N; i++)
		t_check(buf + i * 4096, 4096, 4096LL * 16 * i, 35);
	T_EXPECT(io_destroy(ctx), 0);
	free(buf);
	close(dfd);
	close(fd);
	close(efd);
}

/* A program that keeps a queue of O_DIRECT reads full, one io_submit per
 * request, reaping as its eventfd says, while the engine's thread relays
 * the completions. Every request must complete, once, with its data. */
Test(resfd, a_full_queue_of_single_submits)
{
	enum { DEPTH = 16, TOTAL = 400, BLOCKS = 256 };
	io_context_t ctx = t_ctx(DEPTH);
	char path[4096];
	int fd = t_file_path(BLOCKS * 4096, 36, path, sizeof(path)), dfd;
	int efd = eventfd(0, 0);
	struct iocb cb[DEPTH];
	struct io_event ev[DEPTH];
	int free_slot[DEPTH], nfree = DEPTH, sent = 0, done = 0;
	char *buf = NULL;

	cr_assert_geq(efd, 0);
	dfd = open_direct(fd, path, &buf, DEPTH);
	for (int i = 0; i < DEPTH; i++)
		free_slot[i] = i;
	while (done < TOTAL) {
		struct pollfd pfd = { .fd = efd, .events = POLLIN };
		struct timespec zero = { 0, 0 };
		int n;

		while (nfree && sent < TOTAL) {
			int s = free_slot[--nfree];
			struct iocb *p = &cb[s];

			io_prep_pread(p, dfd, buf + s * 4096, 4096, 4096LL * ((sent * 7) % BLOCKS));
			io_set_eventfd(p, efd);
			p->data = (void *)(intptr_t)((sent * 7) % BLOCKS);
			T_EXPECT(io_submit(ctx, 1, &p), 1);
			sent++;
		}
		cr_assert_eq(poll(&pfd, 1, T_WAIT_SEC * 1000), 1, "no event for %d of %d", done, TOTAL);
		(void)efd_read(efd);
		n = io_getevents(ctx, 0, DEPTH, ev, &zero);
		cr_assert_geq(n, 0);
		for (int i = 0; i < n; i++) {
			struct iocb *p = ev[i].obj;
			int s = (int)(p - cb);

			cr_assert_eq(ev[i].res, 4096);
			t_check(buf + s * 4096, 4096, 4096LL * (intptr_t)ev[i].data, 36);
			free_slot[nfree++] = s;
		}
		done += n;
	}
	T_EXPECT(io_destroy(ctx), 0);
	free(buf);
	close(dfd);
	close(fd);
	close(efd);
}

/* Whether the file at path holds seed's pattern in its first 4 KiB. */
static bool first_block_is(const char *path, unsigned seed)
{
	char got[4096], want[4096];
	int fd = open(path, O_RDONLY);

	cr_assert_geq(fd, 0);
	cr_assert_eq(pread(fd, got, sizeof(got), 0), (ssize_t)sizeof(got));
	close(fd);
	t_fill(want, sizeof(want), 0, seed);
	return !memcmp(got, want, sizeof(got));
}

/* io_submit takes the file the fd names at that moment, as the kernel's AIO
 * takes a reference: a program may put another file at the number as soon
 * as io_submit returns, here while other requests are in flight and the
 * engine's thread relays their completions. An engine that let that thread
 * submit the write later would send it to the second file. The write must
 * land in the first file, and the second must stay as it was. */
Test(resfd, a_number_reused_right_after_submit_keeps_the_write_on_its_file)
{
	enum { BG = 8, ROUNDS = 50, BLOCKS = 256 };
	io_context_t ctx = t_ctx(BG + 1);
	char path[4096], pa[4096], pb[4096];
	int fd = t_file_path(BLOCKS * 4096, 37, path, sizeof(path)), dfd;
	int efd = eventfd(0, 0);
	struct iocb cb[BG + 1], *list[BG + 1];
	struct io_event ev[BG + 1];
	char *buf = NULL;

	cr_assert_geq(efd, 0);
	dfd = open_direct(fd, path, &buf, BG + 1);
	for (int round = 0; round < ROUNDS; round++) {
		int a = t_file_path(4096, 38, pa, sizeof(pa));
		int b = t_file_path(4096, 39, pb, sizeof(pb));
		int da, db;

		cr_assert_eq(fsync(a) | fsync(b), 0);
		close(a);
		close(b);
		da = open(pa, O_WRONLY | O_DIRECT);
		db = open(pb, O_WRONLY | O_DIRECT);
		cr_assert(da >= 0 && db >= 0);
		for (int i = 0; i < BG; i++) {
			io_prep_pread(&cb[i], dfd, buf + i * 4096, 4096,
				      4096LL * ((round * 31 + i * 7) % BLOCKS));
			io_set_eventfd(&cb[i], efd);
			list[i] = &cb[i];
		}
		T_EXPECT(io_submit(ctx, BG, list), BG);
		t_fill(buf + BG * 4096, 4096, 0, 40);
		io_prep_pwrite(&cb[BG], da, buf + BG * 4096, 4096, 0);
		io_set_eventfd(&cb[BG], efd);
		list[BG] = &cb[BG];
		T_EXPECT(io_submit(ctx, 1, &list[BG]), 1);
		/* da's number now names the second file. */
		cr_assert_eq(dup2(db, da), da);
		t_reap(ctx, BG + 1, ev);
		for (int i = 0; i < BG + 1; i++)
			cr_assert_eq(ev[i].res, 4096, "event of iocb %d: %ld",
				     (int)((struct iocb *)ev[i].obj - cb), (long)ev[i].res);
		cr_assert(first_block_is(pa, 40), "round %d: the write missed its file", round);
		cr_assert(first_block_is(pb, 39), "round %d: the write reached the file put at its number",
			  round);
		close(da);
		close(db);
		unlink(pa);
		unlink(pb);
	}
	T_EXPECT(io_destroy(ctx), 0);
	free(buf);
	close(dfd);
	close(fd);
	close(efd);
}

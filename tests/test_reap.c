/* SPDX-License-Identifier: MIT */
/*
 * Who harvests the io_uring ring's completions (lib/exec/uring_reap.c): a
 * getevents caller that waits carries the ring itself; the ring's thread
 * carries it for an eventfd reader and a callback context, which never wait
 * in getevents; a completion from another executor reaches a caller that
 * waits in the ring. Each ring completion is harvested exactly once, by one
 * of the two, whatever the timing: that is asserted exactly, and who took
 * them only where the test makes it certain.
 */
#include "t_helpers.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#define KiB 1024u

TestSuite(reap, .init = t_setup, .fini = t_teardown, .timeout = 120);

#define FILE_SIZE (4u * 1024 * KiB)
#define PER_ROUND 8u

/* Every ring CQE was harvested once: as many as SQEs were submitted. */
static void check_harvest_count(fsaio_ctx_t *ctx)
{
	struct fsaio_stats st = t_stats(ctx);

	cr_assert_eq(st.ring_reaped_caller + st.ring_reaped_thread, st.uring_submissions,
		     "harvested %llu by callers + %llu by the thread, %llu SQEs",
		     (unsigned long long)st.ring_reaped_caller,
		     (unsigned long long)st.ring_reaped_thread,
		     (unsigned long long)st.uring_submissions);
}

/* Submit PER_ROUND 4 KiB reads of fd at never-read offsets (cold). */
static void submit_round(fsaio_ctx_t *ctx, int fd, int round, struct fsaio_req *reqs,
			 uint8_t (*bufs)[4 * KiB])
{
	struct fsaio_req *rp[PER_ROUND];

	for (unsigned i = 0; i < PER_ROUND; i++) {
		/* Spread over the file, two rounds never on one page. */
		uint64_t off = ((uint64_t)(i * 97 + (unsigned)round) % (FILE_SIZE / (4 * KiB))) * 4 * KiB;

		fsaio_prep_pread(&reqs[i], fd, bufs[i], 4 * KiB, (int64_t)off);
		rp[i] = &reqs[i];
	}
	t_submit(ctx, rp, PER_ROUND);
}

static void check_round(const struct fsaio_event *evs, unsigned n, unsigned seed)
{
	for (unsigned i = 0; i < n; i++) {
		const struct fsaio_req *r = evs[i].req;

		cr_assert_eq(evs[i].res, 4 * KiB);
		t_check_pattern(r->buf, 4 * KiB, (uint64_t)r->offset, seed);
	}
}

/* Rounds [from, to) of submit_round, each reaped by waiting in getevents
 * and, with seed non-zero, checked to hold the pattern of seed. */
static void wait_rounds(fsaio_ctx_t *ctx, int fd, int from, int to, unsigned seed)
{
	static uint8_t bufs[PER_ROUND][4 * KiB];
	struct fsaio_req reqs[PER_ROUND];
	struct fsaio_event evs[PER_ROUND];

	for (int round = from; round < to; round++) {
		submit_round(ctx, fd, round, reqs, bufs);
		t_reap_all(ctx, PER_ROUND, evs, T_EVENT_TIMEOUT_MS);
		if (seed)
			check_round(evs, PER_ROUND, seed);
	}
}

/* A context carrying misses on the ring, and a cold file of seed that it
 * reads at random. */
static fsaio_ctx_t *cold_ring_ctx(unsigned seed, int *fd)
{
	fsaio_ctx_t *ctx = t_ctx_backend(FSAIO_BACKEND_URING);

	*fd = t_tmpfile(FILE_SIZE, seed);
	t_make_cold(*fd);
	T_ASSERT_RET(fsaio_fadvise(ctx, *fd, POSIX_FADV_RANDOM), 0);
	return ctx;
}

Test(reap, a_waiting_caller_carries_the_ring)
{
	if (!t_ring_ok())
		cr_skip_test("io_uring is not available to this process");
	int fd;
	fsaio_ctx_t *ctx = cold_ring_ctx(211, &fd);

	wait_rounds(ctx, fd, 0, 64, 211);
	check_harvest_count(ctx);
	/* 512 cold reads: a caller that waited harvested some itself. */
	struct fsaio_stats st = t_stats(ctx);
	if (st.uring_submissions)
		cr_assert_gt(st.ring_reaped_caller, 0, "the thread harvested all %llu",
			     (unsigned long long)st.uring_submissions);
	t_ctx_destroy(ctx);
}

/* After callers drove the ring (the thread stepped back), an eventfd reader
 * that never waits in getevents still gets every event, from the thread. */
Test(reap, the_thread_carries_the_ring_for_an_eventfd_reader)
{
	int fd;
	fsaio_ctx_t *ctx = cold_ring_ctx(212, &fd);
	static uint8_t bufs[PER_ROUND][4 * KiB];
	struct fsaio_req reqs[PER_ROUND];
	struct fsaio_event evs[PER_ROUND];

	wait_rounds(ctx, fd, 0, 4, 0);
	int efd = T_CALL(fsaio_event_fd(ctx));
	cr_assert_geq(efd, 0);
	uint64_t caller_before = t_stats(ctx).ring_reaped_caller;
	for (int round = 4; round < 12; round++) {
		unsigned got = 0;

		submit_round(ctx, fd, round, reqs, bufs);
		while (got < PER_ROUND) {
			struct pollfd pfd = { .fd = efd, .events = POLLIN };

			cr_assert_eq(poll(&pfd, 1, T_EVENT_TIMEOUT_MS), 1, "no event after %u", got);
			/* min_nr 0: this caller never waits, so never drives. */
			int n = T_CALL(fsaio_getevents(ctx, 0, PER_ROUND - got, evs + got, NULL));
			cr_assert_geq(n, 0);
			got += (unsigned)n;
		}
		check_round(evs, PER_ROUND, 212);
	}
	cr_assert_eq(t_stats(ctx).ring_reaped_caller, caller_before);
	check_harvest_count(ctx);
	t_ctx_destroy(ctx);
}

struct cb_state {
	_Atomic unsigned n;
	_Atomic int bad;
};

static void on_event(void *arg, const struct fsaio_event *ev)
{
	struct cb_state *s = arg;

	if (ev->res != 4 * KiB ||
	    t_pattern_mismatch(ev->req->buf, 4 * KiB, (uint64_t)ev->req->offset, 213) >= 0)
		atomic_store(&s->bad, 1);
	atomic_fetch_add(&s->n, 1);
}

Test(reap, the_thread_carries_the_ring_for_callbacks)
{
	struct cb_state s = { .n = 0, .bad = 0 };
	fsaio_ctx_t *ctx = t_ctx(&(struct fsaio_params){
		.miss_backend = FSAIO_BACKEND_URING, .complete = on_event, .complete_arg = &s });
	int fd = t_tmpfile(FILE_SIZE, 213);
	static uint8_t bufs[PER_ROUND][4 * KiB];
	struct fsaio_req reqs[PER_ROUND];

	t_make_cold(fd);
	for (int round = 0; round < 8; round++) {
		atomic_store(&s.n, 0);
		submit_round(ctx, fd, round, reqs, bufs);
		for (int i = 0; i < T_EVENT_TIMEOUT_MS && atomic_load(&s.n) < PER_ROUND; i++)
			t_sleep_ms(1);
		cr_assert_eq(atomic_load(&s.n), PER_ROUND);
	}
	cr_assert_eq(atomic_load(&s.bad), 0);
	cr_assert_eq(t_stats(ctx).ring_reaped_caller, 0);
	check_harvest_count(ctx);
	t_ctx_destroy(ctx);
}

struct writer {
	int fd;
	int delay_ms;
};

static void *write_later(void *arg)
{
	struct writer *w = arg;

	t_sleep_ms(w->delay_ms);
	if (write(w->fd, "ping", 4) != 4)
		abort();
	return NULL;
}

/* A pipe read (the poller) completes while the caller may be waiting in
 * the ring for cold reads: the caller must get it, with the ring's. */
Test(reap, another_executors_completion_reaches_a_caller_in_the_ring)
{
	int fd;
	fsaio_ctx_t *ctx = cold_ring_ctx(214, &fd);
	static uint8_t bufs[PER_ROUND][4 * KiB];
	struct fsaio_req reqs[PER_ROUND], pr;
	struct fsaio_event evs[PER_ROUND + 1];
	char pbuf[8];

	for (int round = 0; round < 24; round++) {
		int p[2];
		pthread_t th;
		struct writer w = { .delay_ms = round % 3 };
		struct timespec limit = { .tv_sec = T_EVENT_TIMEOUT_MS / 1000 };
		unsigned got = 0;

		cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
		w.fd = p[1];
		fsaio_prep_pread(&pr, p[0], pbuf, sizeof(pbuf), -1);
		t_submit1(ctx, &pr);
		submit_round(ctx, fd, round, reqs, bufs);
		cr_assert_eq(pthread_create(&th, NULL, write_later, &w), 0);
		while (got < PER_ROUND + 1) {
			int n = T_CALL(fsaio_getevents(ctx, PER_ROUND + 1 - got, PER_ROUND + 1 - got,
						       evs + got, &limit));

			cr_assert_gt(n, 0, "%u of %u events, then none", got, PER_ROUND + 1);
			got += (unsigned)n;
		}
		cr_assert_eq(pthread_join(th, NULL), 0);
		cr_assert_eq(t_event_of(evs, got, &pr)->res, 4);
		close(p[0]);
		close(p[1]);
	}
	check_harvest_count(ctx);
	t_ctx_destroy(ctx);
}

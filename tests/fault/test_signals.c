/* SPDX-License-Identifier: MIT */
/*
 * A signal storm: SIGALRM every 100 us (setitimer, a handler installed
 * without SA_RESTART) while one thread submits and reaps reads, writes
 * and fsyncs, on each backend. Interrupted waits say -EINTR and are
 * retried; every request completes exactly once with the full count, and
 * its data is right. The storm lasts TOTAL requests or STORM_S seconds,
 * whichever ends first, so a slow machine runs fewer of them rather than
 * failing; every batch it starts is checked whole.
 */
#include "t_helpers.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <unistd.h>

/* The handler bounds the test itself (see storm_on): the itimer is the
 * one t_runner's alarm() would use. */
TestSuite(signals, .init = t_setup, .fini = t_teardown, .timeout = 60);

#define KiB 1024u
#define MiB (1024u * 1024u)
#define RSIZE (16 * MiB)
#define WSIZE (4 * MiB)
#define BATCH 32
#define TOTAL 3000
#define RLEN (64 * KiB)
#define WLEN (16 * KiB)
#define RSEED 71u
#define WSEED 72u
#define WSEED_OLD 73u
#define STORM_S 25      /* no new batch after this */
#define LIMIT_S 50      /* a run still going then is hung */

static volatile sig_atomic_t ticks;
static int64_t storm_deadline_ns;   /* set before the timer starts */

static void on_alarm(int sig)
{
	int e = errno;
	struct timespec t;

	(void)sig;
	ticks++;
	clock_gettime(CLOCK_MONOTONIC, &t);
	if ((int64_t)t.tv_sec * 1000000000 + t.tv_nsec > storm_deadline_ns) {
		static const char msg[] = "signals: still running after the time limit\n";
		ssize_t w = write(2, msg, sizeof(msg) - 1);
		(void)w;
		_exit(3);
	}
	errno = e;
}

static void storm_on(void)
{
	struct sigaction sa = { .sa_handler = on_alarm };
	sigemptyset(&sa.sa_mask);
	cr_assert_eq(sigaction(SIGALRM, &sa, NULL), 0);
	storm_deadline_ns = (int64_t)t_now_ns() + (int64_t)LIMIT_S * 1000000000;
	struct itimerval it = { { 0, 100 }, { 0, 100 } };
	cr_assert_eq(setitimer(ITIMER_REAL, &it, NULL), 0);
}

static void storm_off(void)
{
	struct itimerval it = { { 0, 0 }, { 0, 0 } };
	cr_assert_eq(setitimer(ITIMER_REAL, &it, NULL), 0);
}

struct op {
	struct fsaio_req r;
	int kind;               /* 0 read, 1 write, 2 fsync */
	int nev;
};

static void run(uint32_t backend)
{
	int rfd = t_tmpfile(RSIZE, RSEED);
	int wfd = t_tmpfile(WSIZE, WSEED_OLD);
	t_make_cold(rfd);
	fsaio_ctx_t *ctx = t_ctx_backend(backend);
	static struct op ops[BATCH];
	static uint8_t bufs[BATCH][RLEN];
	unsigned done = 0, seq = 0, nintr = 0;
	static bool written[WSIZE / WLEN];

	storm_on();
	uint64_t stop = t_now_ns() + (uint64_t)STORM_S * 1000000000u;
	while (done < TOTAL && (done == 0 || t_now_ns() < stop)) {
		struct fsaio_req *rp[BATCH];
		for (unsigned i = 0; i < BATCH; i++, seq++) {
			struct op *o = &ops[i];
			o->kind = i % 8 == 7 ? 2 : i % 4 == 3 ? 1 : 0;
			o->nev = 0;
			if (o->kind == 0) {
				int64_t off = (int64_t)((seq * 2654435761u) % (RSIZE / RLEN)) * RLEN;
				memset(bufs[i], 0xee, RLEN);
				fsaio_prep_pread(&o->r, rfd, bufs[i], RLEN, off);
			} else if (o->kind == 1) {
				int64_t off = (int64_t)(seq % (WSIZE / WLEN)) * WLEN;
				t_fill_pattern(bufs[i], WLEN, (uint64_t)off, WSEED);
				written[off / WLEN] = true;
				fsaio_prep_pwrite(&o->r, wfd, bufs[i], WLEN, off);
			} else {
				fsaio_prep_fsync(&o->r, wfd);
			}
			o->r.user_data = o;
			rp[i] = &o->r;
		}
		unsigned sent = 0;
		while (sent < BATCH) {
			int r = T_CALL(fsaio_submit(ctx, rp + sent, BATCH - sent));
			cr_assert_gt(r, 0, "fsaio_submit: %d", r);
			sent += (unsigned)r;
		}
		unsigned got = 0;
		uint64_t end = t_now_ns() + (uint64_t)T_EVENT_TIMEOUT_MS * 1000000u;
		while (got < BATCH) {
			struct fsaio_event evs[BATCH];
			cr_assert_lt(t_now_ns(), end, "%u of %u events", got, BATCH);
			int r = T_CALL(fsaio_getevents(ctx, 1, BATCH, evs, NULL));
			if (r == -EINTR) {
				nintr++;
				continue;
			}
			cr_assert_gt(r, 0, "fsaio_getevents: %d", r);
			cr_assert_leq((unsigned)r, BATCH - got, "more events than requests");
			for (int k = 0; k < r; k++) {
				struct op *o = evs[k].user_data;
				cr_assert(o >= ops && o < ops + BATCH && &o->r == evs[k].req);
				cr_assert_eq(++o->nev, 1, "a request completed twice");
				const struct fsaio_req *q = &o->r;
				int64_t want = o->kind == 2 ? 0 : (int64_t)q->len;
				cr_assert_eq(evs[k].res, want, "op %d: res %lld, want %lld", o->kind,
					     (long long)evs[k].res, (long long)want);
				if (o->kind == 0)
					t_check_pattern(q->buf, RLEN, (uint64_t)q->offset, RSEED);
			}
			got += (unsigned)r;
		}
		done += BATCH;
	}
	storm_off();
	t_no_event(ctx);
	t_ctx_destroy(ctx);
	/* Every block written holds the new pattern, the others the old. */
	for (unsigned b = 0; b < WSIZE / WLEN; b++)
		t_check_file(wfd, (uint64_t)b * WLEN, WLEN, written[b] ? WSEED : WSEED_OLD);
	cr_assert_gt(ticks, 0, "no signal arrived: the storm did not happen");
	printf("signals/%s: %u requests, %d signals, %u waits interrupted\n", backend == FSAIO_BACKEND_URING ?
	       "uring" : "threads", done, (int)ticks, nintr);
	close(rfd);
	close(wfd);
}

Test(signals, threads)
{
	run(FSAIO_BACKEND_THREADS);
}

Test(signals, uring)
{
	run(FSAIO_BACKEND_URING);
}

/* SPDX-License-Identifier: MIT */
/*
 * Process limits. With RLIMIT_NPROC at 1 no thread can be started: every
 * request the engine accepts still gets its one event, done in full (by
 * the submitter when no worker can be had: lib/carry.c); a submit may
 * refuse with -EAGAIN. With no free file descriptor, requests on a context that
 * exists complete in full, and a new context either fails cleanly with
 * -EMFILE or works without one (its eventfd is made on first use, and
 * fsaio_event_fd then says -EMFILE).
 */
#include "f_helpers.h"

#include <grp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

/* The descriptors a test took to fill the table; closed by limits_fini
 * too, so a failed test can still clean up its files. */
static int taken[512];
static unsigned ntaken;

static void limits_fini(void)
{
	while (ntaken)
		close(taken[--ntaken]);
	t_teardown();
}

TestSuite(limits, .init = t_setup, .fini = limits_fini, .timeout = 60);

#define RSIZE (8 * MiB)
#define WSIZE (1 * MiB)
#define NREQ 48
#define RLEN (64 * KiB)
#define WLEN (32 * KiB)
#define RSEED 81u
#define WSEED 82u
#define WSEED_OLD 83u

struct counts {
	unsigned refused;       /* submits answered -EAGAIN */
	unsigned eagain;        /* events -EAGAIN */
};

/*
 * NREQ cold reads, writes and fsyncs. A submit may refuse with -EAGAIN
 * (nothing left to carry the request): then what is in flight is reaped
 * and the rest tried again. Every accepted request: one event, the full
 * count (or, with eagain_ok, -EAGAIN), the data right: a write that
 * failed left the file as it was.
 */
static struct counts batch(fsaio_ctx_t *ctx, int rfd, int wfd, bool eagain_ok)
{
	struct counts c = { 0, 0 };
	static struct f_op ops[NREQ];
	static uint8_t bufs[NREQ][RLEN];
	struct fsaio_req *rp[NREQ];
	unsigned sent = 0, reaped = 0;

	for (unsigned i = 0; i < NREQ; i++) {
		struct f_op *o = &ops[i];
		f_op_prep(o, i, rfd, wfd, bufs[i], RLEN, WLEN, WSEED);
		rp[i] = &o->r;
	}
	uint64_t end = t_now_ns() + (uint64_t)T_EVENT_TIMEOUT_MS * 1000000u;
	while (reaped < NREQ) {
		cr_assert_lt(t_now_ns(), end, "%u of %u events", reaped, NREQ);
		if (sent < NREQ) {
			int r = T_CALL(fsaio_submit(ctx, rp + sent, NREQ - sent));
			cr_assert(r > 0 || r == -EAGAIN, "fsaio_submit: %d", r);
			if (r > 0)
				sent += (unsigned)r;
			else
				c.refused++;
			if (r == -EAGAIN && sent == reaped)
				t_sleep_ms(1);
		}
		if (sent == reaped)
			continue;
		struct fsaio_event evs[NREQ];
		struct timespec ts = { 0, 10000000 };
		int r = T_CALL(fsaio_getevents(ctx, 1, sent - reaped, evs, &ts));
		cr_assert_geq(r, 0, "fsaio_getevents: %d", r);
		for (int k = 0; k < r; k++) {
			struct f_op *o = evs[k].user_data;
			cr_assert_eq(++o->nev, 1, "a request completed twice");
			int64_t want = o->kind == 2 ? 0 : (int64_t)o->r.len;
			o->res = evs[k].res;
			if (eagain_ok && o->res == -EAGAIN) {
				c.eagain++;
				continue;
			}
			cr_assert_eq(evs[k].res, want, "op %d: res %lld, want %lld", o->kind,
				     (long long)evs[k].res, (long long)want);
			if (o->kind == 0)
				t_check_pattern(o->r.buf, RLEN, (uint64_t)o->r.offset, RSEED);
		}
		reaped += (unsigned)r;
	}
	t_no_event(ctx);
	for (unsigned i = 0; i < NREQ; i++)
		if (ops[i].kind == 1)
			t_check_file(wfd, (uint64_t)i * WLEN, WLEN, ops[i].res == -EAGAIN ? WSEED_OLD : WSEED);
	return c;
}

static void *nothing(void *arg)
{
	return arg;
}

/* In a child: no thread may be started. As root the limit does not apply,
 * so the child becomes nobody first (its files are already open). */
static void nproc_child(uint32_t backend, int rfd, int wfd)
{
	struct rlimit one = { 1, 1 };

	cr_assert_eq(setrlimit(RLIMIT_NPROC, &one), 0, "setrlimit: %s", strerror(errno));
	if (geteuid() == 0) {
		cr_assert_eq(setgroups(0, NULL), 0);
		cr_assert_eq(setresgid(65534, 65534, 65534), 0);
		cr_assert_eq(setresuid(65534, 65534, 65534), 0);
	}
	pthread_t t;
	int e = pthread_create(&t, NULL, nothing, NULL);
	if (e == 0) {
		pthread_join(t, NULL);
		printf("SKIP: a thread could still be started under RLIMIT_NPROC 1\n");
		fflush(NULL);
		_exit(T_SKIP_STATUS);
	}
	cr_assert_eq(e, EAGAIN, "pthread_create: %s", strerror(e));

	fsaio_ctx_t *ctx = NULL;
	struct fsaio_params p = { .miss_backend = backend };
	int r = T_CALL(fsaio_ctx_create(&p, &ctx));
	cr_assert(r == 0 || r == -EAGAIN, "fsaio_ctx_create without threads: %d", r);
	if (r == 0) {
		struct counts c = batch(ctx, rfd, wfd, false);
		t_ctx_destroy(ctx);
		printf("limits/nproc %s: %u requests, %u events -EAGAIN, %u submits refused with -EAGAIN\n",
		       backend == FSAIO_BACKEND_URING ? "uring" : "threads", NREQ, c.eagain, c.refused);
	} else {
		printf("limits/nproc %s: fsaio_ctx_create -EAGAIN\n",
		       backend == FSAIO_BACKEND_URING ? "uring" : "threads");
	}
	fflush(NULL);
	_exit(0);
}

static void nproc(uint32_t backend)
{
	int rfd = t_tmpfile(RSIZE, RSEED);
	int wfd = t_tmpfile(WSIZE + NREQ * WLEN, WSEED_OLD);
	t_make_cold(rfd);

	fflush(NULL);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0)
		nproc_child(backend, rfd, wfd);
	int st = t_waitpid_bounded(pid, 50000);
	if (WIFEXITED(st) && WEXITSTATUS(st) == T_SKIP_STATUS) {
		t_teardown();
		_exit(T_SKIP_STATUS);
	}
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the limited child failed (status %#x)", st);
	close(rfd);
	close(wfd);
}

Test(limits, nproc_threads)
{
	nproc(FSAIO_BACKEND_THREADS);
}

Test(limits, nproc_uring)
{
	nproc(FSAIO_BACKEND_URING);
}

/* Take every free descriptor below the soft limit (lowered to keep it
 * quick), into taken[]. */
static void fill_fds(int any)
{
	for (;;) {
		int fd = dup(any);
		if (fd < 0) {
			cr_assert_eq(errno, EMFILE, "dup: %s", strerror(errno));
			return;
		}
		cr_assert_lt(ntaken, sizeof(taken) / sizeof(taken[0]), "more descriptors free than the limit");
		taken[ntaken++] = fd;
	}
}

static void nofile(uint32_t backend)
{
	int rfd = t_tmpfile(RSIZE, RSEED);
	int wfd = t_tmpfile(WSIZE + NREQ * WLEN, WSEED_OLD);
	fsaio_ctx_t *ctx = t_ctx_backend(backend);
	struct rlimit old, low = { 256, 0 };

	cr_assert_eq(getrlimit(RLIMIT_NOFILE, &old), 0);
	low.rlim_max = old.rlim_max;
	cr_assert_eq(setrlimit(RLIMIT_NOFILE, &low), 0);

	/* Twice: cold, and with the engine's threads or ring already there. */
	for (int round = 0; round < 2; round++) {
		t_make_cold(rfd);
		fill_fds(rfd);
		unsigned n = ntaken;
		struct counts c = batch(ctx, rfd, wfd, false);

		/* A new context, and requests on it, without a descriptor. */
		fsaio_ctx_t *ctx2 = NULL;
		struct fsaio_params p = { .miss_backend = backend };
		int r = T_CALL(fsaio_ctx_create(&p, &ctx2));
		cr_assert(r == 0 || r == -EMFILE, "fsaio_ctx_create with no free fd: %d", r);
		struct counts c2 = { 0, 0 };
		if (r == 0) {
			T_ASSERT_RET(fsaio_event_fd(ctx2), -EMFILE);
			t_make_cold(rfd);
			c2 = batch(ctx2, rfd, wfd, false);
			t_ctx_destroy(ctx2);
		} else {
			cr_assert_null(ctx2);
		}
		while (ntaken)
			close(taken[--ntaken]);
		printf("limits/nofile %s round %d: %u fds taken, %u requests complete (%u submits refused); "
		       "new context: %s\n", backend == FSAIO_BACKEND_URING ? "uring" : "threads", round, n,
		       NREQ, c.refused + c2.refused, r ? "-EMFILE" : "made, its requests complete");
	}
	/* With descriptors free again, a context comes up as before. */
	fsaio_ctx_t *ctx3 = t_ctx(NULL);
	t_ctx_destroy(ctx3);
	t_ctx_destroy(ctx);
	cr_assert_eq(setrlimit(RLIMIT_NOFILE, &old), 0);
	close(rfd);
	close(wfd);
}

Test(limits, nofile_threads)
{
	nofile(FSAIO_BACKEND_THREADS);
}

Test(limits, nofile_uring)
{
	nofile(FSAIO_BACKEND_URING);
}

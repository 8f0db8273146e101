/* SPDX-License-Identifier: MIT */
/*
 * Allocation failure at every site of the engine. This program defines
 * malloc, calloc, realloc and posix_memalign itself, so every call in the
 * process comes here first and goes on to the next definition (libc's, or
 * a sanitizer's). While a run is armed, the Nth call made from libfsaio's
 * own code fails (calls from elsewhere are not counted: a sanitizer's
 * runtime cannot survive a failed allocation of its own; a thread that
 * cannot be started is test_limits' business). For N = 1, 2, ... a child process runs the
 * same work with the Nth call failing, until a run needs fewer than N
 * calls and so passes with nothing failed. Every run must end without a
 * crash or a leak (LeakSanitizer in the ASan build); fsaio_ctx_create
 * either succeeds or fails cleanly with -ENOMEM; every accepted request
 * gets exactly one event, full or -ENOMEM/-EAGAIN, with the data right.
 */
#include "f_helpers.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

TestSuite(alloc, .init = t_setup, .fini = t_teardown, .timeout = 110);

#define RSIZE (4 * MiB)
#define NREQ 24
#define RLEN (64 * KiB)
#define WLEN (16 * KiB)
#define RSEED 91u
#define WSEED 92u
#define WSEED_OLD 93u
#define MAX_N 5000
#define DONE_STATUS 10          /* a child's run that had nothing to fail */

/* ------------------------------------------------------------------ */
/* The interposer. fail_at and armed are set by the child's own thread  */
/* before it starts anything; calls and injected are atomic because any */
/* thread allocates.                                                    */

/* The interposer runs before a sanitizer's runtime is set up (the dynamic
 * linker allocates while the runtime starts), so it is not instrumented. */
#define NO_SAN __attribute__((no_sanitize("address", "thread", "undefined")))

static void *(*next_malloc)(size_t);
static void *(*next_calloc)(size_t, size_t);
static void *(*next_realloc)(void *, size_t);
static int (*next_posix_memalign)(void **, size_t, size_t);
static void (*next_free)(void *);

static atomic_bool armed;
static void *engine_base;       /* libfsaio's load address, set before arming */
static atomic_ulong calls;
static unsigned long fail_at;   /* 0: never */
static atomic_bool injected;

/* dlsym may allocate while the next definitions are being looked up:
 * those calls are served from this arena, and never freed. */
static _Alignas(64) char boot[16384];
static size_t boot_used;
static atomic_bool resolving;

NO_SAN static void *boot_alloc(size_t n)
{
	size_t at = (boot_used + 63) & ~(size_t)63;

	if (at + n > sizeof(boot))
		return NULL;
	boot_used = at + n;
	return boot + at;
}

NO_SAN static bool in_boot(const void *p)
{
	return (const char *)p >= boot && (const char *)p < boot + sizeof(boot);
}

NO_SAN static void resolve(void)
{
	if (next_free)
		return;
	atomic_store(&resolving, true);
	next_malloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
	next_calloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "calloc");
	next_realloc = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
	next_posix_memalign = (int (*)(void **, size_t, size_t))dlsym(RTLD_NEXT, "posix_memalign");
	void (*f)(void *) = (void (*)(void *))dlsym(RTLD_NEXT, "free");
	atomic_store(&resolving, false);
	if (!next_malloc || !next_calloc || !next_realloc || !next_posix_memalign || !f) {
		static const char msg[] = "test_alloc: cannot find the allocator behind this one\n";
		ssize_t w = write(2, msg, sizeof(msg) - 1);
		(void)w;
		_exit(2);
	}
	next_free = f;
}

/* Whether this call, made from caller, is the one to fail. */
NO_SAN static bool fail_now(const void *caller)
{
	Dl_info di;

	if (!atomic_load_explicit(&armed, memory_order_relaxed))
		return false;
	if (!dladdr(caller, &di) || di.dli_fbase != engine_base)
		return false;
	if (atomic_fetch_add(&calls, 1) + 1 != fail_at)
		return false;
	atomic_store(&injected, true);
	return true;
}

NO_SAN void *malloc(size_t n)
{
	if (atomic_load(&resolving))
		return boot_alloc(n);
	resolve();
	if (fail_now(__builtin_return_address(0))) {
		errno = ENOMEM;
		return NULL;
	}
	return next_malloc(n);
}

NO_SAN void *calloc(size_t n, size_t size)
{
	if (atomic_load(&resolving))
		return boot_alloc(n * size);    /* zeroed: the arena is never reused */
	resolve();
	if (fail_now(__builtin_return_address(0))) {
		errno = ENOMEM;
		return NULL;
	}
	return next_calloc(n, size);
}

NO_SAN void *realloc(void *p, size_t n)
{
	resolve();
	if (fail_now(__builtin_return_address(0))) {
		errno = ENOMEM;
		return NULL;
	}
	if (in_boot(p)) {
		void *q = next_malloc(n);
		if (q)
			memcpy(q, p, n);
		return q;
	}
	return next_realloc(p, n);
}

NO_SAN int posix_memalign(void **pp, size_t align, size_t n)
{
	resolve();
	if (fail_now(__builtin_return_address(0)))
		return ENOMEM;
	return next_posix_memalign(pp, align, n);
}

NO_SAN void free(void *p)
{
	if (!p || in_boot(p))
		return;
	resolve();
	next_free(p);
}

/* ------------------------------------------------------------------ */
/* One run, in a child: the work with the Nth allocation failing.       */

static struct f_op ops[NREQ];
static uint8_t bufs[NREQ][RLEN];

static bool res_ok(int64_t res, int64_t want)
{
	return res == want || res == -ENOMEM || res == -EAGAIN;
}

/* Assertions here end the child with status 1 (t_fail); the parent says
 * which N it was. No allocation of the test's own while armed. */
static void child_run(uint32_t backend, int rfd, int wfd, unsigned long n)
{
	fsaio_ctx_t *ctx = NULL;
	struct fsaio_params p = { .miss_backend = backend };

	for (unsigned i = 0; i < NREQ; i++) {
		struct f_op *o = &ops[i];
		f_op_prep(o, i, rfd, wfd, bufs[i], RLEN, WLEN, WSEED);
		o->res = -EINPROGRESS;
	}

	Dl_info di;
	cr_assert(dladdr((void *)fsaio_ctx_create, &di), "dladdr(fsaio_ctx_create)");
	engine_base = di.dli_fbase;
	fail_at = n;
	atomic_store(&calls, 0);
	atomic_store(&armed, true);

	int r = T_CALL(fsaio_ctx_create(&p, &ctx));
	if (r) {
		atomic_store(&armed, false);
		cr_assert_eq(r, -ENOMEM, "fsaio_ctx_create: %d, want 0 or -ENOMEM", r);
		cr_assert_null(ctx);
		cr_assert(atomic_load(&injected), "fsaio_ctx_create failed with nothing failed");
		exit(0);
	}
	unsigned sent = 0, reaped = 0;
	uint64_t end = t_now_ns() + (uint64_t)T_EVENT_TIMEOUT_MS * 1000000u;
	while (reaped < NREQ) {
		cr_assert_lt(t_now_ns(), end, "%u of %u events", reaped, NREQ);
		if (sent < NREQ) {
			struct fsaio_req *rp[NREQ];
			for (unsigned i = sent; i < NREQ; i++)
				rp[i - sent] = &ops[i].r;
			r = T_CALL(fsaio_submit(ctx, rp, NREQ - sent));
			cr_assert(r > 0 || r == -ENOMEM || r == -EAGAIN, "fsaio_submit: %d", r);
			if (r > 0) {
				sent += (unsigned)r;
			} else {
				/* Refused: not in flight, and never will be. */
				ops[sent].res = r;
				ops[sent].nev = -1;
				sent++;
				reaped++;
			}
		}
		if (sent == reaped)
			continue;
		struct fsaio_event evs[NREQ];
		struct timespec ts = { 0, 10000000 };
		r = T_CALL(fsaio_getevents(ctx, 1, NREQ, evs, &ts));
		cr_assert_geq(r, 0, "fsaio_getevents: %d", r);
		for (int k = 0; k < r; k++) {
			struct f_op *o = evs[k].user_data;
			cr_assert(o >= ops && o < ops + NREQ && evs[k].req == &o->r, "a stray event");
			cr_assert_eq(++o->nev, 1, "a request completed twice");
			o->res = evs[k].res;
			int64_t want = o->kind == 2 ? 0 : (int64_t)o->r.len;
			cr_assert(res_ok(o->res, want), "op %d: res %lld, want %lld or -ENOMEM/-EAGAIN",
				  o->kind, (long long)o->res, (long long)want);
			if (o->kind == 0 && o->res == want)
				t_check_pattern(o->r.buf, RLEN, (uint64_t)o->r.offset, RSEED);
		}
		reaped += (unsigned)r;
	}
	struct fsaio_stats st;
	r = T_CALL(fsaio_get_stats(ctx, &st));
	cr_assert_eq(r, 0);
	r = T_CALL(fsaio_event_fd(ctx));
	cr_assert(r >= 0 || r == -ENOMEM, "fsaio_event_fd: %d", r);
	r = T_CALL(fsaio_ctx_destroy(ctx));
	cr_assert_eq(r, 0, "fsaio_ctx_destroy: %d", r);
	atomic_store(&armed, false);

	for (unsigned i = 0; i < NREQ; i++)
		if (ops[i].kind == 1)
			t_check_file(wfd, (uint64_t)i * WLEN, WLEN, ops[i].res == (int64_t)WLEN ? WSEED : WSEED_OLD);
	/* exit, not _exit: LeakSanitizer checks at exit. */
	exit(atomic_load(&injected) ? 0 : DONE_STATUS);
}

static void sweep(uint32_t backend)
{
	int rfd = t_tmpfile(RSIZE, RSEED);
	int wfd = t_tmpfile(NREQ * WLEN, WSEED_OLD);
	unsigned long n;

	for (n = 1; n <= MAX_N; n++) {
		/* Cold for each run, and the written blocks back to the old
		 * data, so a write that failed is told from one that did not. */
		t_make_cold(rfd);
		cr_assert_eq(ftruncate(wfd, 0), 0);
		close(wfd);
		wfd = t_tmpfile(NREQ * WLEN, WSEED_OLD);
		fflush(NULL);
		pid_t pid = fork();
		cr_assert_geq(pid, 0);
		if (pid == 0)
			child_run(backend, rfd, wfd, n);
		int st = t_waitpid_bounded(pid, 30000);
		if (WIFEXITED(st) && WEXITSTATUS(st) == DONE_STATUS)
			break;
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0,
			  "run failing allocation %lu: status %#x", n, st);
	}
	cr_assert_leq(n, MAX_N, "still failing allocations after %d runs", MAX_N);
	printf("alloc/%s: allocation 1..%lu failed in turn, one per run; run %lu had none to fail\n",
	       backend == FSAIO_BACKEND_URING ? "uring" : "threads", n - 1, n);
	close(rfd);
	close(wfd);
}

Test(alloc, threads)
{
	sweep(FSAIO_BACKEND_THREADS);
}

Test(alloc, uring)
{
	sweep(FSAIO_BACKEND_URING);
}

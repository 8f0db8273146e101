/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: the POSIX AIO drop-in's engine contexts. Two, made on first use:
 * PX_SIGNALLED carries the requests notified by a signal (their own or
 * their list's; px__sev_signals) with worker threads only; PX_PLAIN the
 * others with the engine's choice (io_uring where it serves). io_uring
 * runs a request's completion work in the submitting thread, which wakes
 * a sigwaitinfo(2) sleeping there with EINTR: that is where POSIX AIO
 * programs wait for their signals. Every context completes through the callback given at
 * init (px__engine_init): this file knows nothing of requests.
 *
 * Locks: ctx_lock guards creation and is held across the fork; start.c
 * takes it before the request queues' locks (core.c), never after.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine.h"
#include "notify.h"

#define PX_DEPTH (1u << 20)     /* the engine's limit: requests in flight */

static pthread_mutex_t ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic(fsaio_ctx_t *) engine[PX_NCTX];  /* set under ctx_lock; read with acquire */
static fsaio_ctx_t *stale_engine[PX_NCTX];      /* ctx_lock: the parent's, in a forked child */
static unsigned want_workers;           /* ctx_lock: aio_init's aio_threads */

/* Written once by px__engine_init, before any context is made. */
static void (*complete_fn)(void *arg, const struct fsaio_event *ev);

void px__engine_init(void (*complete)(void *arg, const struct fsaio_event *ev))
{
	complete_fn = complete;
}

void px__engine_fork_prepare(void)
{
	pthread_mutex_lock(&ctx_lock);
}

void px__engine_fork_parent(void)
{
	pthread_mutex_unlock(&ctx_lock);
}

void px__engine_fork_child(void)
{
	/* The engine's own fork handler makes the old context answer only
	 * to destroy (memory only); the next px__engine does that. */
	for (int i = 0; i < PX_NCTX; i++) {
		stale_engine[i] = atomic_load_explicit(&engine[i], memory_order_relaxed);
		atomic_store_explicit(&engine[i], NULL, memory_order_relaxed);
	}
	pthread_mutex_unlock(&ctx_lock);
}

/* FSAIO_STATS=1: the engine's counters on stderr at exit, one line. */
void px__engine_print_stats(void)
{
	struct fsaio_stats sum = { 0 }, st;
	bool any = false;

	for (int i = 0; i < PX_NCTX; i++) {
		fsaio_ctx_t *c = atomic_load_explicit(&engine[i], memory_order_acquire);

		if (!c || fsaio_get_stats(c, &st) != 0)
			continue;
		any = true;
		sum.requests += st.requests;
		sum.completed_inline += st.completed_inline;
		sum.partial_inline += st.partial_inline;
		sum.queued += st.queued;
		sum.cancelled += st.cancelled;
		sum.bytes_inline += st.bytes_inline;
		sum.bytes_worker += st.bytes_worker;
		sum.bytes_uring += st.bytes_uring;
	}
	if (!any)
		return;
	fprintf(stderr, "libfsaio-posixaio[%d]: requests %llu inline %llu partial %llu "
		"queued %llu cancelled %llu bytes_inline %llu bytes_worker %llu bytes_uring %llu\n",
		(int)getpid(), (unsigned long long)sum.requests,
		(unsigned long long)sum.completed_inline, (unsigned long long)sum.partial_inline,
		(unsigned long long)sum.queued, (unsigned long long)sum.cancelled,
		(unsigned long long)sum.bytes_inline, (unsigned long long)sum.bytes_worker,
		(unsigned long long)sum.bytes_uring);
}

void px__set_workers(unsigned n)
{
	pthread_mutex_lock(&ctx_lock);
	want_workers = n;
	pthread_mutex_unlock(&ctx_lock);
}

/* The context for r: FSAIO_BACKEND, when set, applies to both. */
int px__ctx_kind(const struct px_req *r)
{
	if (px__sev_signals(&r->sev) || (r->group && px__sev_signals(&r->group->sev)))
		return PX_SIGNALLED;
	return PX_PLAIN;
}

fsaio_ctx_t *px__engine(int kind)
{
	fsaio_ctx_t *c = atomic_load_explicit(&engine[kind], memory_order_acquire);
	struct fsaio_params p = { 0 };

	if (c)
		return c;
	pthread_mutex_lock(&ctx_lock);
	c = atomic_load_explicit(&engine[kind], memory_order_relaxed);
	if (!c) {
		if (stale_engine[kind]) {
			fsaio_ctx_destroy(stale_engine[kind]);
			stale_engine[kind] = NULL;
		}
		p.queue_depth = PX_DEPTH;
		p.workers = want_workers;
		p.complete = complete_fn;
		p.complete_arg = px__engine_tag(kind);
		if (kind == PX_SIGNALLED && !getenv("FSAIO_BACKEND"))
			p.miss_backend = FSAIO_BACKEND_THREADS;
		if (fsaio_ctx_create(&p, &c) == 0)
			atomic_store_explicit(&engine[kind], c, memory_order_release);
		else
			c = NULL;
	}
	pthread_mutex_unlock(&ctx_lock);
	return c;
}


fsaio_ctx_t *px__engine_now(int kind)
{
	return atomic_load_explicit(&engine[kind], memory_order_acquire);
}

/* Tells the completion callback which context calls it. */
void *px__engine_tag(int kind)
{
	static char tags[PX_NCTX];

	return &tags[kind];
}

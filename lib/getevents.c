/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: waiting for events (fsaio_getevents) and the eventfd.
 *
 * A caller short of events first carries the io_uring ring itself
 * (fsaio__uring_drive): it harvests the CQEs there are and sleeps in
 * io_uring_enter, so a ring completion reaches it without a thread hop.
 * When the ring is not its to carry (no requests there, another caller
 * carries it, or an eventfd user keeps the ring's thread at it), it sleeps
 * on the futex cq.seq, woken by the post of any executor. A futex, not a
 * condition variable, so that a signal interrupts getevents with -EINTR as
 * it does io_getevents.
 */
#include <errno.h>
#include <linux/futex.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "monoclock.h"
#include "nocancel.h"
#include "cq.h"
#include "ctx.h"
#include "dropin.h"
#include "req.h"
#include "usercopy.h"

/* now + timeout on the monotonic clock, saturating: a timeout too large to
 * add is a wait without end, as the kernel treats it. */
static int64_t deadline_after(const struct timespec *t)
{
	int64_t now = fsaio__mono_ns();
	int64_t left = INT64_MAX - now;

	if (t->tv_sec >= left / 1000000000)
		return INT64_MAX;
	left = t->tv_sec * 1000000000LL + t->tv_nsec;
	return now + left;
}

/* Sleep on cq.seq while it is still seen, until deadline: 0 or -EINTR.
 * cq.lock held on entry and on return. */
static int sleep_on_cq(struct fsaio_ctx *ctx, uint32_t seen, int64_t deadline)
{
	struct fsaio__cq *cq = &ctx->cq;
	struct timespec rel, *relp = NULL;
	long r;

	if (atomic_load(&cq->seq) != seen)
		return 0;
	if (deadline != INT64_MAX) {
		int64_t left = deadline - fsaio__mono_ns();

		if (left <= 0)
			return 0;
		rel.tv_sec = left / 1000000000;
		rel.tv_nsec = left % 1000000000;
		relp = &rel;
	}
	cq->sleepers++;
	FSAIO__INC(ctx, reaper_sleeps, 1);
	pthread_mutex_unlock(&cq->lock);
	fsaio__uring_need(&ctx->uring, 1);
	r = syscall(SYS_futex, &cq->seq, FUTEX_WAIT_PRIVATE, seen, relp, NULL, 0);
	fsaio__uring_need(&ctx->uring, -1);
	pthread_mutex_lock(&cq->lock);
	return r < 0 && errno == EINTR ? -EINTR : 0;
}

static int getevents_body(fsaio_ctx_t *ctx, unsigned min_nr, unsigned nr,
			  struct fsaio_event *events, const struct timespec *timeout)
{
	struct fsaio__cq *cq;
	struct timespec t;
	int64_t deadline = INT64_MAX;
	unsigned got = 0;
	bool polled = false;
	int saved = errno, n;

	if (!fsaio__ctx_ok(ctx) || min_nr > nr)
		return -EINVAL;
	if (nr && !events)
		return -EFAULT;
	if (timeout) {
		if (fsaio__copy_user(&t, timeout, sizeof(t)))
			return -EFAULT;
		if (t.tv_sec < 0 || t.tv_nsec < 0 || t.tv_nsec >= 1000000000)
			return -EINVAL;
		deadline = deadline_after(&t);
	}
	fsaio__uring_back(&ctx->uring);
	cq = &ctx->cq;
	pthread_mutex_lock(&cq->lock);
	for (;;) {
		uint32_t seen;
		bool expired;
		int r;

		n = fsaio__cq_take(cq, nr - got, events + got);
		if (n < 0)
			break;
		got += (unsigned)n;
		if (got >= min_nr || got == nr)
			break;
		/* A timeout that has passed still gets one look at the ring. */
		expired = deadline != INT64_MAX && fsaio__mono_ns() >= deadline;
		if (expired && polled)
			break;
		seen = atomic_load(&cq->seq);
		pthread_mutex_unlock(&cq->lock);
		r = fsaio__uring_drive(&ctx->uring, &cq->seq, seen, expired ? 0 : deadline);
		pthread_mutex_lock(&cq->lock);
		polled = expired;
		if (r == -EAGAIN && !expired)
			r = sleep_on_cq(ctx, seen, deadline);
		/* A signal ends the wait, as it ends io_getevents: what was
		 * collected is returned, and -EINTR only when that is nothing. */
		if (r == -EINTR) {
			n = fsaio__cq_take(cq, nr - got, events + got);
			if (n > 0)
				got += (unsigned)n;
			else if (!n)
				n = -EINTR;
			break;
		}
	}
	pthread_mutex_unlock(&cq->lock);
	errno = saved;
	/* What was collected; else a fault writing events, or the signal. */
	return got ? (int)got : n < 0 ? n : 0;
}

FSAIO__API int fsaio_getevents(fsaio_ctx_t *ctx, unsigned min_nr, unsigned nr,
			       struct fsaio_event *events, const struct timespec *timeout)
{
	return FSAIO__NOCANCEL(getevents_body(ctx, min_nr, nr, events, timeout));
}

/* Readable exactly while events are pending (cq.c). Its reader relies on
 * the ring's thread for the ring's completions, from now on. */
FSAIO__API int fsaio_event_fd(fsaio_ctx_t *ctx)
{
	bool created;
	int fd;

	if (!fsaio__ctx_ok(ctx))
		return -EINVAL;
	fd = fsaio__cq_efd(&ctx->cq, &created);
	if (created)
		fsaio__uring_need(&ctx->uring, 1);
	return fd;
}

/* The drop-ins' way to the context's ring (dropin.h). */
int fsaio__drive(fsaio_ctx_t *ctx, const _Atomic uint32_t *word, uint32_t seen, int64_t deadline)
{
	return fsaio__uring_drive(&ctx->uring, word, seen, deadline);
}

int fsaio__drive_cancellable(fsaio_ctx_t *ctx, const _Atomic uint32_t *word, uint32_t seen,
			     int64_t deadline)
{
	return fsaio__uring_drive_cancellable(&ctx->uring, word, seen, deadline);
}

void fsaio__drive_back(fsaio_ctx_t *ctx)
{
	fsaio__uring_back(&ctx->uring);
}

void fsaio__drive_need(fsaio_ctx_t *ctx, int delta)
{
	fsaio__uring_need(&ctx->uring, delta);
}

void fsaio__drive_kick(fsaio_ctx_t *ctx)
{
	fsaio__uring_kick(&ctx->uring);
}

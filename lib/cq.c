/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: the completion queue.
 *
 * A ring of queue_depth events under cq.lock. It cannot overflow: submit
 * reserves a slot in the context's in_flight (cq.in_flight points at it)
 * for every request it accepts and getevents gives it back, so events
 * pending <= requests in flight <= depth.
 *
 * The queue is given what it uses (cq.h): the callback, the slot count, the
 * counters and the ring's waiter flag are wired in by ctx.c, and a context
 * handed to fsaio__complete is only the way to its queue (parts.h).
 *
 * A post bumps cq.seq, the futex word getevents sleeps on (getevents.c),
 * and wakes the sleepers only when one went to sleep since the last
 * wake-up: once per sleep, however many completions arrive meanwhile. A
 * caller waiting in the io_uring ring instead (ring_waiter) is kicked out
 * of it. A context with a delivery hook hands its events over instead, and
 * the hook moves the word its own waiters watch (fsaio__set_deliver).
 *
 * The eventfd is created on first request (most callers never poll it) and
 * is kept readable exactly while events are pending: written on the
 * empty -> non-empty transition, drained when the ring empties.
 */
#include <errno.h>
#include <linux/futex.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "counters.h"
#include "cq.h"
#include "dropin.h"
#include "parts.h"
#include "req.h"
#include "usercopy.h"

int fsaio__cq_init(struct fsaio__cq *cq, unsigned depth,
		   void (*complete_cb)(void *, const struct fsaio_event *), void *complete_arg)
{
	unsigned size = complete_cb ? 1 : depth;

	cq->ring = calloc(size, sizeof(*cq->ring));
	if (!cq->ring)
		return -ENOMEM;
	cq->size = size;
	cq->complete_cb = complete_cb;
	cq->complete_arg = complete_arg;
	cq->efd = -1;
	pthread_mutex_init(&cq->lock, NULL);
	return 0;
}

void fsaio__cq_forget(struct fsaio__cq *cq)
{
	if (cq->efd >= 0)
		close(cq->efd);
	free(cq->ring);
}

void fsaio__cq_fini(struct fsaio__cq *cq)
{
	if (cq->efd >= 0)
		close(cq->efd);
	pthread_mutex_destroy(&cq->lock);
	free(cq->ring);
}

static void efd_write(int efd)
{
	uint64_t one = 1;
	int saved = errno;

	/* Cannot fail short of a bug: the counter is 0 or 1 here. */
	if (write(efd, &one, sizeof(one)) < 0)
		errno = saved;
}

static void efd_drain(int efd)
{
	uint64_t v;
	int saved = errno;

	if (read(efd, &v, sizeof(v)) < 0)
		errno = saved;
}

static void futex_wake_all(_Atomic uint32_t *word)
{
	syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
}

/* After the waiters' word moved: seq, or a delivery hook's own (Dekker
 * with the ring's waiter, uring.h: it sets the flag, then reads the word). The
 * waiter clears the flag itself; exchanging it here makes one poster of
 * many kick. The poster is never the waiter: it posts only
 * outside the ring. */
static void kick_ring_waiter(struct fsaio__cq *cq)
{
	_Atomic bool *w = cq->ring_waiter;

	if (atomic_load(w) && atomic_exchange(w, false))
		cq->kick(cq->kick_arg);
}

/* Post n events. With a completion callback they go there instead, and the
 * requests' slots are given back at once. */
void fsaio__post(struct fsaio__cq *cq, const struct fsaio_event *ev, unsigned n)
{
	bool wake;

	if (!n)
		return;
	if (cq->complete_cb) {
		/* The slots first: the callback may submit the request again.
		 * A delivery hook's caller counts its own, and moves its own
		 * word for its waiters (fsaio__set_deliver). */
		if (cq->deliver) {
			cq->deliver(cq->complete_arg, ev, n);
		} else {
			for (unsigned i = 0; i < n; i++) {
				atomic_fetch_sub_explicit(cq->in_flight, 1, memory_order_release);
				cq->complete_cb(cq->complete_arg, &ev[i]);
			}
			atomic_fetch_add(&cq->seq, 1);
		}
		kick_ring_waiter(cq);
		return;
	}
	pthread_mutex_lock(&cq->lock);
	for (unsigned i = 0; i < n; i++)
		cq->ring[(cq->head + cq->count + i) % cq->size] = ev[i];
	cq->count += n;
	if (cq->efd >= 0 && !cq->efd_set) {
		efd_write(cq->efd);
		cq->efd_set = true;
	}
	atomic_fetch_add(&cq->seq, 1);
	/* Once per sleep: whoever this wakes takes what later posts add
	 * before it sleeps again. */
	wake = cq->sleepers > 0;
	cq->sleepers = 0;
	pthread_mutex_unlock(&cq->lock);
	if (wake) {
		FSAIO__COUNT(cq->st, reaper_wakeups, 1);
		futex_wake_all(&cq->seq);
	}
	kick_ring_waiter(cq);
}

void fsaio__batch_flush(struct fsaio_ctx *ctx, struct fsaio__batch *b)
{
	fsaio__post(fsaio__parts(ctx)->cq, b->ev, b->n);
	b->n = 0;
}

/* Post req's event (into b when the submitter batches). The request is the
 * caller's again once posted: nothing here touches it afterwards. */
void fsaio__complete(struct fsaio_ctx *ctx, struct fsaio_req *req, int64_t res,
		     struct fsaio__batch *b)
{
	struct fsaio__cq *cq = fsaio__parts(ctx)->cq;
	struct fsaio_event ev = {
		.user_data = req->user_data,
		.req = req,
		.res = res,
		.res2 = res == -ECANCELED ? (int64_t)req->done_ : 0,
	};

	if (res == -ECANCELED)
		FSAIO__COUNT(cq->st, cancelled, 1);
	if (req->run_fd_ & FSAIO__RUN_BOUND)
		close(fsaio__fd(req));
	fsaio__state_set(req, FSAIO__DONE);
	if (b) {
		b->ev[b->n++] = ev;
		if (b->n == FSAIO__BATCH)
			fsaio__batch_flush(ctx, b);
	} else {
		fsaio__post(cq, &ev, 1);
	}
}

int fsaio__cq_take(struct fsaio__cq *cq, unsigned nr, struct fsaio_event *out)
{
	unsigned k = cq->count < nr ? cq->count : nr, head = cq->head;

	/* In at most two runs (the queue wraps), into the caller's memory:
	 * the events are taken only when all are copied. */
	for (unsigned i = 0; i < k;) {
		unsigned run = cq->size - head < k - i ? cq->size - head : k - i;

		if (fsaio__copy_user(out + i, &cq->ring[head], run * sizeof(*out)))
			return -EFAULT;
		i += run;
		head = (head + run) % cq->size;
	}
	cq->head = head;
	cq->count -= k;
	if (!cq->count && cq->efd_set) {
		efd_drain(cq->efd);
		cq->efd_set = false;
	}
	if (k)
		atomic_fetch_sub_explicit(cq->in_flight, k, memory_order_release);
	return (int)k;
}

/* The eventfd, created on first use; *created says this call made it. The
 * fd or -errno. */
int fsaio__cq_efd(struct fsaio__cq *cq, bool *created)
{
	int fd, saved = errno;

	*created = false;
	pthread_mutex_lock(&cq->lock);
	if (cq->efd < 0) {
		cq->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (cq->efd < 0) {
			fd = -errno;
			pthread_mutex_unlock(&cq->lock);
			errno = saved;
			return fd;
		}
		*created = true;
		if (cq->count) {
			efd_write(cq->efd);
			cq->efd_set = true;
		}
	}
	fd = cq->efd;
	pthread_mutex_unlock(&cq->lock);
	return fd;
}

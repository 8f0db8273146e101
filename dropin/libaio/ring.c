/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: the completion ring and waiting for it.
 *
 * Completions are published in the kernel's struct aio_ring layout: the
 * engine's delivery hook (any thread) writes a batch's io_events at tail
 * and stores the new tail with release under ctx->lock; reapers load tail
 * with acquire, copy, and store head with release. io_getevents reaps under
 * ctx->reap_lock; a program may also reap by itself, as it can from the
 * kernel's ring, without any lock (like the kernel, we trust only
 * head % nr).
 *
 * Slots follow the kernel's reqs_available rule: a request takes a slot at
 * submit, and its slot comes back only once its event has left the ring.
 * Because a program can advance head behind our back, the credit is taken
 * lazily, when a submit finds no slot: what left the ring since the last
 * look is (unsettled - events now in the ring). Hence in_flight + events in
 * the ring <= capacity = ring->nr - 1 always, and the ring cannot overflow.
 *
 * A waiter first carries the engine's io_uring ring itself (fsaio__drive):
 * it sleeps in io_uring_enter and the completions it harvests are published
 * here by our callback in its own thread, with no thread hop. When the ring
 * is not its to carry, it sleeps on the futex word ctx->seq, never on a
 * condition variable, so that a signal handler interrupts io_getevents
 * with -EINTR as the kernel's does. The wait always has a deadline (an absolute
 * FUTEX_WAIT_BITSET), because an untimed futex wait is silently restarted
 * after an SA_RESTART handler, and the kernel's io_getevents never is.
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "dropin.h"
#include "monoclock.h"
#include "resfd.h"
#include "ring.h"
#include "usercopy.h"
#include "usermem.h"
#include "wake.h"

#define NSEC 1000000000LL
/* ktime's limit: a timeout of this many seconds or more never expires. */
#define KTIME_SEC_MAX (INT64_MAX / NSEC)

static uint32_t ring_count(const struct shim_ring *r, uint32_t head, uint32_t tail)
{
	return tail >= head ? tail - head : r->nr - head + tail;
}

/* Take a free slot, ctx->lock held. */
static struct shim_slot *slot_pop(struct shim_ctx *c)
{
	struct shim_slot *s = c->free;

	if (s) {
		c->free = s->next_free;
		return s;
	}
	/* Slots never handed out stay untouched (io_setup does not write
	 * them), so a context costs only the memory it uses. */
	if (c->used <= c->capacity) {
		s = &c->slots[c->used++];
		s->resfd = -1;
		return s;
	}
	return NULL;
}

static void slot_push(struct shim_ctx *c, struct shim_slot *s)
{
	s->next_free = c->free;
	c->free = s;
}

/* Reserve up to n slots, one per request, in one round of ctx->lock,
 * crediting back what reapers consumed (the kernel's
 * user_refill_reqs_available). Returns how many; fewer: the context is full. */
unsigned shim__take_slots(struct shim_ctx *c, unsigned n, struct shim_slot **out)
{
	unsigned got = 0;
	struct shim_slot *s;

	pthread_mutex_lock(&c->lock);
	if (c->avail < n) {
		struct shim_ring *r = c->ring;
		uint32_t head = atomic_load_explicit(&r->head, memory_order_acquire) % r->nr;
		uint32_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
		uint32_t in_ring = ring_count(r, head, tail);

		/* A program that wrote nonsense into head gets no credit. */
		if (in_ring <= c->unsettled) {
			c->avail += c->unsettled - in_ring;
			c->unsettled = in_ring;
		}
	}
	while (got < n && c->avail && (s = slot_pop(c))) {
		c->avail--;
		c->in_flight++;
		s->busy = true;
		/* io_cancel finds it only once it is prepared. */
		__atomic_store_n(&s->obj, 0, __ATOMIC_RELAXED);
		out[got++] = s;
	}
	pthread_mutex_unlock(&c->lock);
	return got;
}

/* Give back n slots whose requests were never accepted by the engine,
 * what their decode took already given back (submit.c). */
void shim__slots_release(struct shim_ctx *c, struct shim_slot **slots, unsigned n)
{
	if (!n)
		return;
	pthread_mutex_lock(&c->lock);
	for (unsigned i = 0; i < n; i++) {
		slots[i]->busy = false;
		c->avail++;
		c->in_flight--;
		slot_push(c, slots[i]);
	}
	pthread_mutex_unlock(&c->lock);
}

/* Write one event at tail and retire its slot; ctx->lock held. */
static void publish_locked(struct shim_ctx *c, struct shim_slot *s, const struct fsaio_event *ev)
{
	struct shim_ring *r = c->ring;
	uint32_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
	struct io_event *out = &r->io_events[tail];

	out->data = s->data;
	out->obj = s->obj;
	/* The kernel ends a cancelled poll with the events seen then: none. */
	if (s->opcode == IOCB_CMD_POLL && ev->res == -ECANCELED) {
		out->res = 0;
		out->res2 = 0;
	} else {
		out->res = ev->res;
		out->res2 = ev->res2;
	}
	atomic_store_explicit(&r->tail, (tail + 1) % r->nr, memory_order_release);
	c->unsettled++;
	c->in_flight--;
	s->busy = false;
	if (s->pinned)
		s->free_on_unpin = true;
	else
		slot_push(c, s);
}

/* Events put in the ring per round of ctx->lock. */
#define DELIVER_CHUNK 32

/*
 * The engine's delivery hook: a batch of completions, in the thread that
 * has them (the submitter for inline ones, a worker, the ring's). Per chunk,
 * what the slots hold besides the event is taken off them, and the events
 * go into the ring in one round of ctx->lock, the slots with them. An event
 * with an eventfd is signalled after it is in the ring (resfd.c), and its
 * reapers are woken after that write, as the kernel's aio_complete signals
 * before it wakes; the others' reapers are woken here, once per chunk.
 */
void shim__deliver(void *arg, const struct fsaio_event *ev, unsigned n)
{
	struct shim_ctx *c = arg;
	int saved = errno;

	for (unsigned at = 0; at < n; at += DELIVER_CHUNK) {
		unsigned k = n - at < DELIVER_CHUNK ? n - at : DELIVER_CHUNK, nfd = 0;
		int resfd[DELIVER_CHUNK];
		struct shim_efd *resfd_e[DELIVER_CHUNK];

		for (unsigned i = at; i < at + k; i++) {
			struct shim_slot *s = ev[i].user_data;

			if (s->iov != s->iov_inline) {
				free(s->iov);
				s->iov = s->iov_inline;
			}
			if (s->resfd >= 0) {
				resfd[nfd] = s->resfd;
				resfd_e[nfd++] = s->resfd_e;
				s->resfd = -1;
				s->resfd_e = NULL;
			}
		}
		pthread_mutex_lock(&c->lock);
		for (unsigned i = at; i < at + k; i++)
			publish_locked(c, ev[i].user_data, &ev[i]);
		pthread_mutex_unlock(&c->lock);
		for (unsigned i = 0; i < nfd; i++) {
			shim__resfd_signal(c, resfd[i], resfd_e[i]);
			fsaio__drive_need(c->engine, -1);
		}
		if (nfd)
			shim__resfd_flush();
		else
			shim__wake(c);
	}
	errno = saved;
}

/* The callback that makes the engine's context a callback one; with the
 * delivery hook set (context.c), the engine hands every batch to that instead. */
void shim__complete(void *arg, const struct fsaio_event *ev)
{
	shim__deliver(arg, ev, 1);
}

/* Copy up to nr events out of the ring into the caller's out, reap_lock
 * held: how many, or -EFAULT with none taken when out cannot be written
 * (the kernel's aio_read_events_ring moves the head only after its copies
 * succeed). */
static long reap(struct shim_ctx *c, long nr, struct io_event *out)
{
	struct shim_ring *r = c->ring;
	uint32_t head = atomic_load_explicit(&r->head, memory_order_relaxed) % r->nr;
	uint32_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);
	long got = 0;

	while (got < nr && head != tail) {
		uint32_t run = (tail > head ? tail : r->nr) - head;

		if ((long)run > nr - got)
			run = (uint32_t)(nr - got);
		if (fsaio__copy_user(out + got, &r->io_events[head], run * sizeof(*out)))
			return -EFAULT;
		got += run;
		head = (head + run) % r->nr;
	}
	if (got)
		atomic_store_explicit(&r->head, head, memory_order_release);
	return got;
}

static long reap_locked(struct shim_ctx *c, long nr, struct io_event *out)
{
	long got;

	if (nr <= 0)
		return 0;
	pthread_mutex_lock(&c->reap_lock);
	got = reap(c, nr, out);
	pthread_mutex_unlock(&c->reap_lock);
	return got;
}

static bool ring_empty(const struct shim_ctx *c)
{
	struct shim_ring *r = c->ring;

	return atomic_load_explicit(&r->head, memory_order_relaxed) % r->nr ==
	       atomic_load_explicit(&r->tail, memory_order_acquire);
}

/* The kernel turns the relative timeout into ktime without checking it:
 * seconds past ktime's range (negative ones included) mean forever, and so
 * does a sum that comes out negative (measured on 6.18: {0, -5} never
 * expires); 0 means poll. Returns -1 for forever. */
static int64_t timeout_ns(const struct timespec *t)
{
	int64_t ns;

	if (!t || (uint64_t)t->tv_sec >= (uint64_t)KTIME_SEC_MAX)
		return -1;
	ns = (int64_t)t->tv_sec * NSEC + (int64_t)t->tv_nsec;
	return ns < 0 ? -1 : ns;
}

/* Sleep until seq moves past seen, the deadline, or a signal: 0, -ETIMEDOUT
 * or -EINTR. */
static int wait_seq(struct shim_ctx *c, uint32_t seen, int64_t deadline)
{
	struct timespec abs = { .tv_sec = deadline / NSEC, .tv_nsec = deadline % NSEC };
	uint32_t val;
	long r;

	if (!shim__sleep_mark(c, seen, &val))
		return 0;
	r = syscall(SYS_futex, &c->seq, FUTEX_WAIT_BITSET_PRIVATE, val, &abs, NULL,
		    FUTEX_BITSET_MATCH_ANY);
	if (r < 0 && (errno == EINTR || errno == ETIMEDOUT))
		return -errno;
	return 0;
}

static int efd_get(struct shim_ctx *c)
{
	int fd = atomic_load(&c->efd);

	if (fd >= 0)
		return fd;
	pthread_mutex_lock(&c->lock);
	fd = atomic_load(&c->efd);
	if (fd < 0) {
		fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (fd < 0)
			fd = -errno;
		else
			atomic_store(&c->efd, fd);
	}
	pthread_mutex_unlock(&c->lock);
	return fd;
}

/* Sleep in ppoll with the caller's mask in force, as io_pgetevents does.
 * A waiter that drains the eventfd may have eaten another's wake-up, so
 * whoever leaves events behind signals again (pwaiter_end). */
static int wait_efd(int efd, int64_t deadline, const sigset_t *mask)
{
	struct pollfd pfd = { .fd = efd, .events = POLLIN };
	struct timespec rel, *relp = NULL;
	uint64_t v;
	int n;

	if (deadline != INT64_MAX) {
		int64_t left = deadline - fsaio__mono_ns();

		if (left <= 0)
			return -ETIMEDOUT;
		rel.tv_sec = left / NSEC;
		rel.tv_nsec = left % NSEC;
		relp = &rel;
	}
	n = ppoll(&pfd, 1, relp, mask);
	if (n < 0)
		return errno == EINTR ? -EINTR : 0;
	if (n == 0)
		return -ETIMEDOUT;
	if (read(efd, &v, sizeof(v)) < 0)
		return 0;
	return 0;
}

/* The kernel's checks of io_getevents' arguments, in its order: the
 * timeout and the signal mask copied in (get_timespec64() first), then
 * min_nr. 0, *tmo (timeout_ns: < 0 none) and *sigmask pointing at the copy
 * in mask; or -EFAULT or -EINVAL. */
static int getevents_args(long min_nr, long nr, const struct timespec *timeout,
			  const sigset_t **sigmask, sigset_t *mask, int64_t *tmo)
{
	struct timespec t;

	if (timeout && shim__user_copy(&t, timeout, sizeof(t), false))
		return -EFAULT;
	if (*sigmask) {
		sigemptyset(mask);
		if (shim__user_copy(mask, *sigmask, _NSIG / 8, false))
			return -EFAULT;
		*sigmask = mask;
	}
	*tmo = timeout_ns(timeout ? &t : NULL);
	if (min_nr < 0 || min_nr > nr)
		return -EINVAL;
	return 0;
}

/* Reap what the ring holds into events + *got. Where events cannot be
 * written to, the kernel faults only when it has an event to copy: then
 * false, the call ends, with -EFAULT in *got unless events are in hand. */
static bool collect(struct shim_ctx *c, long nr, struct io_event *events, bool events_ok,
		    long *got)
{
	long n = -EFAULT;

	if (events_ok)
		n = reap_locked(c, nr - *got, events + *got);
	else if (nr <= 0 || ring_empty(c))
		n = 0;
	if (n < 0) {
		if (!*got)
			*got = n;
		return false;
	}
	*got += n;
	return true;
}

/* A waiter with a signal mask sleeps in ppoll on the context's eventfd
 * (wait_efd): the eventfd, made on first use, and the waiter counted in
 * pwaiters; or -errno. */
static int pwaiter_begin(struct shim_ctx *c)
{
	int efd = efd_get(c);

	if (efd < 0)
		return efd;
	atomic_fetch_add(&c->pwaiters, 1);
	return efd;
}

/* The waiter leaves: it passes on a wake-up it may have drained. */
static void pwaiter_end(struct shim_ctx *c, int efd)
{
	if (atomic_fetch_sub(&c->pwaiters, 1) > 1 && !ring_empty(c))
		shim__efd_signal(efd);
}

/* Sleep our own way, on the eventfd (efd >= 0) or on seq while it is still
 * seen, until the deadline or a signal: the engine's thread brings the
 * events meanwhile, so it is told we rely on it. What the wait returns. */
static int sleep_own(struct shim_ctx *c, int efd, uint32_t seen, int64_t deadline,
		     const sigset_t *sigmask)
{
	int w;

	fsaio__drive_need(c->engine, 1);
	if (efd >= 0) {
		w = wait_efd(efd, deadline, sigmask);
	} else {
		/* Forever is a deadline far away: only a timed futex wait
		 * turns a handled signal into EINTR. */
		w = wait_seq(c, seen, deadline == INT64_MAX ?
			     fsaio__mono_ns() + (int64_t)3650 * 86400 * NSEC : deadline);
	}
	fsaio__drive_need(c->engine, -1);
	return w;
}

/*
 * io_getevents and io_pgetevents: the kernel's read_events(). Collect events
 * until min_nr are in hand, the timeout passes, or a signal arrives; a
 * signal or timeout returns what was collected, and a signal with nothing
 * collected returns -EINTR. A dead context returns what was collected or
 * -EINVAL.
 */
long shim__getevents(struct shim_ctx *c, long min_nr, long nr, struct io_event *events,
		     const struct timespec *timeout, const sigset_t *sigmask)
{
	int64_t tmo, deadline;
	sigset_t mask;
	long got = 0;
	int efd = -1, ret;
	bool polled = false, harvested = false;
	/* A destination outside the user address range is NULL's case: the
	 * kernel's copy_to_user faults once it has an event to copy. */
	bool events_ok = events && shim__user_ptr_ok(events, sizeof(*events));

	ret = getevents_args(min_nr, nr, timeout, &sigmask, &mask, &tmo);
	if (ret)
		return ret;
	deadline = tmo < 0 ? INT64_MAX : fsaio__mono_ns() + tmo;
	fsaio__drive_back(c->engine);
	if (tmo != 0 && sigmask) {
		efd = pwaiter_begin(c);
		if (efd < 0)
			return efd;
	}
	for (;;) {
		uint32_t seen = atomic_load(&c->seq);
		bool expired;
		int w;

		if (!collect(c, nr, events, events_ok, &got))
			break;
		if (got >= min_nr) {
			/* With room for more, take what the engine's ring holds
			 * now, in this thread, without waiting: a program that
			 * polls (min_nr 0) or asks for few reaps its own
			 * completions rather than have the engine's thread
			 * bring them. */
			if (got < nr && events_ok && !harvested && efd < 0) {
				harvested = true;
				if (fsaio__drive(c->engine, &c->seq, seen, 0) == 0)
					continue;
			}
			break;
		}
		if (atomic_load(&c->dead)) {
			if (!got)
				got = -EINVAL;
			break;
		}
		/* A timeout that has passed still gets one look at the
		 * engine's io_uring ring. */
		expired = tmo == 0 || (deadline != INT64_MAX && fsaio__mono_ns() >= deadline);
		if (expired && polled)
			break;
		w = efd >= 0 ? -EAGAIN : fsaio__drive(c->engine, &c->seq, seen, expired ? 0 : deadline);
		polled = expired;
		if (w == -EAGAIN && !expired)
			w = sleep_own(c, efd, seen, deadline, sigmask);
		if (w == -EINTR) {
			if (!got)
				got = -EINTR;
			break;
		}
	}
	if (efd >= 0)
		pwaiter_end(c, efd);
	return got;
}

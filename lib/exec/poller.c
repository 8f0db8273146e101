/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: the readiness poller of a context, where requests on pollable fds
 * wait without holding a thread: the 2004 patchset's wake-up function that
 * restarted a pipe request when its wait queue woke, done in user space.
 *
 * Owns: one epoll set, one thread (fsaio-poll, every signal blocked,
 * started when a request first has to wait), and per open file an entry
 * (poller_table.c) with three FIFOs of parked requests linked through
 * req->next_/prev_: reads, writes and POLL ops, registered EPOLLONESHOT for
 * the union of what they wait for. When it fires, the thread answers the
 * POLL ops with one poll(.., 0), retries the heads of the read and write
 * lists with the step it was given (ops->step) until one would block,
 * and arms the file again for what is left. It never makes a blocking
 * call: a request that needs one is punted to a worker (ops->punt).
 *
 * Lock: poller.lock guards the tables, the lists, armed/registered and a
 * parked request's state (WAITING <-> RUNNING, off a list). A leaf:
 * completions and punts happen after it is released, and so do closes.
 *
 * Invariants, under poller.lock: a request is on a list iff it is WAITING,
 * or RUNNING at the head of its list while the thread retries it with the
 * lock dropped (cancel answers -EBUSY then). An entry with a non-empty list
 * is armed for what its lists wait for, or has an event on its way to the
 * thread, which looks at every list and arms again before letting go of
 * the lock: no wake-up is lost. An entry with empty lists is dropped.
 *
 * Destroy joins the thread, then completes every parked request with
 * -ECANCELED. A forked child frees memory and closes its copies.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "counters.h"
#include "list.h"
#include "poller.h"
#include "req.h"
#include "poller_table.h"
#include "thread.h"

#define POLLER_STACK (1u << 20)
#define WAKE_KEY UINT64_MAX     /* epoll data of the stop eventfd; fds are >= 0 */
#define EVENTS_PER_WAIT 64

static int dir_of(const struct fsaio_req *r)
{
	if (r->opcode == FSAIO_OP_POLL)
		return DIR_POLL;
	return fsaio__is_write(r) ? DIR_WRITE : DIR_READ;
}

/* POLL* and EPOLL* agree on x86 but not on every architecture (POLLWRNORM). */
static uint32_t to_epoll(unsigned short pev)
{
	static const struct { unsigned short p; uint32_t e; } map[] = {
		{ POLLIN, EPOLLIN }, { POLLPRI, EPOLLPRI }, { POLLOUT, EPOLLOUT },
		{ POLLRDNORM, EPOLLRDNORM }, { POLLRDBAND, EPOLLRDBAND },
		{ POLLWRNORM, EPOLLWRNORM }, { POLLWRBAND, EPOLLWRBAND },
		{ POLLMSG, EPOLLMSG }, { POLLRDHUP, EPOLLRDHUP },
	};
	uint32_t e = 0;

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (pev & map[i].p)
			e |= map[i].e;
	return e;
}

void fsaio__poller_init(struct fsaio__poller *pl, const struct fsaio__poller_ops *ops,
			void *arg, struct fsaio__counters *st)
{
	memset(pl, 0, sizeof(*pl));
	pl->ops = ops;
	pl->arg = arg;
	pl->st = st;
	pthread_mutex_init(&pl->lock, NULL);
	pl->epfd = pl->wakefd = -1;
	pl->spl[0] = pl->spl[1] = -1;
}

/* The descriptor r runs on: the entry's while parked, else the caller's. */
static void run_on(struct fsaio_req *r, int fd)
{
	r->run_fd_ = (r->run_fd_ & FSAIO__RUN_HOW) | (uint32_t)fd;
}

static void push(struct fsaio__pfd *p, int d, struct fsaio_req *r)
{
	FSAIO__LIST_APPEND(p->head[d], p->tail[d], r, next_, prev_);
}

static void list_unlink(struct fsaio__pfd *p, int d, struct fsaio_req *r)
{
	FSAIO__LIST_UNLINK(p->head[d], p->tail[d], r, next_, prev_);
}

/* A singly linked chain of requests taken off the lists (through next_). */
struct chain {
	struct fsaio_req *head, **tail;
};

static void chain_add(struct chain *c, struct fsaio_req *r)
{
	r->next_ = r->prev_ = NULL;
	*c->tail = r;
	c->tail = &r->next_;
}

/* Arm fd for what its lists wait for, unless it is armed for that already
 * (an arm for more than is needed costs one spurious wake-up at most). */
static int arm(struct fsaio__poller *pl, struct fsaio__pfd *p, int fd)
{
	struct epoll_event ev;
	uint32_t want = 0;
	int op, ret;

	if (!p->head[DIR_READ] && !p->head[DIR_WRITE] && !p->head[DIR_POLL])
		return 0;
	if (p->head[DIR_READ])
		want |= EPOLLIN;
	if (p->head[DIR_WRITE])
		want |= EPOLLOUT;
	for (struct fsaio_req *r = p->head[DIR_POLL]; r; r = r->next_)
		want |= to_epoll((unsigned short)r->len);
	if (p->armed && !(want & ~p->armed_ev))
		return 0;
	ev.events = want | EPOLLONESHOT;
	ev.data.u64 = (uint64_t)fd;
	/* The set may have dropped fd (the file was closed and the number
	 * reused), or hold it when we think not: try the other way round. */
	op = p->registered ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
	ret = epoll_ctl(pl->epfd, op, fd, &ev);
	if (ret < 0 && errno == (p->registered ? ENOENT : EEXIST))
		ret = epoll_ctl(pl->epfd, p->registered ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, fd, &ev);
	if (ret < 0)
		return -errno;
	p->registered = true;
	p->armed = true;
	p->armed_ev = want;
	return 0;
}

/* Complete the chain's requests with the result each holds in exec_,
 * hand the pool chain to the workers; poller.lock not held. */
static void finish(struct fsaio__poller *pl, struct fsaio_req *done, struct fsaio_req *pool,
		   struct fsaio__batch *b)
{
	struct fsaio_req *r;

	while ((r = done)) {
		done = r->next_;
		r->next_ = NULL;
		pl->ops->done(pl->arg, r, (int64_t)r->exec_, b);
	}
	while ((r = pool)) {
		pool = r->next_;
		r->next_ = NULL;
		pl->ops->punt(pl->arg, r);
	}
}

/* One poll(.., 0) for every POLL op parked on fd; the ready ones go to done. */
static void answer_polls(struct fsaio__pfd *p, int fd, struct chain *done)
{
	struct pollfd pfd = { .fd = fd };
	struct fsaio_req *r, *next;

	for (r = p->head[DIR_POLL]; r; r = r->next_)
		pfd.events |= (short)r->len;
	if (poll(&pfd, 1, 0) <= 0)
		return;
	for (r = p->head[DIR_POLL]; r; r = next) {
		unsigned short got = (unsigned short)pfd.revents &
			((unsigned short)r->len | POLLERR | POLLHUP | POLLNVAL);

		next = r->next_;
		if (!got)
			continue;
		list_unlink(p, DIR_POLL, r);
		fsaio__state_set(r, FSAIO__RUNNING);
		r->exec_ = got;
		chain_add(done, r);
	}
}

/* fd fired: retry its heads, answer its POLL ops, arm it again. */
static void handle(struct fsaio__poller *pl, int fd, struct fsaio__batch *b)
{
	struct chain done = { NULL, &done.head }, pool = { NULL, &pool.head };
	struct fsaio__pfd *p;
	struct fsaio_req *r;
	int err, dropped = -1;

	pthread_mutex_lock(&pl->lock);
	p = fsaio__pfd_by_key(pl, fd);
	if (!p) {
		pthread_mutex_unlock(&pl->lock);
		return;
	}
	p->armed = false;
	/* POLL ops first: like waiters woken together, they all see the
	 * readiness that woke the fd before a read consumes it. */
	if (p->head[DIR_POLL])
		answer_polls(p, fd, &done);
	for (int d = DIR_READ; d <= DIR_WRITE; d++) {
		while ((r = p->head[d])) {
			uint64_t before = r->done_;
			int64_t res;

			/* RUNNING keeps it at the head and out of cancel's reach
			 * while the lock is dropped for the call. */
			fsaio__state_set(r, FSAIO__RUNNING);
			pthread_mutex_unlock(&pl->lock);
			res = pl->ops->step(pl->arg, r);
			FSAIO__COUNT(pl->st, bytes_worker, r->done_ - before);
			pthread_mutex_lock(&pl->lock);
			if (res == FSAIO__STEP_AGAIN) {
				fsaio__state_set(r, FSAIO__WAITING);
				break;
			}
			list_unlink(p, d, r);
			if (res == FSAIO__STEP_POOL) {
				chain_add(&pool, r);
			} else {
				r->exec_ = (uint64_t)res;
				chain_add(&done, r);
			}
		}
	}
	err = arm(pl, p, fd);
	if (err) {
		/* No readiness will come (the fd was closed, or the number
		 * now names a file epoll refuses): reads and writes go to the
		 * pool, whose blocking calls meet the truth; POLL ops end. */
		for (int d = 0; d < NDIR; d++) {
			while ((r = p->head[d])) {
				list_unlink(p, d, r);
				fsaio__state_set(r, FSAIO__RUNNING);
				if (d == DIR_POLL) {
					r->exec_ = (uint64_t)(int64_t)err;
					chain_add(&done, r);
				} else {
					chain_add(&pool, r);
				}
			}
		}
	}
	if (fsaio__pfd_idle(p))
		dropped = fsaio__pfd_drop(pl, p);
	pthread_mutex_unlock(&pl->lock);
	finish(pl, done.head, pool.head, b);
	if (dropped >= 0)
		close(dropped);
}

static void *poller_main(void *arg)
{
	struct fsaio__poller *pl = arg;
	struct epoll_event evs[EVENTS_PER_WAIT];
	struct fsaio__batch b;
	bool stop = false;

	b.n = 0;
	while (!stop) {
		/* epfd is immutable while the thread lives. */
		int n = epoll_wait(pl->epfd, evs, EVENTS_PER_WAIT, -1);

		for (int i = 0; i < n; i++) {
			if (evs[i].data.u64 == WAKE_KEY)
				stop = true;    /* only stop writes the eventfd */
			else
				handle(pl, (int)evs[i].data.u64, &b);
		}
		/* The completions of one round are posted together: one
		 * wake-up of the reaper for many fds. */
		pl->ops->flush(pl->arg, &b);
	}
	return NULL;
}

static void close_fds(struct fsaio__poller *pl)
{
	int *fds[] = { &pl->epfd, &pl->wakefd, &pl->spl[0], &pl->spl[1] };

	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
}

/* Under poller.lock: the epoll set, the stop eventfd and the thread. */
static int start_thread(struct fsaio__poller *pl)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = WAKE_KEY };
	int ret;

	pl->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (pl->epfd < 0)
		goto fail_errno;
	pl->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (pl->wakefd < 0)
		goto fail_errno;
	if (epoll_ctl(pl->epfd, EPOLL_CTL_ADD, pl->wakefd, &ev) < 0)
		goto fail_errno;
	/* A SIGPIPE from a write to a pipe without readers stays pending on
	 * the thread; the call reports -EPIPE. */
	ret = fsaio__thread_start(&pl->thread, POLLER_STACK, poller_main, pl);
	if (ret) {
		close_fds(pl);
		return -ret;
	}
	pthread_setname_np(pl->thread, "fsaio-poll");
	pl->started = true;
	return 0;

fail_errno:
	ret = -errno;
	close_fds(pl);
	return ret;
}

int fsaio__poller_park(struct fsaio__poller *pl, struct fsaio_req *r)
{
	struct fsaio__pfd *p = NULL;
	int d = dir_of(r), ret = 0, dropped = -1;

	pthread_mutex_lock(&pl->lock);
	if (pl->stopping)
		ret = -ESHUTDOWN;
	else if (!pl->started)
		ret = start_thread(pl);
	if (!ret)
		p = fsaio__pfd_for(pl, r, &ret);
	if (p) {
		push(p, d, r);
		run_on(r, p->fd);
		fsaio__state_set(r, FSAIO__WAITING);
		ret = arm(pl, p, p->fd);
		if (ret) {
			list_unlink(p, d, r);
			run_on(r, r->fd);
			fsaio__state_set(r, FSAIO__INLINE);
			if (fsaio__pfd_idle(p))
				dropped = fsaio__pfd_drop(pl, p);
		} else {
			atomic_store_explicit(&pl->active, true, memory_order_relaxed);
		}
	}
	pthread_mutex_unlock(&pl->lock);
	if (dropped >= 0)
		close(dropped);
	return ret;
}

bool fsaio__poller_queued(struct fsaio__poller *pl, const struct fsaio_req *r)
{
	struct fsaio__pfd *p;
	bool queued;

	/* Most pipes never wait: skip the lock until something has. */
	if (!atomic_load_explicit(&pl->active, memory_order_relaxed))
		return false;
	pthread_mutex_lock(&pl->lock);
	p = fsaio__pfd_by_alias(pl, r->fd);
	queued = p && p->head[dir_of(r)];
	pthread_mutex_unlock(&pl->lock);
	return queued;
}

int fsaio__poller_cancel(struct fsaio__poller *pl, struct fsaio_req *r)
{
	struct fsaio__pfd *p;
	int ret = -EBUSY, dropped = -1;

	pthread_mutex_lock(&pl->lock);
	p = fsaio__state_get(r) == FSAIO__WAITING ? fsaio__pfd_by_key(pl, fsaio__fd(r)) : NULL;
	/* A copy of a parked request is none of the poller's. */
	if (p && !FSAIO__LIST_HAS(p->head[dir_of(r)], r, next_, prev_)) {
		p = NULL;
		ret = -EINVAL;
	}
	if (p) {
		list_unlink(p, dir_of(r), r);
		fsaio__state_set(r, FSAIO__RUNNING);
		if (fsaio__pfd_idle(p))
			dropped = fsaio__pfd_drop(pl, p);
		ret = 0;
	}
	/* A fd still in use may stay armed for nothing now: one spurious
	 * wake-up. */
	pthread_mutex_unlock(&pl->lock);
	if (!ret)
		pl->ops->done(pl->arg, r, -ECANCELED, NULL);
	if (dropped >= 0)
		close(dropped);
	return ret;
}

void fsaio__poller_stop(struct fsaio__poller *pl)
{
	struct chain all = { NULL, &all.head };
	struct fsaio_req *r;
	bool started;

	pthread_mutex_lock(&pl->lock);
	pl->stopping = true;
	started = pl->started;
	pthread_mutex_unlock(&pl->lock);
	if (started) {
		uint64_t one = 1;
		/* Cannot fail: the counter is 0 here, and only this writes it. */
		ssize_t n = write(pl->wakefd, &one, sizeof(one));

		(void)n;
		pthread_join(pl->thread, NULL);
	}
	/* The thread is gone: what is on the lists is WAITING. */
	pthread_mutex_lock(&pl->lock);
	for (unsigned fd = 0; fd < pl->nfds; fd++) {
		struct fsaio__pfd *p = pl->fds[fd];

		for (int d = 0; p && d < NDIR; d++) {
			while ((r = p->head[d])) {
				list_unlink(p, d, r);
				fsaio__state_set(r, FSAIO__RUNNING);
				chain_add(&all, r);
			}
		}
	}
	pthread_mutex_unlock(&pl->lock);
	while ((r = all.head)) {
		all.head = r->next_;
		r->next_ = NULL;
		pl->ops->done(pl->arg, r, -ECANCELED, NULL);
	}
}

void fsaio__poller_fini(struct fsaio__poller *pl)
{
	close_fds(pl);
	fsaio__pfd_free_all(pl);
	pthread_mutex_destroy(&pl->lock);
}

void fsaio__poller_forget(struct fsaio__poller *pl)
{
	/* A forked child: the thread is not here and the lock may be held by
	 * a thread that is not either. The fds are the child's own copies. */
	close_fds(pl);
	fsaio__pfd_free_all(pl);
}

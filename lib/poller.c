/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: the readiness poller of a context, where requests on pollable fds
 * wait without holding a thread: the 2004 patchset's wake-up function that
 * restarted a pipe request when its wait queue woke, done in user space.
 *
 * Owns: one epoll set, one thread (fsaio-poll, started with every signal
 * blocked on the first request that has to wait), and per fd number three
 * FIFOs of parked requests linked through req->next_/prev_: reads, writes
 * and POLL ops. A fd is registered EPOLLONESHOT for the union of what its
 * lists wait for. When it fires, the thread answers the POLL ops with one
 * poll(.., 0), then retries the head of the read list and of the write
 * list with non-blocking calls (fsaio__pollable_step in method_pollable.c)
 * until one would block, and arms the fd again for what is left. The thread never makes a blocking call: a request that cannot go
 * on without one is handed to the pool.
 *
 * Lock: poller.lock guards the fd table, the lists, armed/registered and
 * the state of a parked request (WAITING <-> RUNNING, and off a list). It is
 * a leaf: completions and hand-offs to the pool happen after it is released;
 * under it run only epoll_ctl, poll(.., 0) and the thread's creation.
 *
 * Invariants, under poller.lock: a request is on a list iff it is WAITING,
 * or RUNNING at the head of its list while the thread retries it with the
 * lock dropped (cancel answers -EBUSY then). A submitter that finds its
 * direction's list non-empty queues behind it without trying, so one fd's
 * bytes are consumed and produced in submission order. A fd with a
 * non-empty list is armed in the kernel for what its lists wait for, or
 * has an event on its way to the thread, which looks at every list of the
 * fd and arms it again before letting go of the lock: no wake-up is lost.
 *
 * Destroy joins the thread first, then completes every parked request with
 * -ECANCELED. A forked child frees memory and closes its copies of the fds.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <linux/kcmp.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

#define POLLER_STACK (1u << 20)
#define WAKE_KEY UINT64_MAX     /* epoll data of the stop eventfd; fds are >= 0 */
#define EVENTS_PER_WAIT 64

enum { DIR_READ, DIR_WRITE, DIR_POLL, NDIR };

/* The parked requests of one open file; all fields under poller.lock. */
struct fsaio__pfd {
	struct fsaio_req *head[NDIR], *tail[NDIR];
	int fd;                 /* the engine's duplicate of the caller's fd:
				 * the file the requests are bound to, the
				 * epoll key, and what the poller calls on */
	int alias;              /* the caller's fd number it was made for;
				 * -1 once that number names another file */
	uint32_t armed_ev;      /* epoll events of the last arm */
	bool armed;             /* armed and not yet reported to the thread */
	bool registered;        /* added to the epoll set (it may have dropped
				 * it since: a close removes a file) */
};

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

void fsaio__poller_init(struct fsaio__poller *pl)
{
	pthread_mutex_init(&pl->lock, NULL);
	pl->epfd = pl->wakefd = -1;
	pl->spl[0] = pl->spl[1] = -1;
}

/* The entry whose duplicate is fd (the epoll key). */
static struct fsaio__pfd *lookup(struct fsaio__poller *pl, int fd)
{
	return (unsigned)fd < pl->nfds ? pl->fds[fd] : NULL;
}

/* The entry last made for the caller's fd number. */
static struct fsaio__pfd *lookup_alias(struct fsaio__poller *pl, int fd)
{
	return (unsigned)fd < pl->nalias ? pl->alias[fd] : NULL;
}

/* tab[fd] of a table grown on demand: NULL when memory is short. */
static struct fsaio__pfd **cell(struct fsaio__pfd ***tab, unsigned *len, int fd)
{
	if ((unsigned)fd >= *len) {
		size_t n = *len ? *len : 64;
		struct fsaio__pfd **t;

		while (n <= (unsigned)fd)
			n *= 2;
		t = realloc(*tab, n * sizeof(*t));
		if (!t)
			return NULL;
		memset(t + *len, 0, (n - *len) * sizeof(*t));
		*tab = t;
		*len = (unsigned)n;
	}
	return &(*tab)[fd];
}

/* Whether fds a and b are the same open file: kcmp, or where it is denied
 * (seccomp profiles), the same inode. */
static bool same_file(int a, int b)
{
	pid_t pid = getpid();
	struct stat sa, sb;
	long r = syscall(SYS_kcmp, pid, pid, KCMP_FILE, a, b);

	if (r >= 0)
		return r == 0;
	return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 &&
	       sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino && sa.st_rdev == sb.st_rdev;
}

/* The entry for the file r's fd names now: the one made for that number
 * while it still names the same file, else a new one holding a duplicate.
 * NULL and *err set when no descriptor or memory is left. */
static struct fsaio__pfd *entry_for(struct fsaio__poller *pl, const struct fsaio_req *r, int *err)
{
	struct fsaio__pfd *p = lookup_alias(pl, r->fd), **key, **alias;
	int dupfd;

	if (p && same_file(r->fd, p->fd))
		return p;
	if (p) {
		/* The number was given to another file: p keeps its waiters. */
		p->alias = -1;
		pl->alias[r->fd] = NULL;
	}
	alias = cell(&pl->alias, &pl->nalias, r->fd);
	dupfd = alias ? fcntl(r->fd, F_DUPFD_CLOEXEC, 0) : -1;
	if (dupfd < 0) {
		*err = alias ? -errno : -ENOMEM;
		return NULL;
	}
	key = cell(&pl->fds, &pl->nfds, dupfd);
	p = key ? calloc(1, sizeof(*p)) : NULL;
	if (!p) {
		close(dupfd);
		*err = -ENOMEM;
		return NULL;
	}
	p->fd = dupfd;
	p->alias = r->fd;
	*key = p;
	*alias = p;
	return p;
}

static bool idle(const struct fsaio__pfd *p)
{
	return !p->head[DIR_READ] && !p->head[DIR_WRITE] && !p->head[DIR_POLL];
}

/* Drop an entry with no waiters: out of epoll and the tables. Its duplicate
 * is returned to be closed once poller.lock is released (closing the last
 * reference of a socket may block). */
static int drop(struct fsaio__poller *pl, struct fsaio__pfd *p)
{
	int fd = p->fd;

	if (p->registered)
		(void)epoll_ctl(pl->epfd, EPOLL_CTL_DEL, fd, NULL);
	pl->fds[fd] = NULL;
	if (p->alias >= 0 && pl->alias[p->alias] == p)
		pl->alias[p->alias] = NULL;
	free(p);
	return fd;
}

/* The descriptor r runs on: the entry's while parked, else the caller's. */
static void run_on(struct fsaio_req *r, int fd)
{
	r->priv_[1] = (r->priv_[1] & FSAIO__P1_STREAM) | (uint32_t)fd;
}

static void push(struct fsaio__pfd *p, int d, struct fsaio_req *r)
{
	r->next_ = NULL;
	r->prev_ = p->tail[d];
	if (p->tail[d])
		p->tail[d]->next_ = r;
	else
		p->head[d] = r;
	p->tail[d] = r;
}

static void unlink_req(struct fsaio__pfd *p, int d, struct fsaio_req *r)
{
	if (r->prev_)
		r->prev_->next_ = r->next_;
	else
		p->head[d] = r->next_;
	if (r->next_)
		r->next_->prev_ = r->prev_;
	else
		p->tail[d] = r->prev_;
	r->next_ = r->prev_ = NULL;
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

/* Complete the chain's requests with the result each holds in priv_[3],
 * hand the pool chain to the workers; poller.lock not held. */
static void finish(struct fsaio_ctx *ctx, struct fsaio_req *done, struct fsaio_req *pool,
		   struct fsaio__batch *b)
{
	struct fsaio_req *r;

	while ((r = done)) {
		done = r->next_;
		r->next_ = NULL;
		ctx->ops->done(ctx, r, (int64_t)r->priv_[3], b);
	}
	while ((r = pool)) {
		pool = r->next_;
		r->next_ = NULL;
		ctx->ops->punt(ctx, r);
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
		unlink_req(p, DIR_POLL, r);
		fsaio__state_set(r, FSAIO__RUNNING);
		r->priv_[3] = got;
		chain_add(done, r);
	}
}

/* fd fired: retry its heads, answer its POLL ops, arm it again. */
static void handle(struct fsaio_ctx *ctx, int fd, struct fsaio__batch *b)
{
	struct fsaio__poller *pl = &ctx->poller;
	struct chain done = { NULL, &done.head }, pool = { NULL, &pool.head };
	struct fsaio__pfd *p;
	struct fsaio_req *r;
	int err, dropped = -1;

	pthread_mutex_lock(&pl->lock);
	p = lookup(pl, fd);
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
			res = ctx->ops->step(ctx, r);
			FSAIO__INC(ctx, bytes_worker, r->done_ - before);
			pthread_mutex_lock(&pl->lock);
			if (res == FSAIO__STEP_AGAIN) {
				fsaio__state_set(r, FSAIO__WAITING);
				break;
			}
			unlink_req(p, d, r);
			if (res == FSAIO__STEP_POOL) {
				chain_add(&pool, r);
			} else {
				r->priv_[3] = (uint64_t)res;
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
				unlink_req(p, d, r);
				fsaio__state_set(r, FSAIO__RUNNING);
				if (d == DIR_POLL) {
					r->priv_[3] = (uint64_t)(int64_t)err;
					chain_add(&done, r);
				} else {
					chain_add(&pool, r);
				}
			}
		}
	}
	if (idle(p))
		dropped = drop(pl, p);
	pthread_mutex_unlock(&pl->lock);
	finish(ctx, done.head, pool.head, b);
	if (dropped >= 0)
		close(dropped);
}

static void *poller_main(void *arg)
{
	struct fsaio_ctx *ctx = arg;
	struct epoll_event evs[EVENTS_PER_WAIT];
	struct fsaio__batch b;
	bool stop = false;

	b.n = 0;
	while (!stop) {
		/* epfd is immutable while the thread lives. */
		int n = epoll_wait(ctx->poller.epfd, evs, EVENTS_PER_WAIT, -1);

		for (int i = 0; i < n; i++) {
			if (evs[i].data.u64 == WAKE_KEY)
				stop = true;    /* only stop writes the eventfd */
			else
				handle(ctx, (int)evs[i].data.u64, &b);
		}
		/* The completions of one round are posted together: one
		 * wake-up of the reaper for many fds. */
		fsaio__batch_flush(ctx, &b);
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
static int start_thread(struct fsaio_ctx *ctx)
{
	struct fsaio__poller *pl = &ctx->poller;
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = WAKE_KEY };
	pthread_attr_t attr;
	sigset_t all, old;
	int ret;

	pl->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (pl->epfd < 0)
		goto fail_errno;
	pl->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (pl->wakefd < 0)
		goto fail_errno;
	if (epoll_ctl(pl->epfd, EPOLL_CTL_ADD, pl->wakefd, &ev) < 0)
		goto fail_errno;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, POLLER_STACK);
	/* The caller's signal handlers must not run on our thread, and a
	 * SIGPIPE from a write to a pipe without readers stays pending there
	 * instead of killing the process; the call reports -EPIPE. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = pthread_create(&pl->thread, &attr, poller_main, ctx);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
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

int fsaio__poller_park(struct fsaio_ctx *ctx, struct fsaio_req *r)
{
	struct fsaio__poller *pl = &ctx->poller;
	struct fsaio__pfd *p = NULL;
	int d = dir_of(r), ret = 0, dropped = -1;

	pthread_mutex_lock(&pl->lock);
	if (pl->stopping)
		ret = -ESHUTDOWN;
	else if (!pl->started)
		ret = start_thread(ctx);
	if (!ret)
		p = entry_for(pl, r, &ret);
	if (p) {
		push(p, d, r);
		run_on(r, p->fd);
		fsaio__state_set(r, FSAIO__WAITING);
		ret = arm(pl, p, p->fd);
		if (ret) {
			unlink_req(p, d, r);
			run_on(r, r->fd);
			fsaio__state_set(r, FSAIO__INLINE);
			if (idle(p))
				dropped = drop(pl, p);
		} else {
			atomic_store_explicit(&pl->active, true, memory_order_relaxed);
		}
	}
	pthread_mutex_unlock(&pl->lock);
	if (dropped >= 0)
		close(dropped);
	return ret;
}

bool fsaio__poller_queued(struct fsaio_ctx *ctx, const struct fsaio_req *r)
{
	struct fsaio__poller *pl = &ctx->poller;
	struct fsaio__pfd *p;
	bool queued;

	/* Most pipes never wait: skip the lock until something has. */
	if (!atomic_load_explicit(&pl->active, memory_order_relaxed))
		return false;
	pthread_mutex_lock(&pl->lock);
	p = lookup_alias(pl, r->fd);
	queued = p && p->head[dir_of(r)];
	pthread_mutex_unlock(&pl->lock);
	return queued;
}

int fsaio__poller_cancel(struct fsaio_ctx *ctx, struct fsaio_req *r)
{
	struct fsaio__poller *pl = &ctx->poller;
	struct fsaio__pfd *p;
	int ret = -EBUSY, dropped = -1;

	pthread_mutex_lock(&pl->lock);
	if (fsaio__state_get(r) == FSAIO__WAITING && (p = lookup(pl, fsaio__fd(r)))) {
		unlink_req(p, dir_of(r), r);
		fsaio__state_set(r, FSAIO__RUNNING);
		if (idle(p))
			dropped = drop(pl, p);
		ret = 0;
	}
	/* A fd still in use may stay armed for nothing now: one spurious
	 * wake-up. */
	pthread_mutex_unlock(&pl->lock);
	if (!ret)
		ctx->ops->done(ctx, r, -ECANCELED, NULL);
	if (dropped >= 0)
		close(dropped);
	return ret;
}

void fsaio__poller_stop(struct fsaio_ctx *ctx)
{
	struct fsaio__poller *pl = &ctx->poller;
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
				unlink_req(p, d, r);
				fsaio__state_set(r, FSAIO__RUNNING);
				chain_add(&all, r);
			}
		}
	}
	pthread_mutex_unlock(&pl->lock);
	while ((r = all.head)) {
		all.head = r->next_;
		r->next_ = NULL;
		ctx->ops->done(ctx, r, -ECANCELED, NULL);
	}
}

/* Entries and their duplicates (the thread is gone, nothing waits). */
static void free_table(struct fsaio__poller *pl)
{
	for (unsigned fd = 0; fd < pl->nfds; fd++) {
		if (pl->fds[fd]) {
			close(pl->fds[fd]->fd);
			free(pl->fds[fd]);
		}
	}
	free(pl->fds);
	free(pl->alias);
	pl->fds = pl->alias = NULL;
	pl->nfds = pl->nalias = 0;
}

void fsaio__poller_fini(struct fsaio__poller *pl)
{
	close_fds(pl);
	free_table(pl);
	pthread_mutex_destroy(&pl->lock);
}

void fsaio__poller_forget(struct fsaio__poller *pl)
{
	/* A forked child: the thread is not here and the lock may be held by
	 * a thread that is not either. The fds are the child's own copies. */
	close_fds(pl);
	free_table(pl);
}

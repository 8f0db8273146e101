/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: requests in flight, their order on an fd, completion and fork.
 *
 * The engine contexts (engine.c) complete every request through
 * px__complete: its status goes straight into the program's aiocb, so
 * nothing is reaped. A cache hit completes inside the submitting call.
 *
 * Order on an fd. Requests on one fd run concurrently, except where POSIX
 * or the file's mode gives an order the program can rely on: aio_fsync
 * covers every request on the fd queued before it (a barrier, held until
 * those completed, then given to the engine); a write on an O_APPEND fd is
 * a barrier behind the earlier writes and fsyncs, so appends land in
 * submission order. A held barrier is bound to its file at submit, as the
 * engine binds every request it accepts: it holds a duplicate of the fd
 * (bound_fd), which is what the engine gets when it is released, so a
 * dup2() over the fd or a close and reuse of the number while it waits
 * does not send it to another file. Every request in flight is linked, in submission
 * order, on its fd's bucket (fd % PX_BUCKETS). A barrier counts the earlier
 * requests it waits for; each decrements it when unlinked (looking only at
 * the bucket's held requests later than itself, so that a completion costs
 * the same however many requests are in flight), and the one that
 * brings it to 0 queues it for the dispatcher thread, which submits it (the
 * engine's callback may not call into the engine).
 *
 * Locks: bucket->lock guards its lists and the state, blockers, seq and
 * links of its requests; disp_lock the dispatcher's queue. Leaves (see px.h), taken
 * after engine.c's ctx_lock in the fork handlers (start.c).
 *
 * fork(): the child has none of the parent's threads or requests: its
 * handler (px__queues_fork_child) empties the buckets and the dispatcher's
 * queue. The parent's aiocbs keep in the child whatever status they had
 * (their memory is a copy), as with glibc.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core.h"
#include "dropin.h"
#include "engine.h"
#include "list.h"
#include "nocancel.h"
#include "notify.h"
#include "thread.h"
#include "wait.h"

#define PX_BUCKETS 64

struct bucket {
	pthread_mutex_t lock;
	struct px_req *head, *tail; /* lock: requests in flight, submission order */
	struct px_req *held, *held_tail; /* lock: its requests in state PX_HELD, in order */
	uint64_t seq;               /* lock: the next request's seq */
};

static struct bucket buckets[PX_BUCKETS];

static pthread_mutex_t disp_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t disp_cond = PTHREAD_COND_INITIALIZER;
static struct px_req *disp_head, *disp_tail;    /* disp_lock */
static bool disp_running;                       /* disp_lock */

/* In px__complete for PX_PLAIN's ring: the engine itself kicks a thread
 * waiting in that ring out of its wait after the callback (px__wake). */
static __thread bool in_ring_callback;

/* Inside px__batch_begin/end (one lio_listio): the submitter's requests go
 * to the engine with fsaio__submit_batch, and batch_used[kind] says which
 * contexts then owe an fsaio__submit_end. */
static __thread bool batching;
static __thread bool batch_alone;      /* the list brings one request */
static __thread bool batch_used[PX_NCTX];

static int submit_engine(struct px_req *r, bool submitter);
static void finish(struct px_req *r, int64_t res);

static struct bucket *bucket_of(int fd)
{
	return &buckets[(unsigned)fd % PX_BUCKETS];
}

/* The request queues at start and around fork (start.c calls these). */
void px__queues_init(void)
{
	for (unsigned i = 0; i < PX_BUCKETS; i++)
		pthread_mutex_init(&buckets[i].lock, NULL);
}

void px__queues_fork_prepare(void)
{
	pthread_mutex_lock(&disp_lock);
	for (unsigned i = 0; i < PX_BUCKETS; i++)
		pthread_mutex_lock(&buckets[i].lock);
}

void px__queues_fork_parent(void)
{
	for (unsigned i = 0; i < PX_BUCKETS; i++)
		pthread_mutex_unlock(&buckets[i].lock);
	pthread_mutex_unlock(&disp_lock);
}

void px__queues_fork_child(void)
{
	/* The parent's requests are not the child's: forget them. Their
	 * records are freed; no thread of the child refers to them. */
	for (unsigned i = 0; i < PX_BUCKETS; i++) {
		struct bucket *b = &buckets[i];
		struct px_req *r = b->head, *n;

		for (; r; r = n) {
			n = r->next;
			if (r->bound_fd >= 0)
				close(r->bound_fd);
			free(r);
		}
		b->head = b->tail = NULL;
		b->held = b->held_tail = NULL;
		pthread_mutex_unlock(&b->lock);
	}
	disp_head = disp_tail = NULL;
	disp_running = false;
	pthread_cond_init(&disp_cond, NULL);
	pthread_mutex_unlock(&disp_lock);
}

struct px_req *px__alloc(struct aiocb *cb, int kind, struct px_group *g, bool notify)
{
	struct px_req *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->cb = cb;
	r->group = g;
	r->fd = cb->aio_fildes;
	r->kind = (uint8_t)kind;
	if (notify)
		r->sev = cb->aio_sigevent;
	else
		r->sev.sigev_notify = SIGEV_NONE;
	/* getpid is a system call: only a signal needs it. */
	if (px__sev_signals(&r->sev))
		r->pid = getpid();
	/* Now, while g is surely alive: an aio_cancel may look at r after
	 * the list's last request freed g. */
	r->ctx_kind = (uint8_t)px__ctx_kind(r);
	r->bound_fd = -1;
	atomic_init(&r->refs, 1);
	return r;
}

static void unref(struct px_req *r)
{
	if (atomic_fetch_sub_explicit(&r->refs, 1, memory_order_acq_rel) == 1)
		free(r);
}

void px__group_put(struct px_group *g)
{
	if (atomic_fetch_sub_explicit(&g->refs, 1, memory_order_acq_rel) == 1)
		free(g);
}

/* Does barrier b wait for the earlier request x on its fd? */
static bool waits_for(const struct px_req *b, const struct px_req *x)
{
	if (b->kind == PX_SYNC || b->kind == PX_DSYNC)
		return true;
	return x->ordered;
}

/* r enters or leaves state PX_HELD: the bucket's held list, which a
 * completion walks (not every request in flight). bucket lock held. */
static void hold(struct bucket *b, struct px_req *r)
{
	r->state = PX_HELD;
	r->hnext = NULL;
	r->hprev = b->held_tail;
	if (b->held_tail)
		b->held_tail->hnext = r;
	else
		b->held = r;
	b->held_tail = r;
}

static void unhold(struct bucket *b, struct px_req *r, uint8_t state)
{
	if (r->hprev)
		r->hprev->hnext = r->hnext;
	else
		b->held = r->hnext;
	if (r->hnext)
		r->hnext->hprev = r->hprev;
	else
		b->held_tail = r->hprev;
	r->hnext = r->hprev = NULL;
	r->blockers = 0;
	r->state = state;
}

/* Append r to its bucket and count what it waits for. bucket lock held. */
static void link_req(struct bucket *b, struct px_req *r)
{
	FSAIO__LIST_APPEND(b->head, b->tail, r, next, prev);
	r->seq = b->seq++;
	r->state = PX_SUBMITTING;
	if (!r->barrier)
		return;
	for (struct px_req *x = r->prev; x; x = x->prev)
		if (x->fd == r->fd && waits_for(r, x))
			r->blockers++;
	if (r->blockers)
		hold(b, r);
}

/* Take r off its bucket; the barriers it held that are now free are
 * returned through *ready (linked by dnext). Only held requests later
 * than r can wait for it. bucket lock held. */
static void unlink_req(struct bucket *b, struct px_req *r, struct px_req **ready)
{
	struct px_req *y, *p;

	for (y = b->held_tail; y && y->seq > r->seq; y = p) {
		p = y->hprev;
		if (y->fd != r->fd || !waits_for(y, r) || --y->blockers)
			continue;
		/* Free to go; the dispatcher's queue holds a reference. */
		unhold(b, y, PX_QUEUED);
		atomic_fetch_add_explicit(&y->refs, 1, memory_order_relaxed);
		y->dnext = *ready;
		*ready = y;
	}
	FSAIO__LIST_UNLINK(b->head, b->tail, r, next, prev);
}

/* PX_QUEUED -> PX_SUBMITTING: false if a canceller took it first. */
static bool take_queued(struct px_req *r)
{
	struct bucket *b = bucket_of(r->fd);
	bool go;

	pthread_mutex_lock(&b->lock);
	go = r->state == PX_QUEUED;
	if (go)
		r->state = PX_SUBMITTING;
	pthread_mutex_unlock(&b->lock);
	return go;
}

/* The dispatcher: submits the barriers whose earlier requests are done. */
static void *dispatcher(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&disp_lock);
	for (;;) {
		struct px_req *r;

		while (!disp_head)
			pthread_cond_wait(&disp_cond, &disp_lock);
		r = disp_head;
		disp_head = r->dnext;
		if (!disp_head)
			disp_tail = NULL;
		pthread_mutex_unlock(&disp_lock);
		r->dnext = NULL;
		if (take_queued(r))
			(void)submit_engine(r, false);
		unref(r);
		pthread_mutex_lock(&disp_lock);
	}
	return NULL;
}

static void dispatch(struct px_req *list)
{
	struct px_req *n;
	bool failed = false;

	pthread_mutex_lock(&disp_lock);
	if (!disp_running) {
		if (fsaio__thread_start_detached(dispatcher, NULL) == 0)
			disp_running = true;
		else
			failed = true;
	}
	if (!failed) {
		for (; list; list = n) {
			n = list->dnext;
			list->dnext = NULL;
			if (disp_tail)
				disp_tail->dnext = list;
			else
				disp_head = list;
			disp_tail = list;
		}
		pthread_cond_signal(&disp_cond);
	}
	pthread_mutex_unlock(&disp_lock);
	/* No thread to submit them: they fail as glibc's requests do when
	 * it cannot start one. */
	for (; list; list = n) {
		n = list->dnext;
		list->dnext = NULL;
		if (take_queued(list))
			finish(list, -EAGAIN);
		unref(list);
	}
}

/* r could not be accepted after all: off its fd, EAGAIN in its aiocb,
 * freed. Nothing is notified: the submit call reports it. */
static void refuse(struct px_req *r)
{
	struct bucket *b = bucket_of(r->fd);
	struct px_req *ready = NULL;

	pthread_mutex_lock(&b->lock);
	unlink_req(b, r, &ready);
	pthread_mutex_unlock(&b->lock);
	if (ready)
		dispatch(ready);
	px__set_status(r->cb, -EAGAIN);
	unref(r);   /* an aio_cancel looking at it may hold another reference */
}

/* A count over SSIZE_MAX: what pread(2)/pwrite(2) answer, which glibc's
 * thread reports: EBADF for an fd not open for it, else EFAULT (the
 * buffer cannot span that much of the address space). */
static int huge_count_error(const struct px_req *r)
{
	int fl = fcntl(r->req.fd, F_GETFL), acc = fl & O_ACCMODE;

	if (fl < 0 || (fl & O_PATH))
		return -EBADF;
	if (r->kind == PX_READ ? acc == O_WRONLY : acc == O_RDONLY)
		return -EBADF;
	return -EFAULT;
}

/* Hand r to the engine. A refusal is the request's own error, as the
 * system call's would be in glibc's thread; only a full engine or a lack of
 * memory is a submit error, reported when the submitter asks (-EAGAIN,
 * with r unlinked and freed). */
static int submit_engine(struct px_req *r, bool submitter)
{
	fsaio_ctx_t *ctx = px__engine(r->ctx_kind);
	struct fsaio_req *one = &r->req;
	int n;

	if (r->kind == PX_BAD || ((r->kind == PX_READ || r->kind == PX_WRITE) &&
				  r->req.offset < 0)) {
		/* pread(2) and pwrite(2) refuse a negative offset with EINVAL
		 * (before they look at the fd), and glibc's thread reports a
		 * bad lio_opcode as EINVAL: the request's error, not submit's. */
		finish(r, -EINVAL);
		return 0;
	}
	if ((r->kind == PX_READ || r->kind == PX_WRITE) && r->req.len > SSIZE_MAX) {
		finish(r, huge_count_error(r));
		return 0;
	}
	/* A reference across the call: the engine may complete (and the
	 * callback unreference) r before fsaio_submit returns. Until the
	 * state says PX_ENGINE, aio_cancel leaves r alone: the engine's
	 * cancel must not race its submit. */
	atomic_fetch_add_explicit(&r->refs, 1, memory_order_relaxed);
	px__hold_begin();
	if (!ctx) {
		n = -EAGAIN;
	} else if (batching && submitter) {
		batch_used[r->ctx_kind] = true;
		n = fsaio__submit_batch(ctx, &one, 1, batch_alone);
	} else {
		n = fsaio_submit(ctx, &one, 1);
	}
	px__hold_end();
	if (n == 1) {
		struct bucket *b = bucket_of(r->fd);

		pthread_mutex_lock(&b->lock);
		if (r->state == PX_SUBMITTING)
			r->state = PX_ENGINE;
		pthread_mutex_unlock(&b->lock);
		unref(r);
		return 0;
	}
	atomic_fetch_sub_explicit(&r->refs, 1, memory_order_relaxed);
	if ((n == -EAGAIN || n == -ENOMEM) && submitter) {
		refuse(r);
		return -EAGAIN;
	}
	finish(r, n == -ENOMEM ? -EAGAIN : n);
	return 0;
}

void px__batch_begin(bool alone)
{
	batching = true;
	batch_alone = alone;
}

/* What the batch's requests left in the engines' rings goes in now: one
 * io_uring_enter per context for the whole list. */
void px__batch_end(void)
{
	batching = false;
	for (int k = 0; k < PX_NCTX; k++) {
		if (batch_used[k])
			fsaio__submit_end(px__engine_now(k));
		batch_used[k] = false;
	}
}

int px__submit(struct px_req *r)
{
	struct aiocb *cb = r->cb;
	struct bucket *b = bucket_of(r->fd);
	void *buf = (void *)cb->aio_buf;
	bool held;
	int fl, bind_err = 0;

	switch (r->kind) {
	case PX_READ:
		fsaio_prep_pread(&r->req, r->fd, buf, cb->aio_nbytes, cb->aio_offset);
		break;
	case PX_WRITE:
		fsaio_prep_pwrite(&r->req, r->fd, buf, cb->aio_nbytes, cb->aio_offset);
		r->ordered = true;
		fl = fcntl(r->fd, F_GETFL);
		r->barrier = fl >= 0 && (fl & O_APPEND);
		break;
	case PX_SYNC:
	case PX_DSYNC:
		if (r->kind == PX_SYNC)
			fsaio_prep_fsync(&r->req, r->fd);
		else
			fsaio_prep_fdatasync(&r->req, r->fd);
		r->ordered = true;
		r->barrier = true;
		break;
	default:
		break;
	}
	r->req.user_data = r;
	cb->__return_value = 0;
	atomic_store_explicit((_Atomic int *)&cb->__error_code, EINPROGRESS, memory_order_release);

	pthread_mutex_lock(&b->lock);
	link_req(b, r);
	held = r->state == PX_HELD;
	if (held) {
		/* Bound to its file now; the engine gets the duplicate. */
		r->bound_fd = fcntl(r->fd, F_DUPFD_CLOEXEC, 0);
		if (r->bound_fd >= 0) {
			r->req.fd = r->bound_fd;
		} else {
			bind_err = errno;
			held = false;
			unhold(b, r, PX_SUBMITTING);
		}
	}
	pthread_mutex_unlock(&b->lock);
	if (bind_err == EBADF) {
		/* The fd was closed meanwhile: the request's own error. */
		finish(r, -EBADF);
		return 0;
	}
	if (bind_err) {
		/* No descriptor or memory left: not accepted. */
		refuse(r);
		return -EAGAIN;
	}
	if (held)
		return 0;
	return submit_engine(r, true);
}

/*
 * aio_read's way (and lio_listio's, for the reads of its list) for reads
 * the page cache has: done in the caller by the plain context's engine
 * (fsaio__reads_now, a list's first attempts in one system call) before
 * any record is made for them. Such a read is never in flight: its status
 * is stored once, final, so no thread can have seen it in progress, wait
 * for it (px__seq is not moved) or find it on its fd, and it orders
 * nothing (a read is no barrier and waits for none). Not for a request
 * that signals (the other context), nor before the plain context is made:
 * making it is no step for this path, which reaches no cancellation
 * point. errno may change.
 */
uint64_t px__reads_now(struct aiocb *const *cbs, unsigned n)
{
	fsaio_ctx_t *ctx = px__engine_now(PX_PLAIN);
	struct fsaio_req one[PX_NOW_MAX], *reqs[PX_NOW_MAX];
	int64_t res[PX_NOW_MAX];
	unsigned at[PX_NOW_MAX], k = 0;
	uint64_t done, ours = 0;

	if (!ctx)
		return 0;
	for (unsigned i = 0; i < n && i < PX_NOW_MAX; i++) {
		const struct aiocb *cb = cbs[i];
		struct sigevent sev = cb->aio_sigevent;

		if (cb->aio_offset < 0 || cb->aio_nbytes > SSIZE_MAX || px__sev_signals(&sev))
			continue;
		fsaio_prep_pread(&one[k], cb->aio_fildes, (void *)cb->aio_buf, cb->aio_nbytes,
				 cb->aio_offset);
		reqs[k] = &one[k];
		at[k++] = i;
	}
	done = k ? fsaio__reads_now(ctx, reqs, k, res) : 0;
	for (unsigned j = 0; j < k; j++) {
		struct aiocb *cb = cbs[at[j]];
		struct sigevent sev;

		if (!(done >> j & 1))
			continue;
		sev = cb->aio_sigevent;
		px__set_status(cb, res[j]);
		px__notify(&sev, 0);
		ours |= 1ull << at[j];
	}
	return ours;
}

static void finish(struct px_req *r, int64_t res)
{
	struct aiocb *cb = r->cb;
	struct bucket *b = bucket_of(r->fd);
	struct px_req *ready = NULL;
	struct px_group *g = r->group;

	/* The status first; after the store the aiocb is the program's again
	 * (it may resubmit it at once), so it is not touched again. */
	px__set_status(cb, res);

	pthread_mutex_lock(&b->lock);
	r->state = PX_DONE;
	unlink_req(b, r, &ready);
	pthread_mutex_unlock(&b->lock);
	if (r->bound_fd >= 0) {
		int saved = errno, cs = fsaio__nocancel_begin();

		close(r->bound_fd);
		fsaio__nocancel_end(cs);
		errno = saved;
	}

	px__notify(&r->sev, r->pid);
	if (g && atomic_fetch_sub_explicit(&g->pending, 1, memory_order_acq_rel) == 1) {
		px__notify(&g->sev, g->pid);
		px__wake(!in_ring_callback);
		px__group_put(g);
	} else {
		px__wake(!in_ring_callback);
	}
	if (ready)
		dispatch(ready);
	unref(r);
}

/* The engine contexts' callback (start.c gives it to engine.c). */
void px__complete(void *arg, const struct fsaio_event *ev)
{
	in_ring_callback = arg == px__engine_tag(PX_PLAIN);
	finish(ev->user_data, ev->res);
	in_ring_callback = false;
}


/* Cancel one request found on the fd: true if it will never run. */
static bool cancel_one(struct px_req *r)
{
	struct bucket *b = bucket_of(r->fd);
	fsaio_ctx_t *ctx;
	uint8_t st;
	bool ok;

	pthread_mutex_lock(&b->lock);
	st = r->state;
	if (st == PX_HELD)
		unhold(b, r, PX_CANCEL);        /* not given to the engine yet: ours */
	else if (st == PX_QUEUED)
		r->state = PX_CANCEL;
	pthread_mutex_unlock(&b->lock);
	if (st == PX_HELD || st == PX_QUEUED) {
		finish(r, -ECANCELED);
		return true;
	}
	if (st != PX_ENGINE)
		return false;
	ctx = px__engine_now(r->ctx_kind);
	/* 0: the engine took it back and completes it with -ECANCELED. */
	px__hold_begin();
	ok = ctx && fsaio_cancel(ctx, &r->req) == 0;
	px__hold_end();
	if (ok) {
		/* aio_error must say ECANCELED once aio_cancel returns. */
		px__wait_begin();
		for (;;) {
			uint32_t seen = atomic_load(&px__seq);

			pthread_mutex_lock(&b->lock);
			st = r->state;
			pthread_mutex_unlock(&b->lock);
			if (st == PX_DONE)
				break;
			px__wait(seen, NULL, false);
		}
		px__wait_end();
	}
	return ok;
}

bool px__in_flight(const struct aiocb *cb)
{
	int fd = cb->aio_fildes;
	struct bucket *b = bucket_of(fd);
	bool found = false;

	pthread_mutex_lock(&b->lock);
	for (struct px_req *x = b->head; x && !found; x = x->next)
		found = x->cb == cb && x->fd == fd && x->state != PX_DONE;
	pthread_mutex_unlock(&b->lock);
	return found;
}

int px__cancel(int fd, struct aiocb *cb)
{
	struct bucket *b = bucket_of(fd);
	struct px_req *stack[16], **v = stack;
	size_t n = 0, cap = 16;
	bool all = true;

	pthread_mutex_lock(&b->lock);
	/* Latest first, so that cancelling one does not free a later barrier. */
	for (struct px_req *x = b->tail; x; x = x->prev) {
		if (x->fd != fd || (cb && x->cb != cb) || x->state == PX_DONE)
			continue;
		if (n == cap) {
			struct px_req **nv = malloc(2 * cap * sizeof(*nv));

			if (!nv)
				break;
			memcpy(nv, v, n * sizeof(*nv));
			if (v != stack)
				free(v);
			v = nv;
			cap *= 2;
		}
		atomic_fetch_add_explicit(&x->refs, 1, memory_order_relaxed);
		v[n++] = x;
	}
	pthread_mutex_unlock(&b->lock);

	for (size_t i = 0; i < n; i++) {
		if (!cancel_one(v[i]))
			all = false;
		unref(v[i]);
	}
	if (v != stack)
		free(v);
	/* An aiocb in progress that is no request of ours (a copy, never
	 * submitted): glibc's EINVAL. One that completed meanwhile has its
	 * status stored before it leaves the list. */
	if (!n && cb && atomic_load_explicit((_Atomic int *)&cb->__error_code,
					     memory_order_acquire) == EINPROGRESS)
		return -EINVAL;
	if (!n)
		return AIO_ALLDONE;
	return all ? AIO_CANCELED : AIO_NOTCANCELED;
}

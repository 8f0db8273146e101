/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: the engine's own readahead: a miss's own reads started, upfront
 * and for streams. Prefetch (upfront, streams) is made by a pool worker
 * as a side job (pool.c), never by the submitter: it allocates pages and
 * may sleep on a full queue. fsaio__ra_start, too, runs off the submitter:
 * a read miss bound for the pool has exactly its own range started by the
 * pool's starter thread (readahead(2), which the kernel serves as
 * POSIX_FADV_WILLNEED), so a worker only waits for it; not counted as
 * prefetch.
 *
 * Upfront: a NOWAIT miss already starts the kernel's readahead of exactly
 * the missed range, so those requests are skipped (HINT_KERNEL_RA). For
 * misses the kernel never saw (the probe said cold, no attempt made), when
 * no worker is free, a side job tells the kernel about the queued ones so
 * their I/O starts while they wait. Calls are clipped to the device's
 * read_ahead_kb (learnt with the fd's facts, devra.c; 128 KiB if unknown).
 *
 * Streams: a small per-context table (RA_SLOTS, hashed by fd, one leaf
 * mutex per slot) remembers per fd the end of the furthest read. A read
 * within a few request sizes behind that end, or at it, is sequential;
 * from the third one on the stream's reads are marked (HINT_SEQ). A window
 * of prefetch opens only when a stream read misses and the kernel is not
 * reading ahead by itself (fsaio__stream_miss); it is kept topped up ahead
 * of the furthest end and doubled on each further miss or hit, up to
 * max(device limit, 8 requests), at most 32 MiB. A read elsewhere resets
 * the slot. One stream per fd. fsaio_fadvise(RANDOM) turns detection off
 * for the fd, SEQUENTIAL opens the window at the first read. Prefetch is a
 * hint: it follows the fd number, and on a number reused meanwhile it
 * reads ahead in the wrong file or fails with EBADF, never more.
 *
 * The table (10 KiB) is made at a context's first buffered read, not at
 * its creation: a context that never reads one (O_DIRECT only, or none at
 * all) never pays for it. Without memory for it, there is no readahead.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "devra.h"
#include "fdtable.h"
#include "ioprio_thread.h"
#include "pool.h"
#include "probe.h"
#include "rw_batch.h"
#include "readahead.h"
#include "req.h"

#define RA_SLOTS 64
#define RA_WINDOW_CAP (32ull << 20)
#define SEQ_AFTER 2             /* sequential reads seen before prefetching */
#define RA_WARM 2              /* device limits of stream before judging the kernel */
#define SEQ_BACK 32             /* request sizes behind the end still sequential */

/*
 * fd, seq, next and start are written under lock, except that a read away
 * from the end on a slot with no stream moves next and start without it
 * (fsaio__stream_enter), and are read without it there: every access to
 * them is a relaxed atomic one (GET, PUT). Losing such a race costs a
 * stream detected a read later, never more: a slot with seq 0 has no
 * window and nothing prefetched.
 */
#define GET(field) __atomic_load_n(&(field), __ATOMIC_RELAXED)
#define PUT(field, v) __atomic_store_n(&(field), (v), __ATOMIC_RELAXED)

struct stream {
	pthread_mutex_t lock;
	int fd;                 /* lock, GET/PUT: -1 when empty */
	unsigned seq;           /* lock, GET/PUT: sequential reads in a row */
	uint64_t next;          /* lock, GET/PUT: end of the furthest read */
	uint64_t pf_end;        /* lock: prefetched (or queued) up to here */
	uint64_t window;        /* lock: bytes to keep prefetched ahead; 0: none */
	uint64_t start;         /* lock, GET/PUT: where the stream began */
	uint64_t limit;         /* lock: the device's readahead limit */
	/* The pending prefetch, taken by the job. */
	int job_fd;             /* lock */
	uint64_t job_off, job_end; /* lock: job_end == 0 when nothing pending */
	struct fsaio__job job;  /* queued under pool.lock */
	struct fsaio__readahead *owner; /* immutable */
};

#define UP_SLOTS 64

struct up_range {
	int fd;
	uint64_t off, len;
};

struct fsaio__ra {
	struct stream s[RA_SLOTS];
	pthread_mutex_t up_lock;
	struct up_range up[UP_SLOTS]; /* up_lock: ranges waiting for the job */
	unsigned up_n;          /* up_lock */
	struct fsaio__job up_job; /* queued under pool.lock */
	bool off;               /* immutable: FSAIO_CTX_NO_READAHEAD or FSAIO_READAHEAD=0 */
	struct fsaio__readahead *owner; /* immutable */
};

/* ---- the device limit ---- */

/* The readahead limit (bytes) of the device holding the file of facts fi,
 * which the fd table learnt with them (devra.c); the kernel's default
 * where they hold none. */
static uint64_t limit_of(struct fsaio__fdinfo fi)
{
	return fi.ra_kb1 ? (uint64_t)(fi.ra_kb1 - 1) * 1024 : FSAIO__RA_DEFAULT_KB * 1024;
}

/* The same for fd, looked up: for an fd closed or reused meanwhile the
 * call it sizes fails or reads ahead elsewhere, a hint either way. */
static uint64_t ra_limit(struct fsaio__readahead *owner, int fd)
{
	struct fsaio__fdinfo fi;

	if (fsaio__fd_get(owner->fdt, fd, &fi))
		fi.ra_kb1 = 0;
	return limit_of(fi);
}

/* readahead(2) in limit-sized calls (the kernel cuts a larger one to the
 * file's ra_pages silently); POSIX_FADV_WILLNEED where readahead is refused.
 * Counted as prefetch in st unless it is NULL (a miss's own range). Whether
 * all of it was asked for. */
static bool do_readahead(struct fsaio__counters *st, int fd, uint64_t off, uint64_t len,
			 uint64_t limit)
{
	int saved = errno;

	if (!limit)
		return false;     /* read_ahead_kb 0: the admin wants none */
	while (len) {
		uint64_t n = len < limit ? len : limit;

		if (st) {
			FSAIO__COUNT(st, ra_calls, 1);
			FSAIO__COUNT(st, ra_bytes, n);
		}
		if (readahead(fd, (off_t)off, (size_t)n) < 0 &&
		    (errno != EINVAL || posix_fadvise(fd, (off_t)off, (off_t)n, POSIX_FADV_WILLNEED)))
			break;
		off += n;
		len -= n;
	}
	errno = saved;
	return !len;
}

/* ---- streams ---- */

/* arg: the pool's (unused: a job finds its stream from j). */
static void stream_job(void *arg, struct fsaio__job *j)
{
	struct stream *s = (struct stream *)((char *)j - offsetof(struct stream, job));
	uint64_t off, end, limit;
	int fd;

	pthread_mutex_lock(&s->lock);
	fd = s->job_fd;
	off = s->job_off;
	end = s->job_end;
	limit = s->limit;
	s->job_end = 0;
	pthread_mutex_unlock(&s->lock);
	/* The fd may have been closed meanwhile: a hint on the wrong file or
	 * EBADF, nothing worse. Where the kernel's own readahead is already
	 * ahead (most of the range in the cache or under I/O), leave it
	 * alone: readahead(2) sets no PG_readahead marks, so taking over
	 * would stop the kernel's asynchronous pipeline. */
	(void)arg;
	if (end > off && fsaio__probe(s->owner->st, fd, off, end - off) != FSAIO__RES_HOT)
		do_readahead(s->owner->st, fd, off, end - off, limit);
}

/* Under s->lock: start the window at 4 requests, or double it, up to
 * max(device limit, 8 requests), at most RA_WINDOW_CAP. */
static void grow(struct stream *s, uint64_t len)
{
	uint64_t wmax = s->limit > 8 * len ? s->limit : 8 * len;

	if (wmax > RA_WINDOW_CAP)
		wmax = RA_WINDOW_CAP;
	s->window = s->window ? 2 * s->window : 4 * len;
	if (s->window > wmax)
		s->window = wmax;
}

static bool top_up(struct stream *s, int fd);

static void reset(struct stream *s, int fd, struct fsaio__fdinfo fi, uint64_t off, uint64_t len)
{
	if (GET(s->fd) != fd)
		s->limit = limit_of(fi);
	PUT(s->fd, fd);
	PUT(s->seq, 0);
	PUT(s->next, off + len);
	PUT(s->start, off);
	s->pf_end = 0;
	s->window = 0;
}

/* A read of [off, off + len) is not sequential to a stream ending at next:
 * past it, or more than SEQ_BACK request sizes behind. */
static bool away(uint64_t next, uint64_t off, uint64_t len)
{
	return off > next + len || off + SEQ_BACK * len < next;
}

static void up_job(void *arg, struct fsaio__job *j);

/* The context's table, made by the first caller (ra_make, a CAS); NULL
 * when there is no memory for it. */
static struct fsaio__ra *ra_make(struct fsaio__readahead *owner)
{
	struct fsaio__ra *ra = calloc(1, sizeof(*ra)), *was = NULL;
	const char *e = getenv("FSAIO_READAHEAD");

	if (!ra)
		return NULL;
	pthread_mutex_init(&ra->up_lock, NULL);
	ra->up_job.fn = up_job;
	ra->off = owner->disabled || (e && !strcmp(e, "0"));
	ra->owner = owner;
	for (unsigned i = 0; i < RA_SLOTS; i++) {
		pthread_mutex_init(&ra->s[i].lock, NULL);
		ra->s[i].fd = -1;
		ra->s[i].job.fn = stream_job;
		ra->s[i].owner = owner;
	}
	if (atomic_compare_exchange_strong_explicit(&owner->table, &was, ra, memory_order_acq_rel,
						    memory_order_acquire))
		return ra;
	free(ra);
	return was;
}

static struct fsaio__ra *ra_get(struct fsaio__readahead *owner)
{
	struct fsaio__ra *ra = atomic_load_explicit(&owner->table, memory_order_acquire);

	return ra ? ra : ra_make(owner);
}

/* The table of a context where a stream was seen (HINT_SEQ) or an upfront
 * job queued: made already. */
static struct fsaio__ra *ra_of(struct fsaio__readahead *owner)
{
	return atomic_load_explicit(&owner->table, memory_order_acquire);
}

void fsaio__stream_enter(struct fsaio__readahead *owner, struct fsaio_req *r,
			 struct fsaio__fdinfo fi)
{
	struct fsaio__ra *ra;
	uint64_t off = (uint64_t)r->offset, len = fsaio__total(r);
	struct stream *s;
	bool queue = false;
	unsigned seq;

	r->hints_ = 0;
	if ((fi.flags & FSAIO__FD_ADV_RANDOM) || !len || fsaio__dontcache(r) ||
	    !(ra = ra_get(owner)) || ra->off)
		return;
	s = &ra->s[(unsigned)r->fd % RA_SLOTS];
	/* The random reads' case, without the lock: only the end moves. */
	if (!(fi.flags & FSAIO__FD_ADV_SEQ) && GET(s->fd) == r->fd && GET(s->seq) == 0 &&
	    away(GET(s->next), off, len)) {
		PUT(s->next, off + len);
		PUT(s->start, off);
		return;
	}
	pthread_mutex_lock(&s->lock);
	if (GET(s->fd) != r->fd || away(GET(s->next), off, len)) {
		reset(s, r->fd, fi, off, len);
		if (!(fi.flags & FSAIO__FD_ADV_SEQ)) {
			pthread_mutex_unlock(&s->lock);
			return;
		}
		PUT(s->seq, SEQ_AFTER);
	}
	if (off + len > GET(s->next))
		PUT(s->next, off + len);
	seq = GET(s->seq);
	if (seq < SEQ_AFTER) {
		PUT(s->seq, ++seq);
		if (seq < SEQ_AFTER) {
			pthread_mutex_unlock(&s->lock);
			return;
		}
	}
	r->hints_ |= FSAIO__HINT_SEQ;
	if ((fi.flags & FSAIO__FD_ADV_SEQ) && !s->window)
		grow(s, len);
	queue = top_up(s, r->fd);
	pthread_mutex_unlock(&s->lock);
	if (queue)
		owner->queue_job(owner->arg, &s->job);
}

/* A stream read missed: start or widen the window, unless the kernel's own
 * readahead is at work ahead of the stream (some of the next four requests'
 * pages are in the cache or under I/O already). Then the miss is only the
 * reader catching up with I/O in flight, and taking over lowers the share
 * served inline (docs/design-notes.md). Where the kernel reads nothing
 * ahead (an fd advised RANDOM elsewhere, a small read_ahead_kb) the window
 * pays. Called before r is handed on. */
void fsaio__stream_miss(struct fsaio__readahead *owner, struct fsaio_req *r)
{
	struct stream *s = &ra_of(owner)->s[(unsigned)r->fd % RA_SLOTS];
	uint64_t len = fsaio__total(r), ahead;
	bool queue = false, window, warm;

	pthread_mutex_lock(&s->lock);
	if (GET(s->fd) != r->fd || GET(s->seq) < SEQ_AFTER) {
		pthread_mutex_unlock(&s->lock);
		return;
	}
	ahead = GET(s->next);
	window = s->window != 0;
	/* The kernel's window ramps up to read_ahead_kb over its first
	 * rounds, and early on a deep stream reaches past it: judge it only
	 * once the stream has covered RA_WARM device limits. */
	warm = GET(s->next) - GET(s->start) >= RA_WARM * s->limit;
	pthread_mutex_unlock(&s->lock);
	if (!window && (!warm || fsaio__probe(owner->st, r->fd, ahead, 4 * len) != FSAIO__RES_COLD))
		return;
	pthread_mutex_lock(&s->lock);
	if (GET(s->fd) == r->fd && GET(s->seq) >= SEQ_AFTER) {
		grow(s, len);
		queue = top_up(s, r->fd);
	}
	pthread_mutex_unlock(&s->lock);
	if (queue)
		owner->queue_job(owner->arg, &s->job);
}

/* Under s->lock: queue the part of the window not yet prefetched. */
static bool top_up(struct stream *s, int fd)
{
	uint64_t target;

	if (!s->window)
		return false;
	if (s->pf_end < GET(s->next))
		s->pf_end = GET(s->next);
	target = GET(s->next) + s->window;
	/* Top up once half the window is used: fewer, larger calls. */
	if (target >= s->pf_end + s->window / 2 && target > s->pf_end) {
		if (!s->job_end || s->job_fd != fd) {
			s->job_fd = fd;
			s->job_off = s->pf_end;
		}
		s->job_end = target;
		s->pf_end = target;
		return true;
	}
	return false;
}

void fsaio__stream_hit(struct fsaio__readahead *owner, struct fsaio_req *r)
{
	struct stream *s;

	if (!(r->hints_ & FSAIO__HINT_SEQ))
		return;
	FSAIO__COUNT(owner->st, stream_hits, 1);
	s = &ra_of(owner)->s[(unsigned)r->fd % RA_SLOTS];
	pthread_mutex_lock(&s->lock);
	/* Only a window that exists grows: a stream the kernel keeps ahead
	 * of by itself never gets one. */
	if (GET(s->fd) == r->fd && s->window)
		grow(s, fsaio__total(r));
	pthread_mutex_unlock(&s->lock);
}

/* ---- upfront ---- */

static void up_job(void *arg, struct fsaio__job *j)
{
	struct fsaio__ra *ra = (struct fsaio__ra *)((char *)j - offsetof(struct fsaio__ra, up_job));
	struct up_range batch[UP_SLOTS];
	unsigned n;

	(void)arg;
	pthread_mutex_lock(&ra->up_lock);
	n = ra->up_n;
	memcpy(batch, ra->up, n * sizeof(batch[0]));
	ra->up_n = 0;
	pthread_mutex_unlock(&ra->up_lock);
	for (unsigned i = 0; i < n; i++) {
		uint64_t limit = ra_limit(ra->owner, batch[i].fd);

		do_readahead(ra->owner->st, batch[i].fd, batch[i].off,
			     batch[i].len < limit ? batch[i].len : limit, limit);
	}
}

/* Only a request that will sit in the queue while every worker is busy
 * (see the DESIGN comment for why and the numbers). */
void fsaio__ra_upfront(struct fsaio__readahead *owner, struct fsaio_req *r)
{
	struct fsaio__ra *ra;
	uint64_t total = fsaio__total(r);
	bool queue = false;

	if ((r->hints_ & FSAIO__HINT_KERNEL_RA) || fsaio__is_write(r) || !fsaio__is_rw(r) ||
	    r->done_ >= total || fsaio__dontcache(r) || !owner->pool_full(owner->arg) ||
	    !(ra = ra_get(owner)) || ra->off)
		return;
	pthread_mutex_lock(&ra->up_lock);
	if (ra->up_n < UP_SLOTS) {
		ra->up[ra->up_n++] = (struct up_range){ r->fd, (uint64_t)r->offset + r->done_,
							 total - r->done_ };
		queue = true;
	}
	pthread_mutex_unlock(&ra->up_lock);
	if (queue)
		owner->queue_job(owner->arg, &ra->up_job);
}

bool fsaio__ra_startable(struct fsaio__readahead *owner, const struct fsaio_req *r)
{
	struct fsaio__ra *ra;

	if (fsaio__is_write(r) || !fsaio__is_rw(r) || r->done_ >= fsaio__total(r) ||
	    fsaio__dontcache(r))
		return false;
	/* The table holds whether readahead is off; made at the first miss. */
	return (ra = ra_get(owner)) && !ra->off;
}

bool fsaio__ra_start(struct fsaio__readahead *owner, const struct fsaio_req *r)
{
	uint64_t total = fsaio__total(r);
	struct fsaio__ra *ra;

	if (fsaio__is_write(r) || !fsaio__is_rw(r) || r->done_ >= total || fsaio__dontcache(r))
		return false;
	/* The table holds whether readahead is off; made at the first miss. */
	if (!(ra = ra_get(owner)) || ra->off)
		return false;
	if (r->hints_ & FSAIO__HINT_KERNEL_RA)
		return true;
	/* On the descriptor r runs on (bound to its file), with the limit of
	 * the device its fd number was learnt on. r may be a copy of a request
	 * cancelled meanwhile, its descriptor closed or the number reused: a
	 * hint, EBADF or a readahead of another file at worst. */
	return do_readahead(NULL, fsaio__fd(r), (uint64_t)r->offset + r->done_, total - r->done_,
			    ra_limit(owner, r->fd));
}

void fsaio__ra_start_many(struct fsaio__readahead *owner, struct fsaio__rw_batch *k,
			  const struct fsaio_req *r, unsigned n, bool *started)
{
	const struct fsaio_req *todo[FSAIO__RW_BATCH_MAX];
	unsigned at[FSAIO__RW_BATCH_MAX], m = 0, sent;

	for (unsigned i = 0; i < n; i++) {
		const struct fsaio_req *q = &r[i];
		uint64_t left = fsaio__total(q) - q->done_;

		started[i] = false;
		if (!fsaio__ra_startable(owner, q))
			continue;
		if (q->hints_ & FSAIO__HINT_KERNEL_RA) {
			started[i] = true;
		} else if (q->ioprio) {
			/* Its readahead is its I/O: at its priority. */
			fsaio__ioprio_enter(q->ioprio);
			started[i] = fsaio__ra_start(owner, q);
			fsaio__ioprio_leave();
		} else if (m < FSAIO__RW_BATCH_MAX && left <= FSAIO__RW_BATCH_START_MAX &&
			 ra_limit(owner, q->fd) >= left) {
			todo[m] = q;
			at[m++] = i;
		} else {
			started[i] = fsaio__ra_start(owner, q);
		}
	}
	sent = m ? fsaio__rw_batch_start(k, todo, m) : 0;
	for (unsigned j = 0; j < m; j++)
		started[at[j]] = j < sent || fsaio__ra_start(owner, todo[j]);
}

void fsaio__ra_init(struct fsaio__readahead *ra, bool disabled, struct fsaio__counters *st,
		    struct fsaio__fdtable *fdt,
		    void (*queue_job)(void *arg, struct fsaio__job *job),
		    bool (*pool_full)(void *arg), void *arg)
{
	atomic_init(&ra->table, NULL);
	ra->disabled = disabled;
	ra->st = st;
	ra->fdt = fdt;
	ra->queue_job = queue_job;
	ra->pool_full = pool_full;
	ra->arg = arg;
}

/* Memory only: also called in a forked child, where a slot lock may be
 * held by a thread that does not exist there. */
void fsaio__ra_fini(struct fsaio__readahead *ra)
{
	free(atomic_load_explicit(&ra->table, memory_order_acquire));
	atomic_store_explicit(&ra->table, NULL, memory_order_relaxed);
}

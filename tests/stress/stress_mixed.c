/* SPDX-License-Identifier: MIT */
/*
 * The mixed workload: scenarios mixed, reapers, direct, uring_misses and
 * fork are this one runner with different settings (the sc_ functions at
 * the end of the file).
 */
#include "stress_core.h"

/* M_READ_SEQ: the next range of the thread's own sequential stream, on its
 * own fd, so the engine's stream detection and prefetch jobs run too. */
enum mop { M_READ, M_READV, M_READ_NOWAIT, M_READ_SEQ, M_WRITE, M_WRITEV, M_FSYNC, M_FDSYNC,
	   M_NOPS };

enum { S_FREE, S_INFLIGHT };

#define M_SLOTS 16              /* requests per submitter */
#define M_BUF (256 * KiB)       /* largest request */
#define M_IOV 8
#define M_READ_SIZE (24 * MiB)  /* the file read by every thread */
#define M_BAND (2 * MiB)        /* each submitter's part of the written file */
#define M_HOT (1 * MiB)         /* the read file's head, read often and kept hot */
#define M_MAX_SUB 4

struct mslot {
	struct fsaio_req req;
	struct iovec iov[M_IOV];
	uint8_t *buf;           /* M_BUF + GUARD (+ gaps), 4 KiB aligned */
	enum mop op;
	uint64_t off, len;      /* file range (reads may cross EOF) */
	uint64_t seq;           /* user_data of the current submission */
	atomic_int state;       /* S_FREE / S_INFLIGHT; release on change */
	atomic_int events;      /* events seen for the current submission */
	unsigned owner;
};

struct mixcfg {
	unsigned submitters;    /* threads that submit (and reap, unless reapers) */
	unsigned reapers;       /* separate reaper threads; 0: submitters reap */
	bool stats_thread;      /* a thread on get_stats, event_fd and poll */
	bool direct;            /* O_DIRECT files: aligned I/O through io_uring */
	uint32_t backend;       /* fsaio_params.miss_backend */
	unsigned workers;       /* 0: the default */
	unsigned forks;         /* forks made while the workers are busy */
	unsigned ms;            /* time budget for submitting */
	unsigned target;        /* requests per submitter at most */
};

struct mixed;

struct msub {
	struct mixed *m;
	unsigned id;
	struct rng rng;
	struct mslot slots[M_SLOTS];
	atomic_uint outstanding; /* this thread's requests in flight */
	unsigned submitted;     /* this thread only */
	_Atomic uint64_t *cover; /* bytes of the band written, one bit per byte */
	int seq_fd;             /* the read file again, for this thread's stream */
	uint64_t seq_pos;       /* where the stream goes on */
	pthread_t thread;
};

struct mixed {
	const struct mixcfg *cfg;
	fsaio_ctx_t *ctx;
	int rfd, rfd_plain, churn_fd; /* read file: as used, buffered, FADV_RANDOM */
	int wfd, wfd_plain;     /* written file */
	unsigned rseed, wseed;
	int64_t deadline;
	atomic_ulong accepted, reaped;
	atomic_ulong op_count[M_NOPS];
	atomic_bool submit_done, all_done;
	atomic_ulong nowait_eagain;
	struct msub sub[M_MAX_SUB];
	unsigned forks_done;
	uint64_t fork_busy_threads;
};

static const char *const mop_name[M_NOPS] = {
	"read", "readv", "read-nowait", "read-seq", "write", "writev", "fsync", "fdatasync",
};

static void cover_set(_Atomic uint64_t *bits, uint64_t off, uint64_t len)
{
	uint64_t end = off + len;

	while (off < end) {
		unsigned bit = (unsigned)(off & 63);
		uint64_t n = end - off < 64 - bit ? end - off : 64 - bit;
		uint64_t mask = n == 64 ? ~0ull : ((1ull << n) - 1) << bit;

		atomic_fetch_or_explicit(&bits[off >> 6], mask, memory_order_relaxed);
		off += n;
	}
}

/* The expected result of a read of [off, off+len) from a file of size. */
static uint64_t read_expect(uint64_t size, uint64_t off, uint64_t len)
{
	if (off >= size)
		return 0;
	return len < size - off ? len : size - off;
}

/* Lay out a vectored request's buffers in s->buf: segments separated by
 * guard gaps (none with O_DIRECT, whose segments must stay aligned). */
static unsigned lay_iov(struct mixed *m, struct msub *t, struct mslot *s, uint64_t total)
{
	unsigned n = (unsigned)rnd_in(&t->rng, 1, M_IOV);
	size_t pos = 0, gap = m->cfg->direct ? 0 : 16;
	uint64_t left = total;
	unsigned i;

	for (i = 0; i < n && left; i++) {
		uint64_t l = i == n - 1 ? left : rnd_in(&t->rng, 0, left);

		if (m->cfg->direct)
			l &= ~(uint64_t)4095;
		if (i == n - 1)
			l = left;
		s->iov[i].iov_base = s->buf + pos;
		s->iov[i].iov_len = (size_t)l;
		pos += (size_t)l + gap;
		left -= l;
	}
	return i;
}

/* Fill slot s with a random request of thread t. */
static void mixed_prep(struct mixed *m, struct msub *t, struct mslot *s)
{
	const struct mixcfg *c = m->cfg;
	uint64_t pick = rnd(&t->rng) % 100, len, off;
	unsigned niov;
	int fd;

	if (pick < 30)
		s->op = M_READ;
	else if (pick < 42)
		s->op = M_READV;
	else if (pick < 47)
		s->op = c->direct ? M_READ : M_READ_NOWAIT;
	else if (pick < 60)
		s->op = M_READ_SEQ;
	else if (pick < 77)
		s->op = M_WRITE;
	else if (pick < 90)
		s->op = M_WRITEV;
	else if (pick < 95)
		s->op = M_FSYNC;
	else
		s->op = M_FDSYNC;

	/* Sizes: mostly small, some up to M_BUF. */
	pick = rnd(&t->rng) % 10;
	len = pick < 5 ? rnd_in(&t->rng, 1, 8 * KiB) :
	      pick < 8 ? rnd_in(&t->rng, 8 * KiB, 64 * KiB) : rnd_in(&t->rng, 64 * KiB, M_BUF);
	if (s->op == M_READ_SEQ) {
		len = rnd_in(&t->rng, 16 * KiB, 128 * KiB);
		if (c->direct)
			len = (len + 4095) & ~(uint64_t)4095;
		off = t->seq_pos;
		t->seq_pos = off + len >= M_READ_SIZE ? 0 : off + len;
		fd = t->seq_fd;
	} else if (s->op <= M_READ_NOWAIT) {
		/* A third in the hot head; some past EOF. */
		if (rnd(&t->rng) % 3 == 0)
			off = rnd_in(&t->rng, 0, M_HOT - 1);
		else
			off = rnd_in(&t->rng, 0, M_READ_SIZE + 8 * KiB);
		fd = m->rfd;
	} else {
		off = rnd_in(&t->rng, 0, M_BAND - 1);
		if (len > M_BAND - off)
			len = M_BAND - off;
		off += (uint64_t)t->id * M_BAND;
		fd = m->wfd;
	}
	if (c->direct) {
		off &= ~(uint64_t)4095;
		len = (len + 4095) & ~(uint64_t)4095;
		if (s->op >= M_WRITE && off + len > ((uint64_t)t->id + 1) * M_BAND)
			len = ((uint64_t)t->id + 1) * M_BAND - off;
	}
	s->off = off;
	s->len = len;

	switch (s->op) {
	case M_READ:
	case M_READ_NOWAIT:
	case M_READ_SEQ:
		/* Poison what the read must overwrite, guard what it must not. */
		memset(s->buf, 0x5A, (size_t)len);
		memset(s->buf + len, GUARD_BYTE, GUARD);
		fsaio_prep_pread(&s->req, fd, s->buf, (size_t)len, (int64_t)off);
		if (s->op == M_READ_NOWAIT)
			s->req.rw_flags = RWF_NOWAIT;
		break;
	case M_READV:
		niov = lay_iov(m, t, s, len);
		memset(s->buf, GUARD_BYTE, (size_t)((uint8_t *)s->iov[niov - 1].iov_base -
			s->buf) + s->iov[niov - 1].iov_len + GUARD);
		for (unsigned i = 0; i < niov; i++)
			memset(s->iov[i].iov_base, 0x5A, s->iov[i].iov_len);
		fsaio_prep_preadv(&s->req, fd, s->iov, (int)niov, (int64_t)off);
		break;
	case M_WRITE:
		pat_fill(s->buf, (size_t)len, m->wseed, off);
		fsaio_prep_pwrite(&s->req, fd, s->buf, (size_t)len, (int64_t)off);
		break;
	case M_WRITEV: {
		uint64_t pos = off;

		niov = lay_iov(m, t, s, len);
		for (unsigned i = 0; i < niov; i++) {
			pat_fill(s->iov[i].iov_base, s->iov[i].iov_len, m->wseed, pos);
			pos += s->iov[i].iov_len;
		}
		fsaio_prep_pwritev(&s->req, fd, s->iov, (int)niov, (int64_t)off);
		break;
	}
	case M_FSYNC:
		fsaio_prep_fsync(&s->req, m->wfd);
		break;
	default:
		fsaio_prep_fdatasync(&s->req, m->wfd);
		break;
	}
}

static void verify_read(struct mixed *m, struct mslot *s, int64_t res)
{
	uint64_t exp = read_expect(M_READ_SIZE, s->off, s->len);
	ssize_t bad;

	if (s->op == M_READ_NOWAIT) {
		/* The caller's RWF_NOWAIT: what the cache had, or -EAGAIN. */
		if (res == -EAGAIN) {
			atomic_fetch_add_explicit(&m->nowait_eagain, 1, memory_order_relaxed);
			return;
		}
		CHECK(res >= 0 && (uint64_t)res <= exp && (res > 0 || exp == 0),
		      "NOWAIT read of %" PRIu64 "@%" PRIu64 ": res %" PRId64 ", at most %" PRIu64,
		      s->len, s->off, res, exp);
	} else {
		CHECK(res >= 0 && (uint64_t)res == exp, "%s of %" PRIu64 "@%" PRIu64 ": res %" PRId64
		      ", want %" PRIu64, mop_name[s->op], s->len, s->off, res, exp);
	}
	if (res <= 0)
		return;
	if (s->op == M_READV) {
		uint64_t pos = s->off, left = (uint64_t)res;
		unsigned n = (unsigned)s->req.len;

		for (unsigned i = 0; i < n; i++) {
			size_t l = s->iov[i].iov_len;
			uint8_t *end = (uint8_t *)s->iov[i].iov_base + l;
			size_t gap = i + 1 < n ? (size_t)((uint8_t *)s->iov[i + 1].iov_base - end) : GUARD;

			if (left) {
				size_t k = l < left ? l : (size_t)left;

				bad = pat_mismatch(s->iov[i].iov_base, k, m->rseed, pos);
				CHECK(bad < 0, "readv of %" PRIu64 "@%" PRIu64 ": iovec %u wrong at byte %zd",
				      s->len, s->off, i, bad);
				pos += k;
				left -= k;
			}
			CHECK(bytes_are(end, gap, GUARD_BYTE),
			      "readv of %" PRIu64 "@%" PRIu64 ": wrote past iovec %u", s->len, s->off, i);
		}
		return;
	}
	bad = pat_mismatch(s->buf, (size_t)res, m->rseed, s->off);
	CHECK(bad < 0, "%s of %" PRIu64 "@%" PRIu64 ": wrong data at byte %zd",
	      mop_name[s->op], s->len, s->off, bad);
	CHECK(bytes_are(s->buf + s->len, GUARD, GUARD_BYTE),
	      "%s of %" PRIu64 "@%" PRIu64 ": wrote past the buffer", mop_name[s->op], s->len, s->off);
}

/* One event, whoever's request it is: check it, record writes, free the
 * slot for its owner. */
static void mixed_event(struct mixed *m, const struct fsaio_event *ev)
{
	struct mslot *s;
	struct msub *t;
	bool known = false;

	/* Only requests of ours may come back: find the slot without
	 * dereferencing a pointer the engine might have mangled. */
	for (unsigned i = 0; i < m->cfg->submitters && !known; i++) {
		struct mslot *first = &m->sub[i].slots[0];

		if ((const char *)ev->req >= (const char *)first &&
		    (const char *)ev->req < (const char *)(first + M_SLOTS) &&
		    ((size_t)((const char *)ev->req - (const char *)first) % sizeof(*first)) ==
		    offsetof(struct mslot, req))
			known = true;
	}
	if (!known) {
		FAIL("event with a request that is not ours (%p)", (void *)ev->req);
		return;
	}
	s = CONTAINER_OF(ev->req, struct mslot, req);
	t = &m->sub[s->owner];
	if (atomic_load_explicit(&s->state, memory_order_acquire) != S_INFLIGHT) {
		FAIL("event for a request not in flight (%s, res %" PRId64 ")", mop_name[s->op], ev->res);
		return;
	}
	if ((uintptr_t)ev->user_data != s->seq)
		FAIL("event user_data %p, the submission's is %#" PRIx64, ev->user_data, s->seq);
	if (atomic_fetch_add(&s->events, 1) != 0) {
		FAIL("second event for one submission (%s)", mop_name[s->op]);
		return;
	}
	CHECK(ev->res2 == 0, "%s: res2 %" PRId64 " without a cancel", mop_name[s->op], ev->res2);
	switch (s->op) {
	case M_READ:
	case M_READV:
	case M_READ_NOWAIT:
	case M_READ_SEQ:
		verify_read(m, s, ev->res);
		break;
	case M_WRITE:
	case M_WRITEV:
		CHECK(ev->res == (int64_t)s->len, "%s of %" PRIu64 "@%" PRIu64 ": res %" PRId64,
		      mop_name[s->op], s->len, s->off, ev->res);
		if (ev->res == (int64_t)s->len)
			cover_set(t->cover, s->off - (uint64_t)t->id * M_BAND, s->len);
		break;
	default:
		CHECK(ev->res == 0, "%s: res %" PRId64, mop_name[s->op], ev->res);
		break;
	}
	atomic_fetch_add_explicit(&m->op_count[s->op], 1, memory_order_relaxed);
	atomic_fetch_add(&m->reaped, 1);
	atomic_store_explicit(&s->state, S_FREE, memory_order_release);
	atomic_fetch_sub(&t->outstanding, 1);
}

/* Reap what is there (waiting up to wait_ms for min_nr); the count. */
static int mixed_reap(struct mixed *m, unsigned min_nr, unsigned wait_ms)
{
	struct fsaio_event evs[32];
	int n = getevents(m->ctx, min_nr, ARRAY_SIZE(evs), evs, wait_ms);

	for (int i = 0; i < n; i++)
		mixed_event(m, &evs[i]);
	return n;
}

/* Keep the read file's cache in flux: drop a random MiB, then bring back
 * some pages of it through an FADV_RANDOM fd (no readahead), so requests
 * meet cold, half-cached and hot ranges. */
static void churn(struct mixed *m, struct msub *t)
{
	uint64_t base = rnd_in(&t->rng, 0, M_READ_SIZE / MiB - 1) * MiB;
	uint8_t page[4096];

	(void)posix_fadvise(m->rfd_plain, (off_t)base, MiB, POSIX_FADV_DONTNEED);
	for (int i = 0; i < 16; i++) {
		uint64_t off = base + rnd_in(&t->rng, 0, MiB / 4096 - 1) * 4096;

		if (pread(m->churn_fd, page, sizeof(page), (off_t)off) != (ssize_t)sizeof(page))
			FAIL("churn pread: %s", strerror(errno));
	}
	/* Advice changed under the thread's own stream now and then. */
	if (rnd(&t->rng) % 8 == 0) {
		static const int adv[] = { POSIX_FADV_NORMAL, POSIX_FADV_SEQUENTIAL, POSIX_FADV_RANDOM };
		int a = adv[rnd(&t->rng) % 3], ret = fsaio_fadvise(m->ctx, t->seq_fd, a);

		CHECK(ret == 0, "fsaio_fadvise(%d): %d", a, ret);
	}
	/* The hot head, read back in case reclaim took it. */
	if (rnd(&t->rng) % 4 == 0) {
		uint8_t *buf = xmalloc(M_HOT);

		if (pread(m->rfd_plain, buf, M_HOT, 0) != (ssize_t)M_HOT)
			FAIL("hot pread: %s", strerror(errno));
		free(buf);
	}
}

static void *mixed_submitter(void *arg)
{
	struct msub *t = arg;
	struct mixed *m = t->m;
	bool reap = m->cfg->reapers == 0;
	int64_t last_progress = now_ns();

	while (!has_failed()) {
		bool more = t->submitted < m->cfg->target && now_ns() < m->deadline;
		struct fsaio_req *batch[M_SLOTS];
		struct mslot *bs[M_SLOTS];
		unsigned want, nb = 0;

		/* Done when nothing is left to submit and, for a thread that
		 * reaps, nothing of its own is owed (separate reapers wait for
		 * the rest; the slots outlive this thread). */
		if (!more && (!reap || atomic_load(&t->outstanding) == 0))
			break;
		if (more) {
			want = (unsigned)rnd_in(&t->rng, 1, 8);
			for (unsigned i = 0; i < M_SLOTS && nb < want; i++) {
				struct mslot *s = &t->slots[i];

				if (atomic_load_explicit(&s->state, memory_order_acquire) != S_FREE)
					continue;
				mixed_prep(m, t, s);
				s->seq = mix64(((uint64_t)t->id << 48) ^ ++t->submitted) | 8;
				s->req.user_data = (void *)(uintptr_t)s->seq;
				atomic_store(&s->events, 0);
				/* Before submit: the event may be reaped by
				 * another thread before submit returns. */
				atomic_store_explicit(&s->state, S_INFLIGHT, memory_order_release);
				bs[nb] = s;
				batch[nb++] = &s->req;
			}
		}
		if (nb) {
			int ret;

			atomic_fetch_add(&t->outstanding, nb);
			ret = submit(m->ctx, batch, nb);
			if (ret < 0 && ret != -EAGAIN)
				FAIL("fsaio_submit: %d", ret);
			if (ret > 0)
				atomic_fetch_add(&m->accepted, (unsigned long)ret);
			/* Requests not accepted have no event coming: they are
			 * ours again (-EAGAIN: the queue is full; back off). */
			for (unsigned i = ret > 0 ? (unsigned)ret : 0; i < nb; i++) {
				atomic_store_explicit(&bs[i]->state, S_FREE, memory_order_release);
				atomic_fetch_sub(&t->outstanding, 1);
				t->submitted--;
			}
			if (t->submitted % 16 == 0 && !m->cfg->direct)
				churn(m, t);
		}
		if (reap) {
			/* Poll while there is more to submit, else wait. */
			if (mixed_reap(m, nb ? 0 : 1, nb ? 0 : 10) > 0 || nb)
				last_progress = now_ns();
		} else if (nb) {
			last_progress = now_ns();
		} else {
			sleep_us(200);  /* no free slot: the reapers will free some */
		}
		if (now_ns() - last_progress > (int64_t)LOST_EVENT_S * 1000000000) {
			FAIL("thread %u: %u request(s) without an event for %d s",
			     t->id, atomic_load(&t->outstanding), LOST_EVENT_S);
			break;
		}
	}
	return NULL;
}

struct mreaper {
	struct mixed *m;
	struct rng rng;
	pthread_t thread;
};

/* A separate reaper: getevents with min_nr > 1 and short timeouts, so the
 * timeout path (fewer than min_nr when it expires) is taken often. */
static void *mixed_reaper(void *arg)
{
	struct mreaper *r = arg;
	struct mixed *m = r->m;
	int64_t last = now_ns();

	while (!has_failed()) {
		unsigned min_nr = (unsigned)rnd_in(&r->rng, 2, 8);

		if (mixed_reap(m, min_nr, (unsigned)rnd_in(&r->rng, 1, 20)) > 0)
			last = now_ns();
		bool submitted = atomic_load(&m->submit_done);

		if (reaper_stops(submitted, atomic_load(&m->accepted), atomic_load(&m->reaped),
				 last, "reaper"))
			break;
	}
	return NULL;
}

/* get_stats, event_fd and poll(2) on it in a loop, while others submit and
 * reap: the counters only grow, the fd stays the same. */
static void *mixed_stats(void *arg)
{
	struct mixed *m = arg;
	struct fsaio_stats prev, st;
	int efd = -1;
	unsigned loops = 0;

	memset(&prev, 0, sizeof(prev));
	while (!atomic_load(&m->all_done) && !has_failed()) {
		struct pollfd pfd;
		int fd;

		st = get_stats(m->ctx);
#define MONO(f) CHECK(st.f >= prev.f, "stats: " #f " went from %" PRIu64 " to %" PRIu64, prev.f, st.f)
		MONO(requests);
		MONO(completed_inline);
		MONO(partial_inline);
		MONO(queued);
		MONO(retries);
		MONO(blocking_inline);
		MONO(bytes_inline);
		MONO(bytes_worker);
		MONO(probe_calls);
		MONO(probe_cold);
		MONO(cancelled);
		MONO(uring_submissions);
		MONO(bytes_uring);
#undef MONO
		CHECK(st.pool_threads <= (m->cfg->workers ? m->cfg->workers : 1024),
		      "stats: %" PRIu64 " pool threads, at most %u", st.pool_threads, m->cfg->workers);
		prev = st;
		errno = ERRNO_SENTINEL;
		fd = fsaio_event_fd(m->ctx);
		CHECK(errno == ERRNO_SENTINEL, "fsaio_event_fd changed errno");
		CHECK(fd >= 0, "fsaio_event_fd: %d", fd);
		if (efd < 0)
			efd = fd;
		CHECK(fd == efd, "fsaio_event_fd: %d, before %d", fd, efd);
		pfd = (struct pollfd){ .fd = fd, .events = POLLIN };
		CHECK(poll(&pfd, 1, loops++ % 2) >= 0, "poll on the event fd: %s", strerror(errno));
	}
	return NULL;
}

/* The child of a fork made while the workers are busy: every call on the
 * parent's context answers -EINVAL (destroy frees memory and answers 0);
 * errno is left alone. The first failure goes to the pipe. */
static void fork_child(struct mixed *m, int report)
{
	char msg[200] = "";
	uint8_t buf[512];
	struct fsaio_req req, *rp = &req;
	struct fsaio_event ev;
	struct fsaio_stats st;
	struct timespec zero = { 0, 0 };
	int r;

#define C(expr, want) do {						\
		errno = ERRNO_SENTINEL;					\
		r = (expr);						\
		if (r != (want) && !*msg)				\
			snprintf(msg, sizeof(msg), "child: %s returned %d, want %d", #expr, r, want); \
		if (errno != ERRNO_SENTINEL && !*msg)			\
			snprintf(msg, sizeof(msg), "child: %s changed errno", #expr); \
	} while (0)
	fsaio_prep_pread(&req, m->rfd_plain, buf, sizeof(buf), 0);
	C(fsaio_submit(m->ctx, &rp, 1), -EINVAL);
	C(fsaio_getevents(m->ctx, 0, 1, &ev, &zero), -EINVAL);
	/* Would hang forever if the child's call reached the parent's queue. */
	C(fsaio_getevents(m->ctx, 1, 1, &ev, NULL), -EINVAL);
	C(fsaio_cancel(m->ctx, &m->sub[0].slots[0].req), -EINVAL);
	C(fsaio_event_fd(m->ctx), -EINVAL);
	C(fsaio_get_stats(m->ctx, &st), -EINVAL);
	C(fsaio_fadvise(m->ctx, m->rfd_plain, POSIX_FADV_NORMAL), -EINVAL);
	C(fsaio_ctx_destroy(m->ctx), 0);
#undef C
	if (*msg) {
		if (write(report, msg, strlen(msg)) < 0)
			_exit(3);
		_exit(1);
	}
	_exit(0);
}

static void *mixed_forker(void *arg)
{
	struct mixed *m = arg;
	int64_t gap = (m->deadline - now_ns()) / (m->cfg->forks + 1);

	for (unsigned i = 0; i < m->cfg->forks && !has_failed(); i++) {
		struct fsaio_stats st;
		char msg[256];
		int pfd[2], status;
		ssize_t n;
		pid_t pid;

		sleep_us((unsigned)(gap / 1000));
		st = get_stats(m->ctx);
		if (st.pool_threads)
			m->fork_busy_threads++;
		if (pipe2(pfd, O_CLOEXEC) < 0) {
			FAIL("pipe: %s", strerror(errno));
			break;
		}
		pid = fork();
		if (pid == 0) {
			close(pfd[0]);
			/* The child is single-threaded: keep it so (TSan's
			 * die_after_fork) and bound it on its own too. */
			alarm(20);
			fork_child(m, pfd[1]);
		}
		close(pfd[1]);
		if (pid < 0) {
			FAIL("fork: %s", strerror(errno));
			close(pfd[0]);
			break;
		}
		status = waitpid_bounded(pid, 20000);
		n = read(pfd[0], msg, sizeof(msg) - 1);
		close(pfd[0]);
		msg[n > 0 ? n : 0] = 0;
		if (status < 0)
			FAIL("fork %u: the child did not exit within 20 s", i);
		else if (!WIFEXITED(status) || WEXITSTATUS(status))
			FAIL("fork %u: child status %#x%s%s", i, status, *msg ? ": " : "", msg);
		m->forks_done++;
	}
	return NULL;
}

/* Every byte of each band of the written file: the pattern where a write
 * reported success, zeros (a hole) where none went. */
static void verify_written(struct mixed *m)
{
	uint8_t *buf = xmalloc(M_BAND);

	for (unsigned i = 0; i < m->cfg->submitters && !has_failed(); i++) {
		struct msub *t = &m->sub[i];
		uint64_t base = (uint64_t)i * M_BAND;

		if (pread(m->wfd_plain, buf, M_BAND, (off_t)base) != (ssize_t)M_BAND) {
			FAIL("pread of the written file: %s", strerror(errno));
			break;
		}
		for (uint64_t w = 0; w < M_BAND / 64; w++) {
			uint64_t bits = atomic_load(&t->cover[w]);
			uint8_t *p = buf + w * 64;

			if (bits == ~0ull) {
				ssize_t bad = pat_mismatch(p, 64, m->wseed, base + w * 64);

				if (bad >= 0) {
					FAIL("written file: byte %" PRIu64 " is not what was written",
					     base + w * 64 + (uint64_t)bad);
					break;
				}
				continue;
			}
			for (unsigned b = 0; b < 64; b++) {
				uint64_t off = base + w * 64 + b;
				uint8_t want = (bits >> b) & 1 ? pat_byte(m->wseed, off) : 0;

				if (p[b] != want) {
					FAIL("written file: byte %" PRIu64 " is %#x, want %#x (%s)",
					     off, p[b], want, (bits >> b) & 1 ? "written" : "never written");
					w = M_BAND;
					break;
				}
			}
		}
	}
	free(buf);
}

static bool run_mixed(const struct mixcfg *cfg, char *msg, size_t msglen)
{
	struct mixed *m = xcalloc(1, sizeof(*m));
	struct fsaio_params p = { .queue_depth = 256, .workers = cfg->workers,
				  .miss_backend = cfg->backend };
	struct mreaper reapers[4];
	pthread_t stats_thread, forker;
	char rpath[4200], wpath[4200];
	struct fsaio_stats st;
	unsigned long total;

	m->cfg = cfg;
	m->rseed = (unsigned)mix64(base_seed + 1) | 1;
	m->wseed = (unsigned)mix64(base_seed + 2) | 1;
	m->rfd_plain = make_file(M_READ_SIZE, m->rseed, rpath, sizeof(rpath));
	m->wfd_plain = make_file((uint64_t)cfg->submitters * M_BAND, 0, wpath, sizeof(wpath));
	m->churn_fd = open_again(rpath, O_RDONLY);
	(void)posix_fadvise(m->churn_fd, 0, 0, POSIX_FADV_RANDOM);
	m->rfd = cfg->direct ? open_again(rpath, O_RDONLY | O_DIRECT) : m->rfd_plain;
	m->wfd = cfg->direct ? open_again(wpath, O_RDWR | O_DIRECT) : m->wfd_plain;
	make_cold(m->rfd_plain, 0, 0);
	m->ctx = ctx_create(&p);
	m->deadline = now_ns() + budget_ns(cfg->ms);

	for (unsigned i = 0; i < cfg->submitters; i++) {
		struct msub *t = &m->sub[i];

		t->m = m;
		t->id = i;
		rng_init(&t->rng, 100 + i);
		t->cover = xcalloc(M_BAND / 64, sizeof(*t->cover));
		t->seq_fd = open_again(rpath, O_RDONLY | (cfg->direct ? O_DIRECT : 0));
		t->seq_pos = rnd_in(&t->rng, 0, M_READ_SIZE / MiB - 1) * MiB;
		/* One stream announced, the others found by detection. */
		if (i == 0 && !cfg->direct)
			CHECK(fsaio_fadvise(m->ctx, t->seq_fd, POSIX_FADV_SEQUENTIAL) == 0,
			      "fsaio_fadvise(SEQUENTIAL) failed");
		for (unsigned j = 0; j < M_SLOTS; j++) {
			t->slots[j].owner = i;
			/* Room for the largest request, the gaps between
			 * iovecs and the guard. */
			t->slots[j].buf = xalign(M_BUF + M_IOV * 16 + GUARD);
		}
	}
	for (unsigned i = 0; i < cfg->submitters; i++)
		spawn(&m->sub[i].thread, mixed_submitter, &m->sub[i]);
	for (unsigned i = 0; i < cfg->reapers; i++) {
		reapers[i].m = m;
		rng_init(&reapers[i].rng, 200 + i);
		spawn(&reapers[i].thread, mixed_reaper, &reapers[i]);
	}
	if (cfg->stats_thread)
		spawn(&stats_thread, mixed_stats, m);
	if (cfg->forks)
		spawn(&forker, mixed_forker, m);

	for (unsigned i = 0; i < cfg->submitters; i++)
		pthread_join(m->sub[i].thread, NULL);
	atomic_store(&m->submit_done, true);
	for (unsigned i = 0; i < cfg->reapers; i++)
		pthread_join(reapers[i].thread, NULL);
	atomic_store(&m->all_done, true);
	if (cfg->stats_thread)
		pthread_join(stats_thread, NULL);
	if (cfg->forks)
		pthread_join(forker, NULL);

	total = atomic_load(&m->reaped);
	if (!has_failed()) {
		CHECK(atomic_load(&m->accepted) == total, "%lu requests accepted, %lu events reaped",
		      atomic_load(&m->accepted), total);
		expect_no_more_events(m->ctx);
		st = get_stats(m->ctx);
		CHECK(st.requests == total, "stats.requests %" PRIu64 ", %lu requests accepted",
		      st.requests, total);
		CHECK(st.pool_queue_len == 0, "stats.pool_queue_len %" PRIu64 " with nothing in flight",
		      st.pool_queue_len);
		if (cfg->stats_thread) {
			/* Nothing pending: the event fd must not be readable. */
			struct pollfd pfd = { .fd = fsaio_event_fd(m->ctx), .events = POLLIN };

			CHECK(poll(&pfd, 1, 0) == 0, "the event fd is readable with no event pending");
		}
		if (cfg->direct && uring_available() && !env_backend_is("threads"))
			CHECK(st.uring_submissions > 0, "O_DIRECT requests did not go through io_uring");
		if (cfg->backend == FSAIO_BACKEND_URING && uring_available())
			CHECK(st.bytes_uring > 0, "miss_backend URING: no byte went through io_uring");
		if (cfg->forks)
			CHECK(m->forks_done == cfg->forks, "%u of %u forks made", m->forks_done, cfg->forks);
		snprintf(msg, msglen, "%lu requests (%lu reads, %lu readv, %lu nowait (%lu EAGAIN), "
			 "%lu sequential, %lu writes, %lu writev, %lu syncs); inline %" PRIu64 ", queued %"
			 PRIu64 ", uring SQEs %" PRIu64 ", readahead calls %" PRIu64 "%s",
			 total, atomic_load(&m->op_count[M_READ]), atomic_load(&m->op_count[M_READV]),
			 atomic_load(&m->op_count[M_READ_NOWAIT]), atomic_load(&m->nowait_eagain),
			 atomic_load(&m->op_count[M_READ_SEQ]),
			 atomic_load(&m->op_count[M_WRITE]), atomic_load(&m->op_count[M_WRITEV]),
			 atomic_load(&m->op_count[M_FSYNC]) + atomic_load(&m->op_count[M_FDSYNC]),
			 st.completed_inline, st.queued, st.uring_submissions, st.readahead_calls,
			 cfg->forks ? "; forks with busy workers" : "");
		if (cfg->forks) {
			size_t l = strlen(msg);

			snprintf(msg + l, msglen - l, " %" PRIu64 "/%u", m->fork_busy_threads, m->forks_done);
		}
	}
	ctx_destroy(m->ctx);
	if (!has_failed())
		verify_written(m);

	for (unsigned i = 0; i < cfg->submitters; i++) {
		for (unsigned j = 0; j < M_SLOTS; j++)
			free(m->sub[i].slots[j].buf);
		free(m->sub[i].cover);
		close(m->sub[i].seq_fd);
	}
	if (m->rfd != m->rfd_plain)
		close(m->rfd);
	if (m->wfd != m->wfd_plain)
		close(m->wfd);
	close(m->rfd_plain);
	close(m->wfd_plain);
	close(m->churn_fd);
	free(m);
	return !has_failed();
}

/* ------------------------------------------------------------------ */

bool sc_mixed(char *msg, size_t msglen)
{
	/* Four threads submitting and reaping on one context: hot, cold and
	 * half-cached reads (the cache churned under them), vectored reads
	 * and writes, RWF_NOWAIT reads, fsync and fdatasync. */
	static const struct mixcfg c = { .submitters = 4, .ms = 3000, .target = 1000000 };

	return run_mixed(&c, msg, msglen);
}

bool sc_reapers(char *msg, size_t msglen)
{
	/* Submitters that never reap, two reapers with min_nr > 1 and
	 * timeouts, and a thread on get_stats / event_fd / poll. */
	static const struct mixcfg c = { .submitters = 2, .reapers = 2, .stats_thread = true,
					 .workers = 8, .ms = 3000, .target = 1000000 };

	return run_mixed(&c, msg, msglen);
}

bool sc_direct(char *msg, size_t msglen)
{
	/* O_DIRECT through io_uring from four submitters at once. */
	static const struct mixcfg c = { .submitters = 4, .direct = true, .ms = 2500, .target = 1000000 };

	return run_mixed(&c, msg, msglen);
}

bool sc_uring_misses(char *msg, size_t msglen)
{
	/* Buffered misses carried by io_uring (miss_backend URING, what
	 * FSAIO_BACKEND=uring selects) instead of the pool. */
	static const struct mixcfg c = { .submitters = 4, .backend = FSAIO_BACKEND_URING,
					 .ms = 2500, .target = 1000000 };

	return run_mixed(&c, msg, msglen);
}

bool sc_fork(char *msg, size_t msglen)
{
	/* Forks while three threads keep the workers busy with cold reads. */
	static const struct mixcfg c = { .submitters = 3, .workers = 4, .forks = 4, .ms = 3000,
					 .target = 1000000 };

	return run_mixed(&c, msg, msglen);
}

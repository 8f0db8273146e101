/* SPDX-License-Identifier: MIT */
/*
 * Scenario cancel: one worker, many cold reads, two threads cancelling
 * random ones while a reaper collects: every request one event,
 * -ECANCELED exactly when a cancel returned 0 for it.
 */
#include "stress_core.h"

#define C_REQS 384
#define C_MAXLEN (32 * KiB)
#define C_SIZE (32 * MiB)

struct creq {
	struct fsaio_req req;
	uint8_t *buf;
	uint64_t off, len;
	atomic_int events;
	atomic_int cancel_ok;   /* cancels that returned 0 */
	int64_t res, res2;      /* the reaper's, read after it is joined */
};

struct cround {
	fsaio_ctx_t *ctx;
	struct creq *r;
	int fd;
	unsigned seed;
	atomic_uint submitted;  /* r[0..submitted) were accepted */
	atomic_uint reaped;
	atomic_ulong busy, einval;
	uint64_t salt;
};

static void *cancel_submitter(void *arg)
{
	struct cround *c = arg;
	struct rng rng;
	unsigned i = 0;

	rng_init(&rng, c->salt + 1);
	while (i < C_REQS && !has_failed()) {
		struct fsaio_req *batch[16];
		unsigned nb = (unsigned)rnd_in(&rng, 1, 16);
		int ret;

		if (nb > C_REQS - i)
			nb = C_REQS - i;
		for (unsigned k = 0; k < nb; k++)
			batch[k] = &c->r[i + k].req;
		ret = submit(c->ctx, batch, nb);
		if (ret != (int)nb) {
			FAIL("fsaio_submit of %u: %d", nb, ret);
			break;
		}
		i += nb;
		/* Release: a canceller that sees the count may cancel them. */
		atomic_store_explicit(&c->submitted, i, memory_order_release);
		if (rnd(&rng) % 4 == 0)
			sleep_us((unsigned)rnd_in(&rng, 0, 300));
	}
	return NULL;
}

static void *cancel_canceller(void *arg)
{
	struct numbered *cc = arg;
	struct cround *c = cc->shared;
	struct rng rng;

	rng_init(&rng, c->salt + 10 + cc->id);
	while (atomic_load(&c->reaped) < C_REQS && !has_failed()) {
		unsigned n = atomic_load_explicit(&c->submitted, memory_order_acquire);
		struct creq *q;
		int ret;

		if (!n) {
			sleep_us(50);
			continue;
		}
		q = &c->r[rnd(&rng) % n];
		/* Cancelling a request whose event is out is allowed (-EINVAL);
		 * skipping most of those keeps the cancels on live ones. */
		if (atomic_load(&q->events) && rnd(&rng) % 8)
			continue;
		ret = cancel(c->ctx, &q->req);
		if (ret == 0)
			atomic_fetch_add(&q->cancel_ok, 1);
		else if (ret == -EBUSY)
			atomic_fetch_add_explicit(&c->busy, 1, memory_order_relaxed);
		else if (ret == -EINVAL)
			atomic_fetch_add_explicit(&c->einval, 1, memory_order_relaxed);
		else
			FAIL("fsaio_cancel: %d", ret);
		if (rnd(&rng) % 2)
			sleep_us((unsigned)rnd_in(&rng, 0, 100));
	}
	return NULL;
}

static void *cancel_reaper(void *arg)
{
	struct cround *c = arg;
	int64_t last = now_ns();

	while (atomic_load(&c->reaped) < C_REQS && !has_failed()) {
		struct fsaio_event evs[64];
		int n = getevents(c->ctx, 1, ARRAY_SIZE(evs), evs, 20);

		if (n)
			last = now_ns();
		for (int i = 0; i < n; i++) {
			struct creq *q;
			size_t d = (size_t)((const char *)evs[i].req - (const char *)c->r);

			if ((const char *)evs[i].req < (const char *)c->r || d >= C_REQS * sizeof(*q) ||
			    d % sizeof(*q) != offsetof(struct creq, req)) {
				FAIL("event with a request that is not ours (%p)", (void *)evs[i].req);
				return NULL;
			}
			q = CONTAINER_OF(evs[i].req, struct creq, req);
			CHECK(evs[i].user_data == q, "event user_data %p, want %p",
			      evs[i].user_data, (void *)q);
			q->res = evs[i].res;
			q->res2 = evs[i].res2;
			if (atomic_fetch_add(&q->events, 1))
				FAIL("second event for request %td (res %" PRId64 ")", q - c->r, evs[i].res);
			atomic_fetch_add(&c->reaped, 1);
		}
		if (now_ns() - last > (int64_t)LOST_EVENT_S * 1000000000) {
			FAIL("%u of %u requests without an event for %d s", C_REQS - atomic_load(&c->reaped),
			     C_REQS, LOST_EVENT_S);
			break;
		}
	}
	return NULL;
}

/* One round on a fresh context with the given miss backend; appends a
 * summary to msg. */
static void cancel_round(int fd, unsigned seed, uint32_t backend, const char *bname,
			 uint64_t salt, char *msg, size_t msglen)
{
	struct fsaio_params p = { .queue_depth = 512, .workers = 1, .miss_backend = backend };
	struct cround c;
	struct numbered cc[2];
	pthread_t sub, reaper;
	struct rng rng;
	unsigned ncancel = 0;
	struct fsaio_stats st;
	size_t l;

	memset(&c, 0, sizeof(c));
	c.fd = fd;
	c.seed = seed;
	c.salt = salt;
	c.r = xcalloc(C_REQS, sizeof(*c.r));
	rng_init(&rng, salt);
	for (unsigned i = 0; i < C_REQS; i++) {
		struct creq *q = &c.r[i];

		q->len = rnd_in(&rng, 4 * KiB, C_MAXLEN);
		q->off = rnd_in(&rng, 0, C_SIZE - q->len);
		if (rnd(&rng) % 2)
			q->off &= ~(uint64_t)4095;
		q->buf = xmalloc(q->len + GUARD);
		memset(q->buf, 0x5A, q->len);
		memset(q->buf + q->len, GUARD_BYTE, GUARD);
		fsaio_prep_pread(&q->req, fd, q->buf, q->len, (int64_t)q->off);
		q->req.user_data = q;
	}
	make_cold(fd, 0, 0);
	c.ctx = ctx_create(&p);
	spawn(&reaper, cancel_reaper, &c);
	for (unsigned i = 0; i < 2; i++) {
		cc[i] = (struct numbered){ .shared = &c, .id = i };
		spawn(&cc[i].thread, cancel_canceller, &cc[i]);
	}
	spawn(&sub, cancel_submitter, &c);
	pthread_join(sub, NULL);
	pthread_join(reaper, NULL);
	for (unsigned i = 0; i < 2; i++)
		pthread_join(cc[i].thread, NULL);

	for (unsigned i = 0; i < C_REQS && !has_failed(); i++) {
		struct creq *q = &c.r[i];
		int ok = atomic_load(&q->cancel_ok);
		bool cancelled = q->res == -ECANCELED;
		ssize_t bad;

		CHECK(atomic_load(&q->events) == 1, "request %u: %d events", i, atomic_load(&q->events));
		CHECK(ok <= 1, "request %u: %d cancels returned 0", i, ok);
		CHECK(cancelled == (ok == 1), "request %u: res %" PRId64 " but %d cancel(s) returned 0",
		      i, q->res, ok);
		if (cancelled) {
			ncancel++;
			CHECK(q->res2 >= 0 && (uint64_t)q->res2 < q->len,
			      "request %u: cancelled with res2 %" PRId64 " of %" PRIu64, i, q->res2, q->len);
			bad = pat_mismatch(q->buf, q->res2 > 0 ? (size_t)q->res2 : 0, seed, q->off);
			CHECK(bad < 0, "request %u: cancelled, wrong data at byte %zd of its res2", i, bad);
		} else {
			CHECK(q->res == (int64_t)q->len, "%s: read %u of %" PRIu64 "@%" PRIu64 ": res %" PRId64,
			      bname, i, q->len, q->off, q->res);
			CHECK(q->res2 == 0, "request %u: res2 %" PRId64 " without a cancel", i, q->res2);
			bad = pat_mismatch(q->buf, q->len, seed, q->off);
			CHECK(bad < 0, "read %u of %" PRIu64 "@%" PRIu64 ": wrong data at byte %zd",
			      i, q->len, q->off, bad);
		}
		CHECK(bytes_are(q->buf + q->len, GUARD, GUARD_BYTE), "request %u: wrote past the buffer", i);
	}
	if (!has_failed()) {
		expect_no_more_events(c.ctx);
		st = get_stats(c.ctx);
		CHECK(st.cancelled == ncancel, "stats.cancelled %" PRIu64 ", %u events with -ECANCELED",
		      st.cancelled, ncancel);
	}
	ctx_destroy(c.ctx);
	l = strlen(msg);
	snprintf(msg + l, msglen - l, "%s%s: %u/%u cancelled, %lu busy", l ? "; " : "", bname,
		 ncancel, C_REQS, atomic_load(&c.busy));
	for (unsigned i = 0; i < C_REQS; i++)
		free(c.r[i].buf);
	free(c.r);
}

bool sc_cancel(char *msg, size_t msglen)
{
	unsigned seed = (unsigned)mix64(base_seed + 3) | 1;
	int fd = make_file(C_SIZE, seed, NULL, 0);
	int64_t end = now_ns() + budget_ns(3000);
	unsigned round = 0;

	/* The pool alone (cancel of QUEUED), the engine's choice (pool, then
	 * the ring once the pool is busy) and the ring alone (io_uring's
	 * async cancel), as long as the budget lasts, each at least once. */
	do {
		cancel_round(fd, seed, FSAIO_BACKEND_THREADS, "threads", 1000 + round * 10, msg, msglen);
		if (has_failed())
			break;
		cancel_round(fd, seed, FSAIO_BACKEND_AUTO, "auto", 1003 + round * 10, msg, msglen);
		if (has_failed() || !uring_available())
			break;
		cancel_round(fd, seed, FSAIO_BACKEND_URING, "uring", 1006 + round * 10, msg, msglen);
		round++;
	} while (!has_failed() && now_ns() < end && round < 2);
	close(fd);
	return !has_failed();
}

/* ------------------------------------------------------------------ */
/* destroy: requests queued, running, waiting on pipes and in io_uring   */
/* when the context is destroyed, with a completion callback called from */

/* SPDX-License-Identifier: MIT */
/*
 * Scenario pipes: many reads waiting on pipes and socketpairs (the
 * poller), writer threads feeding them (plain non-blocking writes, or
 * writes through the engine that wait for room), a thread cancelling
 * waiting reads and POLL ops. Each fd's reads come from one submitting
 * thread, so they consume its stream in submission order: read i holds
 * the bytes after everything the reads before it took, cancelled or not.
 */
#include "stress_core.h"

#define P_CH 16                 /* 0-7 pipes, 8-15 socketpairs */
#define P_READS 32
#define P_MAXREAD (8 * KiB)
#define P_WSLOTS 2
#define P_MAXWRITE (48 * KiB)

enum pkind { P_K_READ, P_K_POLL, P_K_WRITE };

struct preq {
	struct fsaio_req req;
	enum pkind kind;
	unsigned ch;
	uint8_t *buf;
	uint64_t len;
	atomic_int submitted;   /* accepted: the canceller may aim at it */
	atomic_int events;
	atomic_int cancel_ok;
	atomic_int done;        /* release: res and res2 are set */
	int64_t res, res2;
};

struct pch {
	int rfd, wfd;
	bool sock, engine_writes;
	unsigned seed;
	uint64_t total;         /* bytes the writer sends in all */
	uint64_t written;       /* writer thread only */
	bool closed, inuse[P_WSLOTS]; /* writer thread only */
	struct preq reads[P_READS];
	struct preq poll;
	struct preq w[P_WSLOTS];
};

struct pipes {
	fsaio_ctx_t *ctx;
	struct pch ch[P_CH];
	atomic_ulong expected, reaped, reads_reaped;
	atomic_ulong writes;    /* writes submitted through the engine */
	atomic_bool submit_done, writers_done;
	uint64_t salt;
};

#define P_NREADS (P_CH * (P_READS + 1))  /* reads and POLL ops */

static struct preq *pipes_req(struct pipes *pp, const struct fsaio_event *ev)
{
	const char *lo = (const char *)pp->ch, *hi = (const char *)(pp->ch + P_CH);
	struct preq *q = ev->user_data;

	if ((const char *)q < lo || (const char *)q >= hi || &q->req != ev->req) {
		FAIL("event with a request that is not ours (%p, user_data %p)",
		     (void *)ev->req, ev->user_data);
		return NULL;
	}
	return q;
}

static void *pipes_reaper(void *arg)
{
	struct pipes *pp = arg;
	int64_t last = now_ns();

	while (!has_failed()) {
		struct fsaio_event evs[64];
		int n = getevents(pp->ctx, 1, ARRAY_SIZE(evs), evs, 10);

		if (n)
			last = now_ns();
		for (int i = 0; i < n; i++) {
			struct preq *q = pipes_req(pp, &evs[i]);

			if (!q)
				return NULL;
			q->res = evs[i].res;
			q->res2 = evs[i].res2;
			if (atomic_fetch_add(&q->events, 1))
				FAIL("second event for a %s on channel %u",
				     q->kind == P_K_WRITE ? "write" : "read", q->ch);
			if (q->kind != P_K_WRITE)
				atomic_fetch_add(&pp->reads_reaped, 1);
			atomic_store_explicit(&q->done, 1, memory_order_release);
			atomic_fetch_add(&pp->reaped, 1);
		}
		bool submitted = atomic_load(&pp->submit_done) && atomic_load(&pp->writers_done);

		if (reaper_stops(submitted, atomic_load(&pp->expected), atomic_load(&pp->reaped),
				 last, "pipes reaper"))
			break;
	}
	return NULL;
}

/* Submits the POLL op and the reads of the channels ch % 2 == id, in small
 * batches, round-robin over its channels. */
static void *pipes_submitter(void *arg)
{
	struct numbered *th = arg;
	struct pipes *pp = th->shared;
	unsigned next[P_CH] = { 0 };
	struct rng rng;
	bool left = true;

	rng_init(&rng, pp->salt + 20 + th->id);
	for (unsigned c = th->id; c < P_CH; c += 2) {
		struct fsaio_req *rp = &pp->ch[c].poll.req;
		int ret;

		atomic_fetch_add(&pp->expected, 1);
		ret = submit(pp->ctx, &rp, 1);
		CHECK(ret == 1, "fsaio_submit of a POLL op: %d", ret);
		atomic_store(&pp->ch[c].poll.submitted, 1);
	}
	while (left && !has_failed()) {
		left = false;
		for (unsigned c = th->id; c < P_CH; c += 2) {
			struct pch *ch = &pp->ch[c];
			struct fsaio_req *batch[8];
			unsigned nb = (unsigned)rnd_in(&rng, 1, 8), k;
			int ret;

			if (next[c] >= P_READS)
				continue;
			if (nb > P_READS - next[c])
				nb = P_READS - next[c];
			for (k = 0; k < nb; k++)
				batch[k] = &ch->reads[next[c] + k].req;
			atomic_fetch_add(&pp->expected, nb);
			ret = submit(pp->ctx, batch, nb);
			if (ret != (int)nb) {
				FAIL("fsaio_submit of %u reads: %d", nb, ret);
				break;
			}
			for (k = 0; k < nb; k++)
				atomic_store(&ch->reads[next[c] + k].submitted, 1);
			next[c] += nb;
			left = true;
		}
		sleep_us((unsigned)rnd_in(&rng, 0, 400));
	}
	return NULL;
}

/* Feeds the channels ch % 2 == id until each has its total, then closes
 * the write end (EOF for the reader). */
static void *pipes_writer(void *arg)
{
	struct numbered *th = arg;
	struct pipes *pp = th->shared;
	uint8_t *tmp = xmalloc(P_MAXWRITE);
	struct rng rng;
	unsigned open_left = 0;

	rng_init(&rng, pp->salt + 30 + th->id);
	for (unsigned c = th->id; c < P_CH; c += 2)
		open_left++;
	while (open_left && !has_failed()) {
		for (unsigned c = th->id; c < P_CH; c += 2) {
			struct pch *ch = &pp->ch[c];
			uint64_t n = rnd_in(&rng, 1, P_MAXWRITE);
			bool busy = false;

			if (ch->closed)
				continue;
			if (n > ch->total - ch->written)
				n = ch->total - ch->written;
			if (!ch->engine_writes) {
				ssize_t k = 0;

				if (n) {
					pat_fill(tmp, (size_t)n, ch->seed, ch->written);
					k = write(ch->wfd, tmp, (size_t)n);
				}
				if (k > 0)
					ch->written += (uint64_t)k;
				else if (k < 0 && errno != EAGAIN)
					FAIL("write to channel %u: %s", c, strerror(errno));
			} else {
				for (unsigned s = 0; s < P_WSLOTS; s++) {
					struct preq *w = &ch->w[s];

					if (ch->inuse[s] && atomic_load_explicit(&w->done, memory_order_acquire)) {
						CHECK(w->res == (int64_t)w->len, "engine write of %" PRIu64
						      " to channel %u: res %" PRId64, w->len, c, w->res);
						ch->inuse[s] = false;
					}
					if (!ch->inuse[s] && n) {
						struct fsaio_req *rp = &w->req;
						int ret;

						pat_fill(w->buf, (size_t)n, ch->seed, ch->written);
						fsaio_prep_pwrite(&w->req, ch->wfd, w->buf, (size_t)n, -1);
						w->req.user_data = w;
						w->len = n;
						atomic_store(&w->events, 0);
						atomic_store(&w->done, 0);
						atomic_fetch_add(&pp->expected, 1);
						ret = submit(pp->ctx, &rp, 1);
						CHECK(ret == 1, "fsaio_submit of a write: %d", ret);
						atomic_fetch_add(&pp->writes, 1);
						ch->inuse[s] = true;
						ch->written += n;
						n = 0;
					}
					busy |= ch->inuse[s];
				}
			}
			if (ch->written == ch->total && !busy) {
				close(ch->wfd);
				ch->wfd = -1;
				ch->closed = true;
				open_left--;
			}
		}
		/* Slow enough that reads wait and cancels find them waiting. */
		sleep_us((unsigned)rnd_in(&rng, 100, 1500));
	}
	free(tmp);
	return NULL;
}

static void *pipes_canceller(void *arg)
{
	struct pipes *pp = arg;
	struct rng rng;

	rng_init(&rng, pp->salt + 40);
	while (atomic_load(&pp->reads_reaped) < P_NREADS && !has_failed()) {
		struct pch *ch = &pp->ch[rnd(&rng) % P_CH];
		unsigned i = (unsigned)(rnd(&rng) % (P_READS + 1));
		struct preq *q = i == P_READS ? &ch->poll : &ch->reads[i];
		int ret;

		if (!atomic_load(&q->submitted) || atomic_load(&q->events))
			continue;
		ret = cancel(pp->ctx, &q->req);
		if (ret == 0)
			atomic_fetch_add(&q->cancel_ok, 1);
		else if (ret != -EBUSY && ret != -EINVAL)
			FAIL("fsaio_cancel of a waiting read: %d", ret);
		sleep_us((unsigned)rnd_in(&rng, 200, 2000));
	}
	return NULL;
}

/* What the reads of a channel left in it: read to EOF, every byte the
 * stream's next. */
static void pipes_drain(struct pipes *pp, const uint64_t *pos)
{
	uint64_t got[P_CH];
	uint8_t *buf = xmalloc(64 * KiB);
	unsigned open_left = P_CH;
	int64_t end = now_ns() + (int64_t)LOST_EVENT_S * 1000000000;

	for (unsigned c = 0; c < P_CH; c++) {
		got[c] = 0;
		fcntl(pp->ch[c].rfd, F_SETFL, fcntl(pp->ch[c].rfd, F_GETFL) | O_NONBLOCK);
	}
	while (open_left && !has_failed()) {
		struct pollfd pfd[P_CH];
		unsigned n = 0, idx[P_CH];

		for (unsigned c = 0; c < P_CH; c++) {
			if (pp->ch[c].rfd < 0)
				continue;
			pfd[n] = (struct pollfd){ .fd = pp->ch[c].rfd, .events = POLLIN };
			idx[n++] = c;
		}
		if (poll(pfd, n, 100) < 0 && errno != EINTR)
			FAIL("poll: %s", strerror(errno));
		for (unsigned k = 0; k < n; k++) {
			struct pch *ch = &pp->ch[idx[k]];
			ssize_t r;

			if (!pfd[k].revents)
				continue;
			r = read(ch->rfd, buf, 64 * KiB);
			if (r > 0) {
				ssize_t bad = pat_mismatch(buf, (size_t)r, ch->seed, pos[idx[k]] + got[idx[k]]);

				CHECK(bad < 0, "channel %u: byte %" PRIu64 " after the reads is wrong",
				      idx[k], pos[idx[k]] + got[idx[k]] + (uint64_t)bad);
				got[idx[k]] += (uint64_t)r;
			} else if (r == 0) {
				CHECK(pos[idx[k]] + got[idx[k]] == ch->total,
				      "channel %u: reads took %" PRIu64 ", %" PRIu64 " left, %" PRIu64 " written",
				      idx[k], pos[idx[k]], got[idx[k]], ch->total);
				close(ch->rfd);
				ch->rfd = -1;
				open_left--;
			} else if (errno != EAGAIN) {
				FAIL("read from channel %u: %s", idx[k], strerror(errno));
			}
		}
		if (now_ns() > end) {
			FAIL("%u channel(s) not at EOF after %d s", open_left, LOST_EVENT_S);
			break;
		}
	}
	free(buf);
}

static void pipes_round(uint64_t salt, unsigned *ncancel, unsigned *nreads, unsigned *nwrites)
{
	struct pipes *pp = xcalloc(1, sizeof(*pp));
	struct fsaio_params prm = { .queue_depth = 1024 };
	struct numbered subs[2], writers[2];
	pthread_t reaper, canceller;
	uint64_t pos[P_CH];
	struct rng rng;

	pp->salt = salt;
	rng_init(&rng, salt);
	for (unsigned c = 0; c < P_CH; c++) {
		struct pch *ch = &pp->ch[c];
		int fds[2];

		ch->sock = c >= P_CH / 2;
		ch->engine_writes = c % 4 >= 2;
		ch->seed = (unsigned)mix64(salt * 64 + c) | 1;
		if (ch->sock ? socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) :
		    pipe2(fds, O_CLOEXEC)) {
			FAIL("pipe/socketpair: %s", strerror(errno));
			free(pp);
			return;
		}
		ch->rfd = fds[0];
		ch->wfd = fds[1];
		if (!ch->engine_writes)
			fcntl(ch->wfd, F_SETFL, fcntl(ch->wfd, F_GETFL) | O_NONBLOCK);
		for (unsigned i = 0; i < P_READS; i++) {
			struct preq *q = &ch->reads[i];

			q->kind = P_K_READ;
			q->ch = c;
			q->len = rnd_in(&rng, 1, P_MAXREAD);
			q->buf = xmalloc(q->len + GUARD);
			memset(q->buf, 0x5A, q->len);
			memset(q->buf + q->len, GUARD_BYTE, GUARD);
			fsaio_prep_pread(&q->req, ch->rfd, q->buf, q->len, -1);
			/* Half must be filled whole, half take what is there. */
			if (rnd(&rng) % 2)
				q->req.flags = FSAIO_REQ_FULL;
			q->req.user_data = q;
			ch->total += q->len;
		}
		ch->total += rnd_in(&rng, 0, 8 * KiB);
		ch->poll.kind = P_K_POLL;
		ch->poll.ch = c;
		fsaio_prep_poll(&ch->poll.req, ch->rfd, POLLIN);
		ch->poll.req.user_data = &ch->poll;
		for (unsigned s = 0; s < P_WSLOTS; s++) {
			ch->w[s].kind = P_K_WRITE;
			ch->w[s].ch = c;
			ch->w[s].buf = xmalloc(P_MAXWRITE);
		}
	}
	pp->ctx = ctx_create(&prm);
	spawn(&reaper, pipes_reaper, pp);
	for (unsigned i = 0; i < 2; i++) {
		subs[i] = (struct numbered){ .shared = pp, .id = i };
		writers[i] = (struct numbered){ .shared = pp, .id = i };
		spawn(&subs[i].thread, pipes_submitter, &subs[i]);
	}
	spawn(&canceller, pipes_canceller, pp);
	/* The writers start late: most reads wait on the poller first. */
	sleep_us(2000);
	for (unsigned i = 0; i < 2; i++)
		spawn(&writers[i].thread, pipes_writer, &writers[i]);
	for (unsigned i = 0; i < 2; i++)
		pthread_join(subs[i].thread, NULL);
	atomic_store(&pp->submit_done, true);
	{
		int64_t end = now_ns() + (int64_t)LOST_EVENT_S * 1000000000;

		while (atomic_load(&pp->reads_reaped) < P_NREADS && !has_failed() && now_ns() < end)
			sleep_us(1000);
		CHECK(atomic_load(&pp->reads_reaped) == P_NREADS, "%lu of %u reads and POLL ops had their event",
		      atomic_load(&pp->reads_reaped), P_NREADS);
	}
	pthread_join(canceller, NULL);

	/* Every read's event is in: check them in submission order. */
	for (unsigned c = 0; c < P_CH; c++) {
		struct pch *ch = &pp->ch[c];
		struct preq *q = &ch->poll;
		int ok = atomic_load(&q->cancel_ok);

		pos[c] = 0;
		if (has_failed())
			continue;
		CHECK(ok <= 1, "POLL op: %d cancels returned 0", ok);
		CHECK((q->res == -ECANCELED) == (ok == 1), "channel %u POLL op: res %" PRId64
		      ", %d cancel(s) returned 0", c, q->res, ok);
		CHECK(q->res == -ECANCELED || (q->res > 0 && (q->res & (POLLIN | POLLHUP))),
		      "channel %u POLL op: res %" PRId64, c, q->res);
		*ncancel += ok;
		for (unsigned i = 0; i < P_READS && !has_failed(); i++) {
			bool full;
			ssize_t bad;

			q = &ch->reads[i];
			ok = atomic_load(&q->cancel_ok);
			full = q->req.flags & FSAIO_REQ_FULL;
			CHECK(atomic_load(&q->events) == 1, "channel %u read %u: %d events", c, i,
			      atomic_load(&q->events));
			CHECK(ok <= 1, "channel %u read %u: %d cancels returned 0", c, i, ok);
			CHECK((q->res == -ECANCELED) == (ok == 1), "channel %u read %u: res %" PRId64
			      ", %d cancel(s) returned 0", c, i, q->res, ok);
			if (q->res == -ECANCELED) {
				/* A read that got a byte completes unless it
				 * must be filled whole. */
				CHECK(full ? (q->res2 >= 0 && (uint64_t)q->res2 < q->len) : q->res2 == 0,
				      "channel %u read %u (%s): cancelled with res2 %" PRId64 " of %" PRIu64,
				      c, i, full ? "FULL" : "partial", q->res2, q->len);
				(*ncancel)++;
				bad = pat_mismatch(q->buf, q->res2 > 0 ? (size_t)q->res2 : 0, ch->seed, pos[c]);
				pos[c] += q->res2 > 0 ? (uint64_t)q->res2 : 0;
			} else {
				CHECK(full ? q->res == (int64_t)q->len :
				      (q->res > 0 && (uint64_t)q->res <= q->len),
				      "channel %u read %u (%s) of %" PRIu64 ": res %" PRId64,
				      c, i, full ? "FULL" : "partial", q->len, q->res);
				CHECK(q->res2 == 0, "channel %u read %u: res2 %" PRId64, c, i, q->res2);
				if (has_failed())
					break;
				bad = pat_mismatch(q->buf, (size_t)q->res, ch->seed, pos[c]);
				pos[c] += (uint64_t)q->res;
			}
			CHECK(bad < 0, "channel %u read %u: wrong data at byte %zd (stream offset %" PRIu64 ")",
			      c, i, bad, pos[c]);
			CHECK(bytes_are(q->buf + q->len, GUARD, GUARD_BYTE),
			      "channel %u read %u: wrote past the buffer", c, i);
			(*nreads)++;
		}
	}
	if (!has_failed())
		pipes_drain(pp, pos);
	for (unsigned i = 0; i < 2; i++)
		pthread_join(writers[i].thread, NULL);
	atomic_store(&pp->writers_done, true);
	pthread_join(reaper, NULL);
	if (!has_failed())
		expect_no_more_events(pp->ctx);
	ctx_destroy(pp->ctx);
	*nwrites += (unsigned)atomic_load(&pp->writes);
	for (unsigned c = 0; c < P_CH; c++) {
		struct pch *ch = &pp->ch[c];

		for (unsigned s = 0; s < P_WSLOTS; s++)
			free(ch->w[s].buf);
		for (unsigned i = 0; i < P_READS; i++)
			free(ch->reads[i].buf);
		if (ch->rfd >= 0)
			close(ch->rfd);
		if (ch->wfd >= 0)
			close(ch->wfd);
	}
	free(pp);
}

bool sc_pipes(char *msg, size_t msglen)
{
	int64_t end = now_ns() + budget_ns(3000);
	unsigned rounds = 0, ncancel = 0, nreads = 0, nwrites = 0;

	do {
		pipes_round(3000 + rounds, &ncancel, &nreads, &nwrites);
		rounds++;
	} while (!has_failed() && now_ns() < end && rounds < 100);
	snprintf(msg, msglen, "%u rounds on %u pipes and socketpairs: %u reads and POLL ops (%u cancelled), "
		 "%u writes through the engine", rounds, P_CH, nreads + rounds * P_CH, ncancel, nwrites);
	return !has_failed();
}

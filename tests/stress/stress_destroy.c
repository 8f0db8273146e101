/* SPDX-License-Identifier: MIT */
/*
 * Scenario destroy: requests queued, running, waiting on pipes and in
 * io_uring when the context is destroyed, with a completion callback
 * called from several threads: each request exactly one callback, none
 * after destroy returns, no buffer touched after (they are freed at once).
 */
#include "stress_core.h"

#define D_COLD 48
#define D_DIRECT 24
#define D_SYNC 4
#define D_PIPES 6               /* the last two get D_DATA bytes */
#define D_PREADS 4
#define D_DATA 3000
#define D_BIGW (256 * KiB)
#define D_SIZE (32 * MiB)

enum dkind { D_K_COLD, D_K_DIRECT, D_K_SYNC, D_K_PREAD, D_K_PWRITE };

struct dreq {
	struct fsaio_req req;
	enum dkind kind;
	uint8_t *buf;
	uint64_t off, len;
	unsigned pipe;
	atomic_int calls;
	int64_t res, res2;      /* the callback's, read after destroy */
};

struct dround {
	fsaio_ctx_t *ctx;
	struct dreq *r;
	unsigned n;
	int fd, dfd;
	unsigned seed;
	int pipes[D_PIPES][2], big[2];
	atomic_bool destroyed;
	_Atomic uintptr_t threads[32]; /* distinct threads the callback ran on */
	uint64_t salt;
};

static void destroy_cb(void *arg, const struct fsaio_event *ev)
{
	struct dround *d = arg;
	size_t off = (size_t)((const char *)ev->req - (const char *)d->r);
	uintptr_t self = (uintptr_t)pthread_self();
	struct dreq *q;

	if ((const char *)ev->req < (const char *)d->r || off >= d->n * sizeof(*q) ||
	    off % sizeof(*q) != offsetof(struct dreq, req)) {
		FAIL("callback with a request that is not ours (%p)", (void *)ev->req);
		return;
	}
	q = CONTAINER_OF(ev->req, struct dreq, req);
	CHECK(!atomic_load(&d->destroyed), "callback after fsaio_ctx_destroy returned");
	CHECK(ev->user_data == q, "callback user_data %p, want %p", ev->user_data, (void *)q);
	q->res = ev->res;
	q->res2 = ev->res2;
	if (atomic_fetch_add(&q->calls, 1))
		FAIL("second callback for request %td (res %" PRId64 ")", q - d->r, ev->res);
	/* Lock-free: the callback must not block. */
	for (unsigned i = 0; i < ARRAY_SIZE(d->threads); i++) {
		uintptr_t v = atomic_load(&d->threads[i]);

		if (v == self)
			break;
		if (!v && atomic_compare_exchange_strong(&d->threads[i], &v, self))
			break;
		if (v == self)
			break;
	}
}

static void destroy_submit(struct dround *d, struct dreq *first, unsigned n, unsigned per)
{
	for (unsigned i = 0; i < n && !has_failed(); i += per) {
		struct fsaio_req *batch[16];
		unsigned nb = n - i < per ? n - i : per;
		int ret;

		for (unsigned k = 0; k < nb; k++)
			batch[k] = &first[i + k].req;
		ret = submit(d->ctx, batch, nb);
		CHECK(ret == (int)nb, "fsaio_submit of %u: %d", nb, ret);
	}
}

/* Submitter A: cold buffered reads (queued and running on the workers). */
static void *destroy_sub_cold(void *arg)
{
	struct dround *d = arg;

	destroy_submit(d, d->r, D_COLD, 4);
	return NULL;
}

/* Submitter B: reads waiting on pipes, a write waiting on a full pipe. */
static void *destroy_sub_pipes(void *arg)
{
	struct dround *d = arg;

	destroy_submit(d, d->r + D_COLD + D_DIRECT + D_SYNC, D_PIPES * D_PREADS + 1, D_PREADS);
	return NULL;
}

/* Submitter C: O_DIRECT reads (the ring) and syncs. */
static void *destroy_sub_direct(void *arg)
{
	struct dround *d = arg;

	destroy_submit(d, d->r + D_COLD, D_DIRECT + D_SYNC, 3);
	return NULL;
}

static void destroy_check_read(struct dround *d, struct dreq *q, unsigned i)
{
	ssize_t bad;

	if (q->res == -ECANCELED) {
		CHECK(q->res2 >= 0 && (uint64_t)q->res2 < q->len,
		      "request %u: -ECANCELED with res2 %" PRId64 " of %" PRIu64, i, q->res2, q->len);
		bad = pat_mismatch(q->buf, q->res2 > 0 ? (size_t)q->res2 : 0, d->seed, q->off);
	} else {
		CHECK(q->res == (int64_t)q->len, "request %u (%s) of %" PRIu64 "@%" PRIu64
		      ": res %" PRId64, i, q->kind == D_K_DIRECT ? "O_DIRECT" : "cold",
		      q->len, q->off, q->res);
		bad = pat_mismatch(q->buf, q->res > 0 ? (size_t)q->res : 0, d->seed, q->off);
	}
	CHECK(bad < 0, "request %u: wrong data at byte %zd", i, bad);
}

/* Read what a pipe holds now (its write end still open): non-blocking. */
static size_t pipe_take(int fd, uint8_t *buf, size_t cap)
{
	size_t got = 0;
	int fl = fcntl(fd, F_GETFL);

	fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	while (got < cap) {
		ssize_t n = read(fd, buf + got, cap - got);

		if (n <= 0)
			break;
		got += (size_t)n;
	}
	return got;
}

static void destroy_round(int fd, int dfd, unsigned seed, unsigned delay_us, uint64_t salt,
			  unsigned *nthreads, unsigned *ncancelled)
{
	struct dround *d = xcalloc(1, sizeof(*d));
	struct fsaio_params p = { .queue_depth = 1024, .workers = 2, .complete = destroy_cb,
				  .complete_arg = d };
	pthread_t ta, tb, tc;
	uint8_t *data = xmalloc(D_BIGW + D_DATA);
	struct rng rng;
	struct dreq *q;
	unsigned i = 0;

	d->fd = fd;
	d->dfd = dfd;
	d->seed = seed;
	d->salt = salt;
	d->n = D_COLD + D_DIRECT + D_SYNC + D_PIPES * D_PREADS + 1;
	d->r = xcalloc(d->n, sizeof(*d->r));
	rng_init(&rng, salt);
	for (unsigned k = 0; k < D_PIPES; k++)
		if (pipe2(d->pipes[k], O_CLOEXEC) < 0)
			FAIL("pipe: %s", strerror(errno));
	if (pipe2(d->big, O_CLOEXEC) < 0)
		FAIL("pipe: %s", strerror(errno));

	for (; i < D_COLD; i++) {
		q = &d->r[i];
		q->kind = D_K_COLD;
		q->len = rnd_in(&rng, 16 * KiB, 64 * KiB);
		q->off = rnd_in(&rng, 0, D_SIZE - q->len);
		q->buf = xmalloc(q->len);
		fsaio_prep_pread(&q->req, fd, q->buf, q->len, (int64_t)q->off);
	}
	for (; i < D_COLD + D_DIRECT; i++) {
		q = &d->r[i];
		q->kind = D_K_DIRECT;
		q->len = rnd_in(&rng, 1, 16) * 4096;
		q->off = rnd_in(&rng, 0, (D_SIZE - q->len) / 4096) * 4096;
		q->buf = xalign(q->len);
		fsaio_prep_pread(&q->req, dfd, q->buf, q->len, (int64_t)q->off);
	}
	for (; i < D_COLD + D_DIRECT + D_SYNC; i++) {
		q = &d->r[i];
		q->kind = D_K_SYNC;
		if (i % 2)
			fsaio_prep_fsync(&q->req, fd);
		else
			fsaio_prep_fdatasync(&q->req, dfd);
	}
	for (unsigned k = 0; k < D_PIPES; k++) {
		for (unsigned j = 0; j < D_PREADS; j++, i++) {
			q = &d->r[i];
			q->kind = D_K_PREAD;
			q->pipe = k;
			q->len = 2048;
			q->buf = xmalloc(q->len);
			fsaio_prep_pread(&q->req, d->pipes[k][0], q->buf, q->len, -1);
		}
	}
	q = &d->r[i++];
	q->kind = D_K_PWRITE;
	q->len = D_BIGW;
	q->buf = xmalloc(q->len);
	pat_fill(q->buf, q->len, seed ^ 0x77, 0);
	fsaio_prep_pwrite(&q->req, d->big[1], q->buf, q->len, -1);
	for (i = 0; i < d->n; i++)
		d->r[i].req.user_data = &d->r[i];

	make_cold(fd, 0, 0);
	d->ctx = ctx_create(&p);
	spawn(&ta, destroy_sub_cold, d);
	spawn(&tb, destroy_sub_pipes, d);
	spawn(&tc, destroy_sub_direct, d);
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	pthread_join(tc, NULL);
	/* Data for the last two pipes: some of their reads complete on the
	 * poller, possibly while destroy runs. */
	for (unsigned k = D_PIPES - 2; k < D_PIPES; k++) {
		pat_fill(data, D_DATA, seed + k, 0);
		if (write(d->pipes[k][1], data, D_DATA) != D_DATA)
			FAIL("write to a pipe: %s", strerror(errno));
	}
	if (delay_us)
		sleep_us(delay_us);
	ctx_destroy(d->ctx);
	atomic_store(&d->destroyed, true);

	for (i = 0; i < d->n && !has_failed(); i++) {
		q = &d->r[i];
		CHECK(atomic_load(&q->calls) == 1, "request %u: %d callbacks", i, atomic_load(&q->calls));
		if (q->res == -ECANCELED)
			++*ncancelled;
		else
			CHECK(q->res2 == 0, "request %u: res2 %" PRId64 " with res %" PRId64, i, q->res2, q->res);
		switch (q->kind) {
		case D_K_COLD:
		case D_K_DIRECT:
			destroy_check_read(d, q, i);
			break;
		case D_K_SYNC:
			CHECK(q->res == 0 || q->res == -ECANCELED, "sync %u: res %" PRId64, i, q->res);
			break;
		case D_K_PREAD:
			break;
		case D_K_PWRITE: {
			/* Nobody reads the big pipe: the write cannot have
			 * finished; what it did write is in the pipe. */
			uint64_t done = q->res == -ECANCELED ? (uint64_t)q->res2 : (uint64_t)q->res;
			size_t got = pipe_take(d->big[0], data, D_BIGW);
			ssize_t bad = pat_mismatch(data, got, seed ^ 0x77, 0);

			CHECK(q->res == -ECANCELED || q->res == (int64_t)q->len,
			      "pipe write of %" PRIu64 ": res %" PRId64, q->len, q->res);
			CHECK(got == done, "pipe write: %zu bytes in the pipe, res/res2 says %" PRIu64,
			      got, done);
			CHECK(bad < 0, "pipe write: wrong byte %zd in the pipe", bad);
			break;
		}
		}
	}
	/* Pipe reads, in submission order per pipe: each consumed the bytes
	 * after those of the reads before it. */
	for (unsigned k = 0; k < D_PIPES && !has_failed(); k++) {
		uint64_t pos = 0;
		size_t got;
		ssize_t bad;

		for (unsigned j = 0; j < D_PREADS; j++) {
			q = &d->r[D_COLD + D_DIRECT + D_SYNC + k * D_PREADS + j];
			if (q->res == -ECANCELED) {
				CHECK(q->res2 == 0, "pipe read: -ECANCELED with res2 %" PRId64, q->res2);
				continue;
			}
			CHECK(k >= D_PIPES - 2, "pipe %u had no data, a read got %" PRId64, k, q->res);
			CHECK(q->res > 0 && (uint64_t)q->res <= q->len && pos + (uint64_t)q->res <= D_DATA,
			      "pipe read: res %" PRId64 " at stream offset %" PRIu64, q->res, pos);
			if (has_failed())
				break;
			bad = pat_mismatch(q->buf, (size_t)q->res, seed + k, pos);
			CHECK(bad < 0, "pipe %u read %u: wrong data at byte %zd", k, j, bad);
			pos += (uint64_t)q->res;
		}
		got = pipe_take(d->pipes[k][0], data, D_DATA);
		CHECK(pos + got == (k >= D_PIPES - 2 ? D_DATA : 0),
		      "pipe %u: reads took %" PRIu64 " bytes, %zu left, %u written", k, pos, got,
		      k >= D_PIPES - 2 ? D_DATA : 0);
		bad = pat_mismatch(data, got, seed + k, pos);
		CHECK(bad < 0, "pipe %u: the bytes no read took are wrong at %zd", k, bad);
	}
	for (unsigned t = 0; t < ARRAY_SIZE(d->threads); t++)
		if (atomic_load(&d->threads[t]) && t + 1 > *nthreads)
			*nthreads = t + 1;

	/* Freed at once: a buffer the engine touched after destroy returned
	 * would be a use after free (caught by ASan). */
	for (i = 0; i < d->n; i++)
		free(d->r[i].buf);
	free(d->r);
	for (unsigned k = 0; k < D_PIPES; k++) {
		close(d->pipes[k][0]);
		close(d->pipes[k][1]);
	}
	close(d->big[0]);
	close(d->big[1]);
	free(data);
	free(d);
}

bool sc_destroy(char *msg, size_t msglen)
{
	static const unsigned delays[] = { 0, 0, 20, 200, 1000, 3000 };
	unsigned seed = (unsigned)mix64(base_seed + 4) | 1;
	char path[4200];
	int fd = make_file(D_SIZE, seed, path, sizeof(path));
	int dfd = open_again(path, O_RDONLY | O_DIRECT);
	int64_t end = now_ns() + budget_ns(3000);
	unsigned rounds = 0, nthreads = 0, ncancelled = 0;

	/* At least one round per delay, more while the budget lasts. */
	while (!has_failed() && (rounds < ARRAY_SIZE(delays) || now_ns() < end) && rounds < 200) {
		destroy_round(fd, dfd, seed, delays[rounds % ARRAY_SIZE(delays)], 2000 + rounds,
			      &nthreads, &ncancelled);
		rounds++;
	}
	CHECK(nthreads >= 2, "the callback ran on %u thread(s) only", nthreads);
	snprintf(msg, msglen, "%u rounds of %u requests, %u cancelled by destroy, callbacks on up to %u threads",
		 rounds, D_COLD + D_DIRECT + D_SYNC + D_PIPES * D_PREADS + 1, ncancelled, nthreads);
	close(dfd);
	close(fd);
	return !has_failed();
}

/* ------------------------------------------------------------------ */
/* pipes: many reads waiting on pipes and socketpairs (the poller),      */
/* writer threads feeding them (plain non-blocking writes, or writes     */

/* SPDX-License-Identifier: MIT */
/*
 * fsaio-bench: one measured run of one method on one workload.
 *
 * DESIGN: a closed loop keeps `depth` requests in flight: fill every free
 * slot, submit them in one call, reap at least one, repeat. The clock is read
 * once per call, never per request, so the loop costs every method the same.
 * Completion latency runs from the start of the submit call that carried a
 * request to the return of the reap call that delivered it; submit-call
 * latency is the length of each submit call.
 *
 * Offsets come from a keyed permutation of the blocks (random) or from the
 * block order (sequential). Cold ranges are "once": no block is requested
 * twice in a run, so a buffered method never reads back what the run itself
 * brought into the cache; when the pass is used up the run ends early. Every
 * method of a repetition gets the same sequence.
 *
 * The first --ramp seconds run the same loop unmeasured (threads start, the
 * pipeline fills); counting starts without draining. A watchdog thread ends
 * the process if a method stops completing requests.
 */
#include "driver.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

uint64_t bench_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* What the process has used so far: user + system CPU seconds, context
 * switches (voluntary + involuntary) and system calls (when syscount.c can
 * count them), over every thread of the process, including threads that
 * have already exited. */
struct usage {
	double cpu;
	uint64_t csw, sys;
	bool sys_ok;
};

static void usage_now(struct usage *u)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	u->cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
		 (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
	u->csw = (uint64_t)ru.ru_nvcsw + (uint64_t)ru.ru_nivcsw;
	u->sys_ok = bench_syscount_read(&u->sys);
}

/* ---- watchdog ---- */

static atomic_uint_fast64_t wd_progress;
static atomic_uint wd_active;
static atomic_uint wd_inflight;
static const char *wd_method;
static double wd_timeout = 60;
static pthread_once_t wd_once = PTHREAD_ONCE_INIT;

static void *watchdog(void *arg)
{
	uint64_t last = 0, since = bench_now_ns();
	(void)arg;
	for (;;) {
		sleep(1);
		uint64_t p = atomic_load(&wd_progress), t = bench_now_ns();
		if (p != last || !atomic_load(&wd_active)) {
			last = p;
			since = t;
			continue;
		}
		if ((double)(t - since) / 1e9 >= wd_timeout) {
			fprintf(stderr, "\nfsaio-bench: %s completed nothing for %.0f s with %u requests in "
				"flight; giving up\n", wd_method ? wd_method : "?", wd_timeout,
				atomic_load(&wd_inflight));
			bench_scratch_remove();
			_exit(1);
		}
	}
	return NULL;
}

static void watchdog_start(void)
{
	pthread_t t;
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	if (pthread_create(&t, NULL, watchdog, NULL) == 0)
		pthread_detach(t);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* ---- offsets ---- */

static inline uint64_t mix64(uint64_t x)
{
	x ^= x >> 30; x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27; x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static inline uint64_t rng_next(uint64_t *s)
{
	*s ^= *s << 13; *s ^= *s >> 7; *s ^= *s << 17;
	return *s;
}

struct region {
	uint64_t first_block;   /* in each file */
	uint64_t blocks;        /* per file */
	uint64_t n, pos;        /* n = blocks * files; pos = how many handed out */
	uint64_t key;
	unsigned half;          /* Feistel half width in bits */
	bool rand, once;
};

/* A 4-round Feistel network is a bijection on [0, 2^(2*half)); walking the
 * cycle until the value falls below n makes it one on [0, n). */
static uint64_t permute(const struct region *g, uint64_t x)
{
	uint64_t mask = ((uint64_t)1 << g->half) - 1;
	do {
		uint64_t l = x >> g->half, r = x & mask;
		for (unsigned i = 0; i < 4; i++) {
			uint64_t f = mix64(r ^ g->key ^ (0x9E3779B97F4A7C15ull * (i + 1))) & mask;
			uint64_t t = l ^ f;
			l = r;
			r = t;
		}
		x = (l << g->half) | r;
	} while (x >= g->n);
	return x;
}

static void region_init(struct region *g, uint64_t first, uint64_t blocks, unsigned nfiles,
			bool rand, bool once, uint64_t key)
{
	unsigned bits = 2;
	g->first_block = first;
	g->blocks = blocks;
	g->n = blocks * nfiles;
	g->pos = 0;
	g->key = key;
	g->rand = rand;
	g->once = once;
	while (((uint64_t)1 << bits) < g->n)
		bits++;
	g->half = (bits + 1) / 2;
}

/* false when a once-region has been used up. */
static bool region_next(struct region *g, unsigned nfiles, uint32_t bs, unsigned *file, uint64_t *off)
{
	if (g->pos == g->n) {
		if (g->once)
			return false;
		g->pos = 0;
		g->key = mix64(g->key + 1);
	}
	uint64_t k = g->rand ? permute(g, g->pos) : g->pos;
	g->pos++;
	*file = (unsigned)(k % nfiles);
	*off = (g->first_block + k / nfiles) * bs;
	return true;
}

/* ---- the run ---- */

int bench_case_fadvise(const struct bench_settings *s, const struct bench_case *c)
{
	if (s->fadvise_opt == -2)
		return c->pattern == PAT_RAND ? POSIX_FADV_RANDOM : -1;
	return s->fadvise_opt;
}

struct loop {
	const struct bench_settings *s;
	const struct bench_case *c;
	struct region reg[2];   /* REG_HOT, REG_COLD */
	bool have[2];
	uint64_t rng;
	unsigned full_check_every, reads_seen;
};

static bool next_io(struct loop *L, struct bench_slot *sl)
{
	const struct bench_case *c = L->c;
	unsigned file, which;
	uint64_t off;

	if (L->have[REG_HOT] && L->have[REG_COLD])
		which = rng_next(&L->rng) % 100 < c->hot_pct ? REG_HOT : REG_COLD;
	else
		which = L->have[REG_HOT] ? REG_HOT : REG_COLD;
	if (!region_next(&L->reg[which], L->s->nfiles, c->bs, &file, &off))
		return false;
	bool write = c->rw == RW_WRITE || (c->rw == RW_MIX && rng_next(&L->rng) % 100 >= 70);
	sl->op = write ? BOP_WRITE : BOP_READ;
	sl->region = (uint8_t)which;
	sl->file = (uint16_t)file;
	sl->off = off;
	sl->len = c->bs;
	sl->res = 0;
	if (write) {
		sl->buf = sl->wbuf;
		/* The filler was laid down at allocation and writes only read the
		 * buffer: the headers are all that changes with the offset. */
		bench_pattern_headers(sl->wbuf, c->bs, file, off);
	} else {
		sl->buf = sl->rbuf;
	}
	return true;
}

static void fail(struct bench_result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(struct bench_result *r, const char *fmt, ...)
{
	va_list ap;
	if (r->status)
		return;   /* keep the first error */
	va_start(ap, fmt);
	vsnprintf(r->err, sizeof(r->err), fmt, ap);
	va_end(ap);
	r->status = -1;
}

static void quantiles(const struct bench_hist *h, double out[4])
{
	out[0] = bench_hist_quantile(h, 0.50) / 1e3;
	out[1] = bench_hist_quantile(h, 0.99) / 1e3;
	out[2] = bench_hist_quantile(h, 0.999) / 1e3;
	out[3] = (double)h->max / 1e3;
}

/* Bring the cache to the case's starting state; returns the share (percent)
 * of the range meant to be cold that is cached, or of the hot range that is
 * missing from the cache, whichever is the case's concern; -1 unknown. */
static int prepare_cache(const struct bench_settings *s, const struct bench_case *c,
			 uint64_t hot_bytes, double *off_pct, char *err, size_t errlen)
{
	uint64_t cold_pages = 0, cold_cached = 0, hot_pages = 0, hot_cached = 0;
	bool known = true;

	for (unsigned f = 0; f < s->nfiles; f++) {
		struct bench_cachestate cs;
		int e = 0;
		if (c->cache != CACHE_COLD && hot_bytes) {
			e = bench_cache_fill(s->paths[f], 0, hot_bytes, &cs);
			hot_pages += cs.pages;
			hot_cached += cs.cached;
			known = known && cs.known;
		}
		if (!e && c->cache != CACHE_HOT && hot_bytes < s->size) {
			e = bench_cache_drop(s->paths[f], hot_bytes, s->size - hot_bytes, &cs);
			cold_pages += cs.pages;
			cold_cached += cs.cached;
			known = known && cs.known;
		}
		if (e) {
			snprintf(err, errlen, "preparing the cache of %s: %s", s->paths[f], strerror(-e));
			return -1;
		}
	}
	if (!known)
		*off_pct = -1;
	else if (c->cache == CACHE_HOT)
		*off_pct = hot_pages ? 100.0 * (double)(hot_pages - hot_cached) / (double)hot_pages : 0;
	else
		*off_pct = cold_pages ? 100.0 * (double)cold_cached / (double)cold_pages : 0;
	return 0;
}

/* The state of one run's loop. */
struct drive {
	const struct bench_method *m;
	void *st;
	struct bench_result *r;
	struct loop *L;
	struct bench_hist *h;           /* [0] all, [1] hot, [2] cold, [3] submit calls */
	struct bench_slot **freel, **batch, **done;
	unsigned nfree, npend, inflight, batch_max;
	uint64_t t_start, ramp_end, run_end, t_meas, t_last, bytes_meas_sub, bytes_limit, ramp_blocks;
	double runtime;
	struct usage u0;
	bool measuring, stop, failed;
	struct bench_engine_stats es0;
};

static void start_measuring(struct drive *D, uint64_t t)
{
	D->measuring = true;
	D->t_meas = t;
	D->run_end = t + (uint64_t)(D->runtime * 1e9);
	usage_now(&D->u0);
	if (D->m->path->engine_stats)
		D->m->path->engine_stats(D->st, &D->es0);
}

/* One submit call: refused requests first, then new ones up to batch_max.
 * Returns how many it accepted, 0 if there was nothing to submit. */
static int submit_some(struct drive *D)
{
	unsigned n = D->npend;
	while (!D->stop && D->nfree > 0 && n < D->batch_max) {
		struct bench_slot *sl = D->freel[--D->nfree];
		if (!next_io(D->L, sl)) {
			D->freel[D->nfree++] = sl;
			D->stop = true;         /* the cold pass is used up */
			break;
		}
		D->batch[n++] = sl;
	}
	if (!n)
		return 0;
	uint64_t t0 = bench_now_ns();
	int acc = D->m->path->submit(D->st, D->batch, n);
	uint64_t t1 = bench_now_ns();
	atomic_fetch_add(&wd_progress, 1);
	if (D->measuring)
		bench_hist_add(&D->h[3], t1 - t0);
	if (acc < 0 && acc != -EAGAIN) {
		fail(D->r, "submit: %s", strerror(-acc));
		D->failed = D->stop = true;
	}
	if (acc < 0)
		acc = 0;
	for (int i = 0; i < acc; i++) {
		D->batch[i]->t_submit = t0;
		D->batch[i]->counted = D->measuring;
		if (D->measuring)
			D->bytes_meas_sub += D->batch[i]->len;
	}
	D->inflight += (unsigned)acc;
	D->npend = n - (unsigned)acc;
	memmove(D->batch, D->batch + acc, D->npend * sizeof(*D->batch));
	if (!acc && !D->inflight && !D->failed) {
		fail(D->r, "submit accepted nothing with nothing in flight");
		D->failed = D->stop = true;
	}
	return acc;
}

/* One reap call (min 0 = only what is already complete): check, verify and
 * record what came back, then move the clock-driven phases on. */
static int reap_some(struct drive *D, unsigned min)
{
	struct bench_result *r = D->r;
	struct loop *L = D->L;
	if (!D->inflight)
		return 0;
	int got = D->m->path->reap(D->st, min, D->inflight, D->done);
	uint64_t t2 = bench_now_ns();
	if (got < 0) {
		fail(r, "reap: %s", strerror(-got));
		D->failed = D->stop = true;
		return got;
	}
	atomic_fetch_add(&wd_progress, 1);
	D->inflight -= (unsigned)got;
	for (int i = 0; i < got; i++) {
		struct bench_slot *sl = D->done[i];
		D->freel[D->nfree++] = sl;
		if (D->failed)
			continue;
		if (sl->res != (int64_t)sl->len) {
			fail(r, "%s of %u bytes at %" PRIu64 " in file %u: %s", sl->op == BOP_READ ?
			     "read" : "write", sl->len, sl->off, sl->file, sl->res < 0 ?
			     strerror((int)-sl->res) : "short transfer");
			D->failed = D->stop = true;
			continue;
		}
		if (sl->op == BOP_READ) {
			bool full = ++L->reads_seen % L->full_check_every == 0;
			uint64_t bad = bench_pattern_check(sl->rbuf, sl->len, sl->file, sl->off, full);
			if (bad) {
				fail(r, "wrong data read at byte %" PRIu64 " of file %u (request at %" PRIu64
				     ", %u bytes)", sl->off + bad - 1, sl->file, sl->off, sl->len);
				D->failed = D->stop = true;
				continue;
			}
		}
		if (D->measuring) {
			r->ios++;
			r->bytes += sl->len;
			if (sl->counted) {
				uint64_t lat = t2 - sl->t_submit;
				bench_hist_add(&D->h[0], lat);
				bench_hist_add(&D->h[1 + sl->region], lat);
			}
		}
	}
	if (got)
		D->t_last = t2;
	if (!D->measuring && (t2 >= D->ramp_end || (L->have[REG_COLD] && L->reg[REG_COLD].pos >= D->ramp_blocks)))
		start_measuring(D, t2);
	if (D->measuring && !D->stop && ((D->runtime > 0 && t2 >= D->run_end) ||
					 (D->bytes_limit && D->bytes_meas_sub >= D->bytes_limit)))
		D->stop = true;
	return got;
}

void bench_run(const struct bench_settings *s, const struct bench_case *c,
	       const struct bench_method *m, unsigned rep, struct bench_result *r)
{
	struct bench_job job = {
		.nfiles = s->nfiles, .paths = s->paths, .file_size = s->size,
		.depth = m->sync ? 1 : c->depth, .bs = c->bs, .workers = s->workers,
		.fadvise = bench_case_fadvise(s, c), .shim_path = s->shim_path,
		.direct = m->direct, .arg = m->arg,
	};
	struct loop L = { .s = s, .c = c };
	struct bench_slot *slots = NULL;
	struct bench_slot **freel = NULL, **batch = NULL, **done = NULL;
	struct bench_hist *h = NULL;   /* [0] all, [1] hot, [2] cold, [3] submit */
	void *st = NULL;
	unsigned depth = job.depth, nfree = 0;
	const unsigned batch_max = s->batch ? s->batch : depth;
	bool leak_buffers = false;

	memset(r, 0, sizeof(*r));
	r->depth = depth;
	pthread_once(&wd_once, watchdog_start);
	wd_timeout = s->stall_timeout;

	/* Regions: the whole range, or a hot head and a cold tail per file. */
	uint64_t blocks = s->size / c->bs;
	uint64_t hot_blocks = c->cache == CACHE_HOT ? blocks :
			      c->cache == CACHE_COLD ? 0 : blocks * s->hot_region_pct / 100;
	uint64_t seed = mix64(s->seed ^ (0x51ed2701ull * (rep + 1)) ^ ((uint64_t)c->bs << 20) ^
			      ((uint64_t)c->rw << 8) ^ c->depth);
	L.rng = seed | 1;
	if (hot_blocks) {
		region_init(&L.reg[REG_HOT], 0, hot_blocks, s->nfiles, c->pattern == PAT_RAND, false,
			    mix64(seed + 1));
		L.have[REG_HOT] = true;
	}
	if (hot_blocks < blocks) {
		region_init(&L.reg[REG_COLD], hot_blocks, blocks - hot_blocks, s->nfiles,
			    c->pattern == PAT_RAND, true, mix64(seed + 2));
		L.have[REG_COLD] = true;
	}
	if (!blocks || (c->cache == CACHE_MIX && (!L.have[REG_HOT] || !L.have[REG_COLD]))) {
		fail(r, "the file is too small for this workload");
		return;
	}
	/* Full data checks on one read in 64, and header checks on every one. */
	L.full_check_every = 64;

	char err[256];
	if (prepare_cache(s, c, hot_blocks * c->bs, &r->cached_pct, err, sizeof(err)) != 0) {
		fail(r, "%s", err);
		return;
	}

	slots = calloc(depth, sizeof(*slots));
	freel = calloc(depth, sizeof(*freel));
	batch = calloc(depth, sizeof(*batch));
	done = calloc(depth, sizeof(*done));
	h = calloc(4, sizeof(*h));
	if (!slots || !freel || !batch || !done || !h) {
		fail(r, "out of memory");
		goto out;
	}
	for (unsigned i = 0; i < depth; i++) {
		struct bench_slot *sl = &slots[i];
		sl->idx = i;
		if (c->rw != RW_WRITE && posix_memalign(&sl->rbuf, 4096, c->bs) != 0)
			goto nomem;
		if (c->rw != RW_READ) {
			if (posix_memalign(&sl->wbuf, 4096, c->bs) != 0)
				goto nomem;
			bench_pattern_fill(sl->wbuf, c->bs, 0, 0);
		}
		/* Touch the read buffer now so page faults are not timed. */
		if (sl->rbuf)
			memset(sl->rbuf, 0, c->bs);
		freel[nfree++] = sl;
	}

	int e = m->path->setup(&job, &st);
	if (e < 0) {
		fail(r, "setup: %s", strerror(-e));
		st = NULL;
		goto out;
	}

	struct drive D = {
		.m = m, .st = st, .r = r, .L = &L, .h = h, .freel = freel, .batch = batch, .done = done,
		.nfree = nfree, .batch_max = batch_max, .runtime = s->runtime, .bytes_limit = s->bytes,
	};
	D.t_start = bench_now_ns();
	D.ramp_end = D.t_start + (uint64_t)(s->ramp * 1e9);
	D.t_meas = D.t_last = D.t_start;
	/* A cold pass must not be eaten by the ramp on a small file. */
	D.ramp_blocks = L.have[REG_COLD] ? L.reg[REG_COLD].n / 10 : UINT64_MAX;
	if (s->ramp <= 0)
		start_measuring(&D, D.t_start);
	wd_method = m->name;
	atomic_store(&wd_active, 1);

	for (;;) {
		/* Submit until every slot is in flight, in calls of at most
		 * batch_max; between two calls, collect what has completed
		 * without waiting, so a request finished early is seen early.
		 * Requests a method refuses go first next time, in order. */
		while (!D.failed) {
			int k = submit_some(&D);
			if (k <= 0)
				break;
			if (D.nfree || D.npend) {
				if (reap_some(&D, 0) < 0)
					break;
			}
			if (D.npend)
				break;
		}
		if (D.failed) {
			while (D.npend)
				D.freel[D.nfree++] = D.batch[--D.npend];
		}
		atomic_store(&wd_inflight, D.inflight);
		if (!D.inflight) {
			if (D.stop || D.failed)
				break;
			continue;
		}
		if (reap_some(&D, 1) < 0) {
			/* Requests may still be in the method's hands: never free their buffers. */
			leak_buffers = D.inflight > 0;
			break;
		}
	}
	atomic_store(&wd_active, 0);
	struct usage u1;
	usage_now(&u1);
	bool failed = D.failed, measuring = D.measuring;
	struct bench_engine_stats es0 = D.es0, es1 = { 0 };
	const uint64_t t_last = D.t_last, t_meas = D.t_meas;
	const struct usage u0 = D.u0;

	if (m->path->engine_stats && !failed && r->status == 0) {
		m->path->engine_stats(st, &es1);
		if (es1.valid) {
			r->es = es1;
			r->es.requests -= es0.requests;
			r->es.completed_inline -= es0.completed_inline;
			r->es.partial_inline -= es0.partial_inline;
			r->es.queued -= es0.queued;
			r->es.retries -= es0.retries;
			r->es.probe_calls -= es0.probe_calls;
			r->es.probe_cold -= es0.probe_cold;
			r->es.bytes_inline -= es0.bytes_inline;
			r->es.bytes_worker -= es0.bytes_worker;
			r->es.readahead_calls -= es0.readahead_calls;
			r->es.prefetched_bytes -= es0.prefetched_bytes;
			r->es.stream_hits -= es0.stream_hits;
			r->es.uring_submissions -= es0.uring_submissions;
			r->es.bytes_uring -= es0.bytes_uring;
		}
	}
	m->path->teardown(st);
	st = NULL;

	if (r->status == 0 && !measuring)
		fail(r, "the run ended during the ramp: use a larger --size or a shorter --ramp");
	if (r->status == 0 && r->ios == 0)
		fail(r, "no request completed in the measured time");
	if (r->status == 0) {
		r->secs = (double)(t_last - t_meas) / 1e9;
		r->cpu_secs = u1.cpu - u0.cpu;
		r->csw = u1.csw - u0.csw;
		r->cpu_us_per_io = r->cpu_secs * 1e6 / (double)r->ios;
		r->csw_per_io = (double)r->csw / (double)r->ios;
		r->syscalls = u0.sys_ok && u1.sys_ok ? u1.sys - u0.sys : 0;
		r->sys_per_io = u0.sys_ok && u1.sys_ok ? (double)r->syscalls / (double)r->ios : NAN;
		r->iops = r->secs > 0 ? (double)r->ios / r->secs : 0;
		r->mibps = r->secs > 0 ? (double)r->bytes / r->secs / 1048576.0 : 0;
		r->cpu_per_gib = r->bytes ? r->cpu_secs / ((double)r->bytes / 1073741824.0) : 0;
		quantiles(&h[0], r->lat);
		quantiles(&h[1], r->hot);
		quantiles(&h[2], r->cold);
		r->n_hot = h[1].n;
		r->n_cold = h[2].n;
		r->sub[0] = bench_hist_quantile(&h[3], 0.50) / 1e3;
		r->sub[1] = bench_hist_quantile(&h[3], 0.99) / 1e3;
		r->sub[2] = (double)h[3].max / 1e3;
	}
	/* Writes must have left the pattern in place. */
	if (r->status == 0 && c->rw != RW_READ &&
	    bench_files_verify_sample(s->paths, s->nfiles, s->size, 64, seed, err, sizeof(err)) != 0)
		fail(r, "%s", err);
	goto out;
nomem:
	fail(r, "out of memory for %u buffers of %u bytes", depth, c->bs);
out:
	if (st)
		m->path->teardown(st);
	if (slots && !leak_buffers)
		for (unsigned i = 0; i < depth; i++) {
			free(slots[i].rbuf);
			free(slots[i].wbuf);
		}
	if (!leak_buffers)
		free(slots);
	free(freel);
	free(batch);
	free(done);
	free(h);
}

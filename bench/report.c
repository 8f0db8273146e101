/* SPDX-License-Identifier: MIT */
/*
 * fsaio-bench: the human table, the library's goals, CSV and JSON.
 *
 * DESIGN: everything here reads the medians in struct bench_report and
 * writes; nothing is measured or recomputed except ratios. Every method
 * appears in CSV and JSON for every case, with a status (ok, unavailable,
 * error, not-selected), so a reader can tell "not measured" from "slow".
 * Latencies are microseconds, throughput IOPS and MiB/s (2^20 bytes); cost
 * is CPU microseconds, context switches and system calls per I/O, of the
 * whole process (system calls only where syscount.c can count them: else
 * "-" in the table, empty in CSV, null in JSON). JSON schema 2: "preset",
 * "version", "library_version", ISO 8601 UTC "started"/"finished", and the
 * cost fields.
 */
#include "driver.h"

#include <errno.h>
#include <fcntl.h>
#include <fsaio.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define JSON_SCHEMA 2

void bench_iso_time(time_t t, char *buf, size_t n)
{
	struct tm tm;
	if (!gmtime_r(&t, &tm) || !strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(buf, n, "1970-01-01T00:00:00Z");
}

static const char *status_name(enum bench_status st)
{
	switch (st) {
	case ST_OK: return "ok";
	case ST_UNAVAILABLE: return "unavailable";
	case ST_ERROR: return "error";
	default: return "not-selected";
	}
}

static const char *fadvise_name(int adv)
{
	switch (adv) {
	case POSIX_FADV_RANDOM: return "random";
	case POSIX_FADV_SEQUENTIAL: return "sequential";
	case -1: return "none";
	default: return "?";
	}
}

static const struct bench_cell *cell_named(const struct bench_report *rp, unsigned c, const char *name)
{
	for (unsigned m = 0; m < bench_nmethods; m++)
		if (strcmp(bench_methods[m].name, name) == 0)
			return bench_cell_at(rp, c, m);
	return NULL;
}

/* Throughput of method m over the named method's, or NAN if either is missing. */
static double ratio_to(const struct bench_report *rp, unsigned c, unsigned m, const char *name)
{
	const struct bench_cell *a = bench_cell_at(rp, c, m), *b = cell_named(rp, c, name);
	if (!b || a->status != ST_OK || b->status != ST_OK || b->med.iops <= 0)
		return NAN;
	return a->med.iops / b->med.iops;
}

/* ---- table ---- */

static void fmt_count(double v, char *b, size_t n)
{
	if (v >= 1e6)
		snprintf(b, n, "%.2fM", v / 1e6);
	else if (v >= 1e4)
		snprintf(b, n, "%.1fk", v / 1e3);
	else
		snprintf(b, n, "%.0f", v);
}

static void fmt_us(double v, char *b, size_t n)
{
	if (v < 10)
		snprintf(b, n, "%.2f", v);
	else if (v < 100)
		snprintf(b, n, "%.1f", v);
	else
		snprintf(b, n, "%.0f", v);
}

static void fmt_ratio(double v, char *b, size_t n)
{
	if (isnan(v))
		snprintf(b, n, "-");
	else
		snprintf(b, n, "%.2f", v);
}

/* Where the engine's requests went: completed inline, handed to the pool,
 * or to its io_uring ring; plus its readahead calls. Shares of requests. */
static void engine_str(const struct bench_engine_stats *e, char *b, size_t n)
{
	char r[16], ra[16];
	if (!e->valid || !e->requests) {
		b[0] = 0;
		return;
	}
	double q = (double)e->requests;
	fmt_count((double)e->retries, r, sizeof(r));
	fmt_count((double)e->readahead_calls, ra, sizeof(ra));
	snprintf(b, n, "inline %.0f%% partial %.0f%% pool %.0f%% uring %.0f%% retries %s ra %s",
		 100.0 * (double)e->completed_inline / q, 100.0 * (double)e->partial_inline / q,
		 100.0 * (double)e->queued / q, 100.0 * (double)e->uring_submissions / q, r, ra);
}

void bench_report_table(const struct bench_report *rp, FILE *f)
{
	for (unsigned c = 0; c < rp->ncases; c++) {
		const struct bench_case *cs = &rp->cases[c];
		bool mix = cs->cache == CACHE_MIX;
		char label[96];
		bench_case_label(cs, label, sizeof(label));
		fprintf(f, "\n== %s, fadvise %s on buffered fds ==\n", label,
			fadvise_name(bench_case_fadvise(rp->s, cs)));
		fprintf(f, "   ratios: /direct = IOPS over kaio-direct's, /ref = IOPS over %s's; latency: submit "
			"call start to reap return, us%s\n", cs->ref,
			mix ? "; hot/cold = requests in the cached / uncached region" : "");
		fprintf(f, "   cost: CPU us/IO = user + system CPU of the whole process per I/O, csw/IO = its "
			"context switches per I/O,\n");
		if (bench_syscount_why())
			fprintf(f, "         sys/IO = its system calls per I/O: not counted here (%s)\n",
				bench_syscount_why());
		else
			fprintf(f, "         sys/IO = its system calls per I/O, every thread's "
				"(raw_syscalls:sys_enter)\n");
		if (mix)
			fprintf(f, "%-15s %8s %8s %7s %6s %8s %8s %8s %8s %8s %8s %8s %9s %9s %7s %7s  %s\n", "method",
				"IOPS", "MiB/s", "/direct", "/ref", "hot p50", "hot p99", "hot p999", "cold p50",
				"cold p99", "sub p50", "sub p99", "CPU s/GiB", "CPU us/IO", "csw/IO",
				"sys/IO", "engine / notes");
		else
			fprintf(f, "%-15s %8s %8s %7s %6s %8s %8s %8s %8s %8s %8s %9s %9s %7s %7s  %s\n", "method",
				"IOPS", "MiB/s", "/direct", "/ref", "lat p50", "lat p99", "lat p999", "sub p50",
				"sub p99", "sub max", "CPU s/GiB", "CPU us/IO", "csw/IO", "sys/IO",
				"engine / notes");
		for (unsigned m = 0; m < bench_nmethods; m++) {
			const struct bench_cell *cell = bench_cell_at(rp, c, m);
			const struct bench_method *me = &bench_methods[m];
			if (cell->status == ST_SKIPPED)
				continue;
			if (cell->status != ST_OK) {
				fprintf(f, "%-15s %s: %s\n", me->name, status_name(cell->status), cell->why);
				continue;
			}
			const struct bench_result *r = &cell->med;
			char iops[16], mib[16], rd[16], rr[16], l[5][16], sb[3][16], eng[128], note[128];
			char cpu_io[16], sys_io[16];
			fmt_us(r->cpu_us_per_io, cpu_io, sizeof(cpu_io));
			if (isnan(r->sys_per_io))
				snprintf(sys_io, sizeof(sys_io), "-");
			else
				snprintf(sys_io, sizeof(sys_io), "%.3f", r->sys_per_io);
			fmt_count(r->iops, iops, sizeof(iops));
			snprintf(mib, sizeof(mib), "%.1f", r->mibps);
			fmt_ratio(ratio_to(rp, c, m, "kaio-direct"), rd, sizeof(rd));
			fmt_ratio(ratio_to(rp, c, m, cs->ref), rr, sizeof(rr));
			for (unsigned k = 0; k < 3; k++)
				fmt_us(r->sub[k], sb[k], sizeof(sb[k]));
			engine_str(&r->es, eng, sizeof(eng));
			note[0] = 0;
			if (me->sync && cs->depth > 1)
				snprintf(note, sizeof(note), "depth 1 (synchronous)");
			else if (me->direct && cs->cache != CACHE_COLD)
				snprintf(note, sizeof(note), "O_DIRECT: never hits the cache");
			if (r->cached_pct > 1.0 && cs->cache != CACHE_HOT)
				snprintf(note + strlen(note), sizeof(note) - strlen(note),
					 "%sWARNING: %.1f%% of the cold range was cached", note[0] ? "; " : "",
					 r->cached_pct);
			if (r->cached_pct > 1.0 && cs->cache == CACHE_HOT)
				snprintf(note + strlen(note), sizeof(note) - strlen(note),
					 "%sWARNING: %.1f%% of the hot range was not cached", note[0] ? "; " : "",
					 r->cached_pct);
			if (mix) {
				fmt_us(r->hot[0], l[0], sizeof(l[0]));
				fmt_us(r->hot[1], l[1], sizeof(l[1]));
				fmt_us(r->hot[2], l[2], sizeof(l[2]));
				fmt_us(r->cold[0], l[3], sizeof(l[3]));
				fmt_us(r->cold[1], l[4], sizeof(l[4]));
				fprintf(f, "%-15s %8s %8s %7s %6s %8s %8s %8s %8s %8s %8s %8s %9.3f %9s %7.3f %7s  %s%s%s\n",
					me->name, iops, mib, rd, rr, l[0], l[1], l[2], l[3], l[4], sb[0], sb[1],
					r->cpu_per_gib, cpu_io, r->csw_per_io, sys_io, eng, eng[0] && note[0] ? "; " : "", note);
			} else {
				for (unsigned k = 0; k < 3; k++)
					fmt_us(r->lat[k], l[k], sizeof(l[k]));
				fprintf(f, "%-15s %8s %8s %7s %6s %8s %8s %8s %8s %8s %8s %9.3f %9s %7.3f %7s  %s%s%s\n",
					me->name, iops, mib, rd, rr, l[0], l[1], l[2], sb[0], sb[1], sb[2],
					r->cpu_per_gib, cpu_io, r->csw_per_io, sys_io, eng, eng[0] && note[0] ? "; " : "", note);
			}
		}
	}
}

/* ---- goals ---- */

/* One goal of the library, as this run measured it. */
struct target {
	char preset[16];        /* the preset that measures it properly */
	char what[160];         /* what is compared, on which workload */
	double value, goal;     /* met when value >= goal */
	bool measured;
};

static void add_ratio(struct target *t, unsigned *n, unsigned max, const char *preset, const char *what,
		      double value, double goal)
{
	if (*n >= max)
		return;
	struct target *x = &t[(*n)++];
	snprintf(x->preset, sizeof(x->preset), "%s", preset);
	snprintf(x->what, sizeof(x->what), "%s", what);
	x->value = value;
	x->goal = goal;
	x->measured = !isnan(value);
}

static double iops_ratio(const struct bench_report *rp, unsigned c, const char *a, const char *b)
{
	const struct bench_cell *x = cell_named(rp, c, a), *y = cell_named(rp, c, b);
	if (!x || !y || x->status != ST_OK || y->status != ST_OK || y->med.iops <= 0)
		return NAN;
	return x->med.iops / y->med.iops;
}

/* The share of a's requests that completed in the submit call. */
static double inline_share(const struct bench_report *rp, unsigned c, const char *a)
{
	const struct bench_cell *x = cell_named(rp, c, a);
	if (!x || x->status != ST_OK || !x->med.es.valid || !x->med.es.requests)
		return NAN;
	return (double)x->med.es.completed_inline / (double)x->med.es.requests;
}

/* How many times a's hot-request p99 is fsaio's. */
static double hot_p99_ratio(const struct bench_report *rp, unsigned c, const char *a)
{
	const struct bench_cell *x = cell_named(rp, c, a), *y = cell_named(rp, c, "fsaio");
	if (!x || !y || x->status != ST_OK || y->status != ST_OK || y->med.hot[1] <= 0)
		return NAN;
	return x->med.hot[1] / y->med.hot[1];
}

/* "cold random 4k reads, depth 32": the workload in words. */
static void workload_words(const struct bench_case *c, char *buf, size_t n)
{
	char bs[16], cache[24];
	if (c->bs % (1u << 20) == 0)
		snprintf(bs, sizeof(bs), "%um", c->bs >> 20);
	else if (c->bs % 1024 == 0)
		snprintf(bs, sizeof(bs), "%uk", c->bs >> 10);
	else
		snprintf(bs, sizeof(bs), "%u", c->bs);
	if (c->cache == CACHE_MIX)
		snprintf(cache, sizeof(cache), "%u%% hot", c->hot_pct);
	else
		snprintf(cache, sizeof(cache), "%s", c->cache == CACHE_COLD ? "cold" : "hot");
	snprintf(buf, n, "%s %s %s %s, depth %u", cache, c->pattern == PAT_RAND ? "random" : "sequential", bs,
		 c->rw == RW_READ ? "reads" : c->rw == RW_WRITE ? "writes" : "70/30 reads/writes", c->depth);
}

static unsigned eval_targets(const struct bench_report *rp, struct target *t, unsigned max)
{
	unsigned n = 0;
	char w[160], wl[96];
	const char *p = rp->preset;
	for (unsigned c = 0; c < rp->ncases; c++) {
		const struct bench_case *cs = &rp->cases[c];
		workload_words(cs, wl, sizeof(wl));
		bool cold_rr = cs->cache == CACHE_COLD && cs->rw == RW_READ && cs->pattern == PAT_RAND;
		bool cvd = !strcmp(p, "cold-vs-direct") || !strcmp(p, "quick");
		if (!strcmp(p, "seed-sweep") && cold_rr) {
			snprintf(w, sizeof(w), "%s: fsaio / kernel AIO buffered (kaio-buffered) IOPS", wl);
			add_ratio(t, &n, max, "seed-sweep", w, iops_ratio(rp, c, "fsaio", "kaio-buffered"), 2.0);
			snprintf(w, sizeof(w), "%s: fsaio / O_DIRECT (kaio-direct) IOPS", wl);
			add_ratio(t, &n, max, "seed-sweep", w, iops_ratio(rp, c, "fsaio", "kaio-direct"), 0.8);
		}
		if (cvd && cold_rr && cs->bs == 4096) {
			snprintf(w, sizeof(w), "%s: fsaio / O_DIRECT (kaio-direct) IOPS", wl);
			add_ratio(t, &n, max, "cold-vs-direct", w, iops_ratio(rp, c, "fsaio", "kaio-direct"), 0.9);
			snprintf(w, sizeof(w), "%s: fsaio / kernel AIO buffered (kaio-buffered) IOPS", wl);
			add_ratio(t, &n, max, "cold-vs-direct", w, iops_ratio(rp, c, "fsaio", "kaio-buffered"), 3.0);
		}
		if (cvd && cs->cache == CACHE_HOT && cs->rw == RW_READ && cs->bs == 4096) {
			snprintf(w, sizeof(w), "%s: fsaio / pread IOPS", wl);
			add_ratio(t, &n, max, "cold-vs-direct", w, iops_ratio(rp, c, "fsaio", "pread"), 0.8);
		}
		if (!strcmp(p, "streams") && cs->cache == CACHE_COLD && cs->rw == RW_READ &&
		    cs->pattern == PAT_SEQ) {
			snprintf(w, sizeof(w), "%s: fsaio / pread IOPS", wl);
			add_ratio(t, &n, max, "streams", w, iops_ratio(rp, c, "fsaio", "pread"), 1.0);
			snprintf(w, sizeof(w), "%s: fsaio / io_uring buffered (uring-buffered) IOPS", wl);
			add_ratio(t, &n, max, "streams", w, iops_ratio(rp, c, "fsaio", "uring-buffered"), 1.5);
			snprintf(w, sizeof(w), "%s: share of fsaio's requests completed inline", wl);
			add_ratio(t, &n, max, "streams", w, inline_share(rp, c, "fsaio"), 0.9);
		}
		if (!strcmp(p, "streams") && cold_rr && cs->bs == 4096) {
			snprintf(w, sizeof(w), "%s: fsaio / fsaio without readahead (fsaio-nora) IOPS", wl);
			add_ratio(t, &n, max, "streams", w, iops_ratio(rp, c, "fsaio", "fsaio-nora"), 0.95);
			snprintf(w, sizeof(w), "%s: fsaio on O_DIRECT / kernel AIO O_DIRECT IOPS", wl);
			add_ratio(t, &n, max, "streams", w, iops_ratio(rp, c, "fsaio-direct", "kaio-direct"), 0.95);
		}
		if (!strcmp(p, "mix") && cs->cache == CACHE_MIX) {
			snprintf(w, sizeof(w), "%s: hot-request p99, posix-aio / fsaio", wl);
			add_ratio(t, &n, max, "mix", w, hot_p99_ratio(rp, c, "posix-aio"), 10.0);
			snprintf(w, sizeof(w), "%s: hot-request p99, threads / fsaio", wl);
			add_ratio(t, &n, max, "mix", w, hot_p99_ratio(rp, c, "threads"), 10.0);
		}
	}
	return n;
}

unsigned bench_report_targets(const struct bench_report *rp, FILE *f)
{
	struct target t[64];
	unsigned n = eval_targets(rp, t, 64);
	bool quick = !strcmp(rp->preset, "quick");
	if (!n)
		return 0;
	fprintf(f, "the library's goals, on this run's figures%s:\n", quick ? " (indicative: see below)" : "");
	for (unsigned i = 0; i < n; i++) {
		if (t[i].measured)
			fprintf(f, "  %-78s %7.2f  (>= %.2f) %s\n", t[i].what, t[i].value, t[i].goal,
				t[i].value >= t[i].goal ? "met" : "NOT met");
		else
			fprintf(f, "  %-78s %7s  (>= %.2f) not measured\n", t[i].what, "-", t[i].goal);
	}
	if (quick)
		fprintf(f, "  the quick mode uses a smaller file and short runs; --preset cold-vs-direct "
			"measures these properly\n");
	return n;
}

/* ---- CSV ---- */

static void csv_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

/* v as both outputs write a number; a NaN or an infinity as none. */
static void put_num(FILE *f, double v, const char *none)
{
	if (isnan(v) || isinf(v))
		fputs(none, f);
	else
		fprintf(f, "%.6g", v);
}

static void csv_num(FILE *f, double v)
{
	fputc(',', f);
	put_num(f, v, "");
}

/* An output file named by option OPT; an error is one line on stderr. */
static FILE *out_open(const char *opt, const char *path)
{
	FILE *f = fopen(path, "w");
	if (!f)
		fprintf(stderr, "fsaio-bench: %s %s: %s\n", opt, path, strerror(errno));
	return f;
}

static int out_close(FILE *f, const char *opt, const char *path)
{
	if (fclose(f) == 0)
		return 0;
	fprintf(stderr, "fsaio-bench: %s %s: %s\n", opt, path, strerror(errno));
	return -1;
}

static const char *rw_name(enum bench_rw rw)
{
	return rw == RW_READ ? "read" : rw == RW_WRITE ? "write" : "mix";
}

static const char *cache_name(enum bench_cache c)
{
	return c == CACHE_COLD ? "cold" : c == CACHE_HOT ? "hot" : "mix";
}

int bench_report_csv(const struct bench_report *rp, const char *path)
{
	FILE *f = out_open("--csv", path);
	if (!f)
		return -1;
	fprintf(f, "preset,pattern,rw,cache,hot_pct,bs,depth,files,size,fadvise,method,status,reason,reps,"
		"depth_used,iops,mib_s,ratio_kaio_direct,ref_method,ratio_ref,"
		"lat_p50_us,lat_p99_us,lat_p999_us,lat_max_us,hot_p50_us,hot_p99_us,hot_p999_us,"
		"cold_p50_us,cold_p99_us,cold_p999_us,submit_p50_us,submit_p99_us,submit_max_us,"
		"cpu_s_per_gib,cpu_us_per_io,csw_per_io,sys_per_io,cached_pct_start,inline_pct,partial_inline,queued,retries,probe_cold,"
		"uring_submissions,readahead_calls\n");
	for (unsigned c = 0; c < rp->ncases; c++) {
		const struct bench_case *cs = &rp->cases[c];
		for (unsigned m = 0; m < bench_nmethods; m++) {
			const struct bench_cell *cell = bench_cell_at(rp, c, m);
			const struct bench_result *r = &cell->med;
			fprintf(f, "%s,%s,%s,%s,%u,%u,%u,%u,%llu,%s,%s,%s,", rp->preset,
				cs->pattern == PAT_RAND ? "rand" : "seq", rw_name(cs->rw), cache_name(cs->cache),
				cs->hot_pct, cs->bs, cs->depth, rp->s->nfiles, (unsigned long long)rp->s->size,
				fadvise_name(bench_case_fadvise(rp->s, cs)), bench_methods[m].name,
				status_name(cell->status));
			csv_str(f, cell->status == ST_OK ? "" : cell->why);
			if (cell->status != ST_OK) {
				fprintf(f, ",0,,,,,%s", cs->ref);
				for (unsigned k = 0; k < 26; k++)
					fputc(',', f);
				fputc('\n', f);
				continue;
			}
			fprintf(f, ",%u,%u", cell->reps_ok, r->depth);
			csv_num(f, r->iops);
			csv_num(f, r->mibps);
			csv_num(f, ratio_to(rp, c, m, "kaio-direct"));
			fprintf(f, ",%s", cs->ref);
			csv_num(f, ratio_to(rp, c, m, cs->ref));
			for (unsigned k = 0; k < 4; k++)
				csv_num(f, r->lat[k]);
			bool mix = cs->cache == CACHE_MIX;
			for (unsigned k = 0; k < 3; k++)
				csv_num(f, mix ? r->hot[k] : NAN);
			for (unsigned k = 0; k < 3; k++)
				csv_num(f, mix ? r->cold[k] : NAN);
			for (unsigned k = 0; k < 3; k++)
				csv_num(f, r->sub[k]);
			csv_num(f, r->cpu_per_gib);
			csv_num(f, r->cpu_us_per_io);
			csv_num(f, r->csw_per_io);
			csv_num(f, r->sys_per_io);
			csv_num(f, r->cached_pct);
			if (r->es.valid && r->es.requests) {
				csv_num(f, 100.0 * (double)r->es.completed_inline / (double)r->es.requests);
				fprintf(f, ",%llu,%llu,%llu,%llu,%llu,%llu\n", (unsigned long long)r->es.partial_inline,
					(unsigned long long)r->es.queued, (unsigned long long)r->es.retries,
					(unsigned long long)r->es.probe_cold, (unsigned long long)r->es.uring_submissions,
					(unsigned long long)r->es.readahead_calls);
			} else {
				fputs(",,,,,,,\n", f);
			}
		}
	}
	return out_close(f, "--csv", path);
}

/* ---- JSON ---- */

/* The length of the UTF-8 sequence starting at s (1 to 4), or 0 where s
 * holds no well-formed one: a stray continuation byte, an overlong form,
 * a surrogate, a code point past U+10FFFF, or a sequence cut short. */
static unsigned utf8_len(const unsigned char *s)
{
	unsigned n, cp;
	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2, cp = s[0] & 0x1fu;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3, cp = s[0] & 0x0fu;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4, cp = s[0] & 0x07u;
	else
		return 0;
	for (unsigned i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3fu);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

/* A JSON string of s, which may be any bytes (a path need not be UTF-8):
 * well-formed UTF-8 is copied, control characters and every byte that is
 * not part of well-formed UTF-8 are written as \u00XX, the byte's value. */
static void json_str(FILE *f, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	fputc('"', f);
	while (*s) {
		unsigned n = utf8_len(s);
		if (*s == '"' || *s == '\\') {
			fprintf(f, "\\%c", *s);
		} else if (n == 1 && *s >= 0x20 && *s != 0x7f) {
			fputc(*s, f);
		} else if (n > 1) {
			fwrite(s, 1, n, f);
			s += n;
			continue;
		} else {
			fprintf(f, "\\u%04x", *s);
		}
		s++;
	}
	fputc('"', f);
}

static void json_num(FILE *f, double v)
{
	put_num(f, v, "null");
}

/* ", "KEY": " and the value, as every field after an object's first. */
static void json_key_num(FILE *f, const char *key, double v)
{
	fprintf(f, ", \"%s\": ", key);
	json_num(f, v);
}

static void json_key_str(FILE *f, const char *key, const char *v)
{
	fprintf(f, ", \"%s\": ", key);
	json_str(f, v);
}

/* A top-level field after the first, on a line of its own. */
static void json_top_str(FILE *f, const char *key, const char *v)
{
	fprintf(f, ",\n  \"%s\": ", key);
	json_str(f, v);
}

/* ", "NAME": {"KEY": v, ...}": a field of N numbers named by KEYS. */
static void json_nums(FILE *f, const char *name, const char *const *keys, const double *v, unsigned n)
{
	fprintf(f, ", \"%s\": {", name);
	for (unsigned k = 0; k < n; k++) {
		fprintf(f, "%s\"%s\": ", k ? ", " : "", keys[k]);
		json_num(f, v[k]);
	}
	fputc('}', f);
}

int bench_report_json(const struct bench_report *rp, const char *path)
{
	FILE *f = out_open("--json", path);
	if (!f)
		return -1;
	const struct bench_settings *s = rp->s;
	fprintf(f, "{\n  \"tool\": \"fsaio-bench\",\n  \"schema\": %d,\n  \"version\": ", JSON_SCHEMA);
	json_str(f, FSAIO_VERSION_STRING);
	json_top_str(f, "library_version", fsaio_version());
	json_top_str(f, "preset", rp->preset);
	json_top_str(f, "started", rp->started);
	json_top_str(f, "finished", rp->finished);
	fprintf(f, ",\n  \"machine\": {\"kernel\": ");
	json_str(f, rp->kernel);
	fprintf(f, ", \"cpus\": %ld, \"fs\": ", rp->cpus);
	json_str(f, rp->fs.fstype);
	json_key_str(f, "device", rp->fs.device);
	fprintf(f, ", \"read_ahead_kb\": %d, \"loadavg_start\": %.2f, \"loadavg_end\": %.2f},\n"
		"  \"settings\": {\"dir\": ", rp->fs.read_ahead_kb, rp->load[0], rp->load[1]);
	json_str(f, s->dir);
	fprintf(f, ", \"files\": %u, \"size\": %llu, \"runtime_s\": %g, \"ramp_s\": %g, \"bytes\": %llu, "
		"\"reps\": %u, \"workers\": %u, \"batch\": %u, \"hot_region_pct\": %u},\n  \"methods\": [",
		s->nfiles, (unsigned long long)s->size, s->runtime, s->ramp, (unsigned long long)s->bytes,
		s->reps, s->workers, s->batch, s->hot_region_pct);
	for (unsigned m = 0; m < bench_nmethods; m++) {
		fprintf(f, "%s\n    {\"name\": ", m ? "," : "");
		json_str(f, bench_methods[m].name);
		json_key_str(f, "what", bench_methods[m].what);
		fputc('}', f);
	}
	fprintf(f, "\n  ],\n  \"cases\": [");
	for (unsigned c = 0; c < rp->ncases; c++) {
		const struct bench_case *cs = &rp->cases[c];
		char label[96];
		bench_case_label(cs, label, sizeof(label));
		fprintf(f, "%s\n    {\"label\": ", c ? "," : "");
		json_str(f, label);
		fprintf(f, ", \"pattern\": \"%s\", \"rw\": \"%s\", \"cache\": \"%s\", \"hot_pct\": %u, "
			"\"bs\": %u, \"depth\": %u, \"fadvise\": \"%s\", \"ref\": ",
			cs->pattern == PAT_RAND ? "rand" : "seq", rw_name(cs->rw), cache_name(cs->cache),
			cs->hot_pct, cs->bs, cs->depth, fadvise_name(bench_case_fadvise(s, cs)));
		json_str(f, cs->ref);
		fprintf(f, ",\n     \"results\": [");
		for (unsigned m = 0; m < bench_nmethods; m++) {
			const struct bench_cell *cell = bench_cell_at(rp, c, m);
			const struct bench_result *r = &cell->med;
			fprintf(f, "%s\n      {\"method\": ", m ? "," : "");
			json_str(f, bench_methods[m].name);
			fprintf(f, ", \"status\": \"%s\"", status_name(cell->status));
			if (cell->status != ST_OK) {
				json_key_str(f, "reason", cell->why);
				fputc('}', f);
				continue;
			}
			fprintf(f, ", \"reps\": %u, \"depth_used\": %u, \"ios\": %llu, \"seconds\": ", cell->reps_ok,
				r->depth, (unsigned long long)r->ios);
			json_num(f, r->secs);
			json_key_num(f, "iops", r->iops);
			json_key_num(f, "mib_s", r->mibps);
			json_key_num(f, "ratio_kaio_direct", ratio_to(rp, c, m, "kaio-direct"));
			json_key_num(f, "ratio_ref", ratio_to(rp, c, m, cs->ref));
			static const char *const lk[] = { "p50", "p99", "p999", "max" };
			static const char *const sk[] = { "p50", "p99", "max" };
			json_nums(f, "lat_us", lk, r->lat, 4);
			if (cs->cache == CACHE_MIX) {
				json_nums(f, "hot_lat_us", lk, r->hot, 4);
				json_nums(f, "cold_lat_us", lk, r->cold, 4);
			}
			json_nums(f, "submit_us", sk, r->sub, 3);
			json_key_num(f, "cpu_s_per_gib", r->cpu_per_gib);
			json_key_num(f, "cpu_us_per_io", r->cpu_us_per_io);
			json_key_num(f, "csw_per_io", r->csw_per_io);
			json_key_num(f, "sys_per_io", r->sys_per_io);
			json_key_num(f, "cpu_s", r->cpu_secs);
			fprintf(f, ", \"context_switches\": %llu", (unsigned long long)r->csw);
			if (isnan(r->sys_per_io))
				fputs(", \"syscalls\": null", f);
			else
				fprintf(f, ", \"syscalls\": %llu", (unsigned long long)r->syscalls);
			json_key_num(f, "cached_pct_start", r->cached_pct);
			if (r->es.valid)
				fprintf(f, ", \"engine\": {\"requests\": %llu, \"completed_inline\": %llu, "
					"\"partial_inline\": %llu, \"queued\": %llu, \"retries\": %llu, "
					"\"probe_calls\": %llu, \"probe_cold\": %llu, \"bytes_inline\": %llu, "
					"\"bytes_worker\": %llu, \"readahead_calls\": %llu, \"prefetched_bytes\": %llu, "
					"\"stream_hits\": %llu, \"uring_submissions\": %llu, \"bytes_uring\": %llu}",
					(unsigned long long)r->es.requests, (unsigned long long)r->es.completed_inline,
					(unsigned long long)r->es.partial_inline, (unsigned long long)r->es.queued,
					(unsigned long long)r->es.retries, (unsigned long long)r->es.probe_calls,
					(unsigned long long)r->es.probe_cold, (unsigned long long)r->es.bytes_inline,
					(unsigned long long)r->es.bytes_worker, (unsigned long long)r->es.readahead_calls,
					(unsigned long long)r->es.prefetched_bytes, (unsigned long long)r->es.stream_hits,
					(unsigned long long)r->es.uring_submissions, (unsigned long long)r->es.bytes_uring);
			fputc('}', f);
		}
		fprintf(f, "\n     ]}");
	}
	fprintf(f, "\n  ],\n  \"targets\": [");
	struct target t[64];
	unsigned n = eval_targets(rp, t, 64);
	for (unsigned i = 0; i < n; i++) {
		fprintf(f, "%s\n    {\"preset\": ", i ? "," : "");
		json_str(f, t[i].preset);
		json_key_str(f, "what", t[i].what);
		json_key_num(f, "value", t[i].value);
		fprintf(f, ", \"goal_at_least\": %g, \"met\": %s}", t[i].goal,
			!t[i].measured ? "null" : t[i].value >= t[i].goal ? "true" : "false");
	}
	fprintf(f, "%s],\n  \"total_s\": %.1f\n}\n", n ? "\n  " : "", rp->total_secs);
	return out_close(f, "--json", path);
}

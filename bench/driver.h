/* SPDX-License-Identifier: MIT */
/*
 * fsaio-bench: the driver's own modules (not seen by the methods).
 *
 * files.c    test files, their pattern, page-cache state (cold/hot/mix)
 * hist.c     latency histograms
 * run.c      one measured run of one method: the common submit/reap loop
 * syscount.c the process's system calls, counted by the kernel
 * report.c   table, CSV, JSON
 * plot.c     gnuplot
 * main.c     options, cases, interleaving, medians
 */
#ifndef FSAIO_BENCH_DRIVER_H
#define FSAIO_BENCH_DRIVER_H

#include "bench.h"

#include <stdio.h>
#include <time.h>

/* ---- files.c ---- */

/* Pattern: every 512-byte sector starts with a word derived from (file,
 * offset) and continues with a fixed filler, so a misplaced or torn read is
 * caught by looking at sector headers, and writes keep the file verifiable. */
void bench_pattern_fill(void *buf, uint32_t len, unsigned file, uint64_t off);
void bench_pattern_headers(void *buf, uint32_t len, unsigned file, uint64_t off);
/* 0 if buf holds the pattern of (file, off); else 1 + the first bad byte's
 * index. full=false checks the first and last sector headers only. */
uint64_t bench_pattern_check(const void *buf, uint32_t len, unsigned file, uint64_t off, bool full);

struct bench_fsinfo {
	char fstype[32];
	int read_ahead_kb;      /* -1 if unknown */
	char device[64];
	bool direct_ok;         /* O_DIRECT open and read work */
};

/* Refuses tmpfs/ramfs, checks the space, creates, extends or reuses the
 * files, verifies a sample of the existing ones. A file it creates is a
 * scratch file (bench_scratch_add) unless keep; one that was there before
 * is never removed. 0, or -1 with a message printed; *usage_error set when
 * it is the arguments' fault. */
int bench_files_prepare(const char *dir, unsigned nfiles, uint64_t size, bool keep, char ***paths,
			struct bench_fsinfo *info, bool *usage_error);

/* Scratch files: removed at exit, on SIGINT/SIGTERM/SIGHUP (then the
 * signal's default action) and before the watchdog gives up. */
void bench_scratch_init(void);
/* Registers path (copied) before it is created; 0 or -ENOMEM/-ENOSPC. */
int bench_scratch_add(const char *path);
/* Forgets the last path registered (it turned out to exist already). */
void bench_scratch_forget_last(void);
/* Unlinks every registered path once; async-signal-safe. */
void bench_scratch_remove(void);
/* Reads back a sample of blocks of every file; 0 or -1 with msg. */
int bench_files_verify_sample(char **paths, unsigned nfiles, uint64_t size, unsigned samples,
			      uint64_t seed, char *msg, size_t msglen);

/* Page-cache state of [off, off+len) of a file. */
struct bench_cachestate {
	uint64_t pages, cached, dirty;
	bool known;             /* false if cachestat(2) is unavailable */
};
int bench_cache_state(const char *path, uint64_t off, uint64_t len, struct bench_cachestate *cs);
/* fsync, POSIX_FADV_DONTNEED, and check with cachestat(2); 0 or -errno. */
int bench_cache_drop(const char *path, uint64_t off, uint64_t len, struct bench_cachestate *after);
/* Read the range once if cachestat shows it is not fully cached. */
int bench_cache_fill(const char *path, uint64_t off, uint64_t len, struct bench_cachestate *after);

/* ---- hist.c ---- */

#define HIST_SUB_BITS 6
#define HIST_BUCKETS (64u << HIST_SUB_BITS)

/* Log-linear histogram of nanoseconds, under 0.8 % relative error. */
struct bench_hist {
	uint64_t n, max;
	uint64_t b[HIST_BUCKETS];
};
void bench_hist_reset(struct bench_hist *h);
void bench_hist_add(struct bench_hist *h, uint64_t v);
/* The value at quantile q (0..1) in ns; 0 if empty. */
double bench_hist_quantile(const struct bench_hist *h, double q);

/* ---- run.c ---- */

enum bench_cache { CACHE_COLD, CACHE_HOT, CACHE_MIX };
enum bench_pattern { PAT_RAND, PAT_SEQ };
enum bench_rw { RW_READ, RW_WRITE, RW_MIX };

/* One workload: everything but the method. */
struct bench_case {
	enum bench_pattern pattern;
	enum bench_rw rw;
	enum bench_cache cache;
	unsigned hot_pct;       /* CACHE_MIX: share of requests in the hot region */
	uint32_t bs;
	unsigned depth;
	uint64_t methods;       /* bit i = bench_methods[i] */
	const char *ref;        /* the second reference row, e.g. "kaio-buffered" */
};

struct bench_settings {
	const char *dir;
	unsigned nfiles;
	uint64_t size;
	char **paths;
	double runtime, ramp;   /* seconds */
	uint64_t bytes;         /* 0 = until runtime */
	unsigned reps, workers;
	unsigned batch;         /* most requests per submit call; 0 = every free slot */
	unsigned hot_region_pct;/* share of each file that is the hot region in CACHE_MIX */
	int fadvise;            /* resolved per case: see bench_case_fadvise */
	int fadvise_opt;        /* -2 auto, -1 none, or POSIX_FADV_* */
	uint64_t seed;
	const char *shim_path;
	double stall_timeout;
};

/* The metrics of one run. Latencies are in microseconds. */
struct bench_result {
	int status;             /* 0 ok, else -1 and err[] */
	char err[256];
	uint64_t ios, bytes;
	uint64_t csw;           /* context switches of the process in the window */
	uint64_t syscalls;      /* system calls of the process in the window, if counted */
	double secs, cpu_secs;  /* the measured window; CPU of the whole process */
	double iops, mibps, cpu_per_gib;
	double cpu_us_per_io, csw_per_io;
	double sys_per_io;      /* syscalls / ios; NAN when system calls are not counted */
	double lat[4];          /* p50 p99 p999 max */
	double hot[4], cold[4]; /* CACHE_MIX only */
	uint64_t n_hot, n_cold;
	double sub[3];          /* submit call: p50 p99 max */
	double cached_pct;      /* of the range expected cold/hot at the start; -1 unknown */
	unsigned depth;         /* depth actually used */
	struct bench_engine_stats es;
};

int bench_case_fadvise(const struct bench_settings *s, const struct bench_case *c);
void bench_run(const struct bench_settings *s, const struct bench_case *c,
	       const struct bench_method *m, unsigned rep, struct bench_result *r);

/* ---- syscount.c ---- */

/* Starts counting the system calls of the whole process, this thread and
 * every thread created later; call it while the process has one thread.
 * 0, or -1 when they cannot be counted here (bench_syscount_why says why). */
int bench_syscount_open(void);
void bench_syscount_skip(const char *why);  /* not counted: why */
/* The count so far into *v; false when nothing is counted. */
bool bench_syscount_read(uint64_t *v);
void bench_syscount_close(void);
/* NULL while counting works, else why nothing is counted. */
const char *bench_syscount_why(void);

/* ---- report.c ---- */

enum bench_status { ST_OK, ST_UNAVAILABLE, ST_ERROR, ST_SKIPPED };

/* The median over reps of one (case, method). */
struct bench_cell {
	enum bench_status status;
	char why[256];
	unsigned reps_ok;
	struct bench_result med;
};

struct bench_report {
	const char *preset;     /* quick, cold-vs-direct, streams, mix, seed-sweep, custom */
	char started[32], finished[32];   /* ISO 8601 UTC, e.g. 2026-12-03T13:45:00Z */
	char kernel[128];
	long cpus;
	struct bench_fsinfo fs;
	const struct bench_settings *s;
	unsigned ncases;
	const struct bench_case *cases;
	struct bench_cell *cells;   /* ncases x bench_nmethods */
	double total_secs;
	double load[2];         /* 1-minute load average at the start and the end */
};

static inline struct bench_cell *bench_cell_at(const struct bench_report *rp, unsigned c, unsigned m)
{
	return &rp->cells[c * bench_nmethods + m];
}

void bench_case_label(const struct bench_case *c, char *buf, size_t n);
void bench_size_str(uint64_t v, char *buf, size_t n);
void bench_report_table(const struct bench_report *rp, FILE *f);
/* The library's stated goals that this run's cases bear on, evaluated on
 * what was measured; returns how many were checked. */
unsigned bench_report_targets(const struct bench_report *rp, FILE *f);
int bench_report_csv(const struct bench_report *rp, const char *path);
int bench_report_json(const struct bench_report *rp, const char *path);

/* An ISO 8601 UTC timestamp of t, e.g. 2026-12-03T13:45:00Z. */
void bench_iso_time(time_t t, char *buf, size_t n);

/* ---- plot.c ---- */
int bench_plot(const struct bench_report *rp, const char *png);
/* Whether gnuplot is on PATH, checked before a run that asks for a plot. */
bool bench_plot_available(void);

#endif /* FSAIO_BENCH_DRIVER_H */

/* SPDX-License-Identifier: MIT */
/*
 * fsaio-bench: options, the list of cases, the interleaved schedule, medians.
 *
 * DESIGN: a run is (case, repetition, method). For each case the methods run
 * one after the other within a repetition, and repetitions follow each other
 * (A B C, A B C, ...), so slow drift of the machine spreads over all methods
 * instead of landing on one. Each metric is the median over the repetitions.
 * Exit status: 0 all fine, 1 an I/O error, wrong data, a failed method or
 * an output not written, 2 bad usage (usage_full says the same).
 */
#include "driver.h"

#include <fsaio.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#ifndef FSAIO_BENCH_SHIM_INSTALLED
#define FSAIO_BENCH_SHIM_INSTALLED "/usr/local/lib/libfsaio-libaio.so"
#endif

/* "all": every method but the variants, which run only when named. */
static uint64_t all_methods(void)
{
	uint64_t m = 0;
	for (unsigned i = 0; i < bench_nmethods; i++)
		if (!bench_methods[i].extra)
			m |= 1ull << i;
	return m;
}

static unsigned method_index(const char *name)
{
	for (unsigned i = 0; i < bench_nmethods; i++)
		if (strcmp(bench_methods[i].name, name) == 0)
			return i;
	return UINT_MAX;
}

/* ---- usage ---- */

static const char usage_short[] =
	"usage: fsaio-bench [--quick | --preset cold-vs-direct|streams|mix|seed-sweep | --full]\n"
	"                   [--dir DIR] [--size N] [--keep] [--pattern rand|seq] [--rw LIST]\n"
	"                   [--bs LIST] [--depth LIST] [--cache cold|hot|mix:PCT] [--methods LIST]\n"
	"                   [--runtime SEC | --bytes N] [--reps N] [--csv FILE] [--json FILE]\n"
	"                   [--plot FILE.png] [OPTION...]\n"
	"       fsaio-bench --list | -h | --help | --version\n";

static void usage_full(void)
{
	printf("%s", usage_short);
	printf("\nMeasures libfsaio against the other ways Linux offers asynchronous file I/O\n"
	       "(kernel AIO, io_uring, POSIX AIO, threads, pread) on the same file in one run,\n"
	       "and prints throughput, latency and CPU cost per method.\n\n"
	       "Presets (each fixes the workload; --size, --runtime, --ramp, --reps, --methods\n"
	       "still apply):\n"
	       "  (none)                    with no workload option: the quick mode\n"
	       "  --quick                   256 MiB file: cold and hot random 4k reads, depth 32,\n"
	       "                            every method, short runs; under a minute\n"
	       "  --preset cold-vs-direct   1 GiB: cold random 4k reads at depth 32, fsaio against\n"
	       "                            kernel AIO with O_DIRECT and on the buffered file; hot\n"
	       "                            random 4k reads at depth 32, fsaio against pread\n"
	       "  --preset streams          1 GiB: cold sequential 128k reads at depth 8 (fsaio,\n"
	       "                            pread, uring-buffered: the stream detector), and cold\n"
	       "                            random 4k reads at depth 32 with and without it\n"
	       "                            (fsaio-nora) and through the O_DIRECT path (fsaio-direct\n"
	       "                            against kaio-direct)\n"
	       "  --preset mix              1 GiB: 90%% of requests on a cached region, 10%% cold,\n"
	       "                            random 4k reads, depth 32, one request per submit call:\n"
	       "                            fsaio, posix-aio, threads; hot and cold latency apart\n"
	       "  --preset seed-sweep       the full sweep of the 2004 comparison: 1 GiB, cold random\n"
	       "                            reads at depth 16 for 4k 16k 64k 256k 1m, then writes\n"
	       "  --full                    the same as --preset seed-sweep\n"
	       "Workload (a custom run; lists are comma-separated and multiply):\n"
	       "  --pattern rand|seq        offsets in random or file order (default rand)\n"
	       "  --rw read|write|mix       mix = 70%% reads / 30%% writes (default read)\n"
	       "  --bs LIST                 I/O sizes, multiples of 512 (default 4k,16k,64k,256k,1m)\n"
	       "  --depth LIST              requests in flight, 1..%u (default 16)\n"
	       "  --cache cold|hot|mix:PCT  cold: fsync + POSIX_FADV_DONTNEED before each run,\n"
	       "                            checked with cachestat; hot: the file read once first;\n"
	       "                            mix:PCT: PCT%% of requests on a cached region (default cold)\n"
	       "  --hot-region PCT          share of each file that is the cached region for\n"
	       "                            --cache mix (default 25)\n"
	       "  --ref METHOD              the method the /ref column divides by (default\n"
	       "                            kaio-buffered when cold, pread when hot, threads for mix)\n"
	       "Files:\n"
	       "  --dir DIR                 where fsaio-bench.N.dat go (default .); not tmpfs\n"
	       "  --size N                  bytes used per file, e.g. 256m, 1g (default 1g; 256m for\n"
	       "                            the quick mode); at least 1m\n"
	       "  --files N                 number of files, requests spread over them (1..64, default 1)\n"
	       "  --keep                    keep the files fsaio-bench creates; without it they are\n"
	       "                            removed at exit, also on SIGINT, SIGTERM and SIGHUP. A file\n"
	       "                            that was there before the run is used and never removed\n"
	       "  --fadvise auto|random|none|sequential\n"
	       "                            advice on every buffered method's fds; auto = random for\n"
	       "                            --pattern rand (no device readahead), none for seq\n"
	       "Measurement:\n"
	       "  --methods LIST            methods to run, or all (default: all; see --list); the\n"
	       "                            variants fsaio-direct and fsaio-nora run only when named\n"
	       "  --runtime SEC             measured seconds per run (a cold run also ends after one\n"
	       "                            pass over the file: no block is read twice)\n"
	       "  --bytes N                 or: stop each run after N bytes\n"
	       "  --ramp SEC                unmeasured warm-up at the start of every run\n"
	       "  --reps N                  repetitions, 1..99; the median is reported (default 3)\n"
	       "  --batch N                 at most N requests per submit call, collecting completed\n"
	       "                            ones between calls (default: every free slot in one call)\n"
	       "  --workers N               fsaio worker pool size (default: the engine's)\n"
	       "  --shim PATH               libfsaio-libaio.so for the fsaio-shim method (default:\n"
	       "                            ../dropin/ beside this program, $FSAIO_SHIM, or installed)\n"
	       "  --seed N                  seed of the offset sequences\n"
	       "  --no-syscalls             do not count system calls (sys/IO): the tracepoint that\n"
	       "                            counts them makes every system call a little dearer,\n"
	       "                            most for methods that make one per I/O\n"
	       "  --stall-timeout SEC       give up (exit 1) when a method completes nothing that long\n"
	       "                            (default 60)\n"
	       "Output:\n"
	       "  --csv FILE                one row per workload and method, unavailable ones marked\n"
	       "  --json FILE               the same with the machine, settings and goals\n"
	       "  --plot FILE.png           MiB/s per method (needs gnuplot): against I/O size, or a\n"
	       "                            bar per method where a workload has one size\n"
	       "  --list                    the methods and whether they run here, then exit\n"
	       "  -h, --help                this text, then exit\n"
	       "  --version                 the version, then exit\n"
	       "Each method's row gives IOPS, MiB/s, completion and submit-call latency, and its\n"
	       "cost: CPU microseconds (user + system, every thread of the process) and context\n"
	       "switches per I/O.\n"
	       "Exit status: 0 every run done; 1 a run failed (I/O error, wrong data, a method that\n"
	       "failed or stalled, an output file not written); 2 bad usage (a bad option or value,\n"
	       "a --dir that cannot be used). Errors are one line on stderr starting \"fsaio-bench: \".\n",
	       BENCH_MAX_DEPTH);
}

static void bad(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void bad(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "fsaio-bench: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

/* ---- argument parsing ---- */

static bool parse_size(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || v < 0)
		return false;
	uint64_t mul = 1;
	switch (*end) {
	case 0: break;
	case 'k': case 'K': mul = 1ull << 10; end++; break;
	case 'm': case 'M': mul = 1ull << 20; end++; break;
	case 'g': case 'G': mul = 1ull << 30; end++; break;
	case 't': case 'T': mul = 1ull << 40; end++; break;
	default: return false;
	}
	if (*end == 'i' || *end == 'I')
		end++;
	if (*end == 'b' || *end == 'B')
		end++;
	if (*end || v * (double)mul > 1e18)
		return false;
	*out = (uint64_t)(v * (double)mul);
	return true;
}

static bool parse_uint(const char *s, unsigned long lo, unsigned long hi, unsigned long *out)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || end == s || *end || *s == '-' || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

/* The value of option opt (e.g. "--files"), in [lo, hi]; otherwise exit
 * with "opt ARG: range". */
static unsigned long opt_uint(const char *opt, const char *arg, unsigned long lo, unsigned long hi,
			      const char *range)
{
	unsigned long v;

	if (!parse_uint(arg, lo, hi, &v))
		bad("%s %s: %s", opt, arg, range);
	return v;
}

static bool parse_secs(const char *s, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= 0) || v > 86400)
		return false;
	*out = v;
	return true;
}

/* Splits a comma-separated list in place; returns the count. */
static unsigned split(char *s, char **out, unsigned max, const char *opt)
{
	unsigned n = 0;
	for (char *save = NULL, *t = strtok_r(s, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (n == max)
			bad("%s: at most %u values", opt, max);
		out[n++] = t;
	}
	if (!n)
		bad("%s: empty list", opt);
	return n;
}

/* Where the shim is: --shim, $FSAIO_SHIM, beside libfsaio.so relative to
 * this program (build tree or install), or the configured install path. */
/* Whether an output file can be written where --opt names it, checked
 * without creating it: a writable file, or a new name in a writable
 * directory. Refused with one line otherwise. */
static void check_output(const char *opt, const char *path)
{
	struct stat st;
	if (!path)
		return;
	if (!*path)
		bad("%s: an empty file name", opt);
	if (stat(path, &st) == 0) {
		if (S_ISDIR(st.st_mode))
			bad("%s %s: %s", opt, path, strerror(EISDIR));
		if (access(path, W_OK) != 0)
			bad("%s %s: %s", opt, path, strerror(errno));
		return;
	}
	if (errno != ENOENT)
		bad("%s %s: %s", opt, path, strerror(errno));
	char *dir = strdup(path);
	if (!dir)
		bad("out of memory");
	char *slash = strrchr(dir, '/');
	const char *d = slash ? (slash == dir ? "/" : (*slash = 0, dir)) : ".";
	if (stat(d, &st) != 0)
		bad("%s %s: %s", opt, path, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		bad("%s %s: %s", opt, path, strerror(ENOTDIR));
	if (access(d, W_OK | X_OK) != 0)
		bad("%s %s: %s", opt, path, strerror(errno));
	free(dir);
}

/* Whether two output names are one file (by name, or an existing file by inode). */
static bool same_file(const char *a, const char *b)
{
	struct stat sa, sb;
	if (!strcmp(a, b))
		return true;
	return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

static const char *find_shim(const char *opt)
{
	static char buf[PATH_MAX + 64];
	if (opt)
		return access(opt, R_OK) == 0 ? opt : NULL;
	const char *env = getenv("FSAIO_SHIM");
	if (env && *env)
		return access(env, R_OK) == 0 ? env : NULL;
	/* build/bench/ beside build/dropin/ */
	if (bench_beside_exe("libfsaio-libaio.so", buf, sizeof(buf)))
		return buf;
	if (access(FSAIO_BENCH_SHIM_INSTALLED, R_OK) == 0)
		return FSAIO_BENCH_SHIM_INSTALLED;
	return NULL;
}

/* ---- medians ---- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, unsigned n)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Each metric's own median over the repetitions that succeeded. */
static void median_result(const struct bench_result *rs, unsigned n, struct bench_result *out)
{
	double *v = calloc(n ? n : 1, sizeof(*v));
	const struct bench_result *first = &rs[0];
	*out = *first;
	if (!v)
		return;
#define MED(field) do { for (unsigned i = 0; i < n; i++) v[i] = (double)rs[i].field; \
			out->field = (__typeof__(out->field))median(v, n); } while (0)
	MED(ios); MED(bytes); MED(secs); MED(cpu_secs); MED(iops); MED(mibps); MED(cpu_per_gib);
	MED(csw); MED(cpu_us_per_io); MED(csw_per_io);
	/* System calls: the median when every rep counted them, else none. */
	bool sys_all = true;
	for (unsigned i = 0; i < n; i++)
		sys_all = sys_all && !isnan(rs[i].sys_per_io);
	if (sys_all) {
		MED(syscalls); MED(sys_per_io);
	} else {
		out->syscalls = 0;
		out->sys_per_io = NAN;
	}
	for (unsigned k = 0; k < 4; k++) {
		MED(lat[k]); MED(hot[k]); MED(cold[k]);
	}
	MED(n_hot); MED(n_cold);
	for (unsigned k = 0; k < 3; k++)
		MED(sub[k]);
	MED(cached_pct);
	if (first->es.valid) {
		MED(es.requests); MED(es.completed_inline); MED(es.partial_inline); MED(es.queued);
		MED(es.retries); MED(es.probe_calls); MED(es.probe_cold); MED(es.bytes_inline);
		MED(es.bytes_worker); MED(es.readahead_calls); MED(es.prefetched_bytes); MED(es.stream_hits);
		MED(es.uring_submissions); MED(es.bytes_uring);
	}
#undef MED
	free(v);
}

/* ---- main ---- */

enum {
	O_QUICK = 256, O_FULL, O_PRESET, O_PATTERN, O_RW, O_BS, O_DEPTH, O_CACHE, O_RUNTIME,
	O_BYTES, O_SIZE, O_DIR, O_FILES, O_METHODS, O_REPS, O_WORKERS, O_FADVISE, O_CSV, O_JSON,
	O_PLOT, O_SHIM, O_LIST, O_HELP, O_RAMP, O_SEED, O_REF, O_HOTREGION, O_STALL, O_BATCH,
	O_KEEP, O_VERSION, O_NO_SYSCALLS,
};

static const struct option longopts[] = {
	{ "quick", no_argument, NULL, O_QUICK },
	{ "full", no_argument, NULL, O_FULL },
	{ "preset", required_argument, NULL, O_PRESET },
	{ "pattern", required_argument, NULL, O_PATTERN },
	{ "rw", required_argument, NULL, O_RW },
	{ "bs", required_argument, NULL, O_BS },
	{ "depth", required_argument, NULL, O_DEPTH },
	{ "cache", required_argument, NULL, O_CACHE },
	{ "runtime", required_argument, NULL, O_RUNTIME },
	{ "bytes", required_argument, NULL, O_BYTES },
	{ "size", required_argument, NULL, O_SIZE },
	{ "dir", required_argument, NULL, O_DIR },
	{ "files", required_argument, NULL, O_FILES },
	{ "methods", required_argument, NULL, O_METHODS },
	{ "reps", required_argument, NULL, O_REPS },
	{ "workers", required_argument, NULL, O_WORKERS },
	{ "fadvise", required_argument, NULL, O_FADVISE },
	{ "csv", required_argument, NULL, O_CSV },
	{ "json", required_argument, NULL, O_JSON },
	{ "plot", required_argument, NULL, O_PLOT },
	{ "shim", required_argument, NULL, O_SHIM },
	{ "list", no_argument, NULL, O_LIST },
	{ "help", no_argument, NULL, O_HELP },
	{ "ramp", required_argument, NULL, O_RAMP },
	{ "seed", required_argument, NULL, O_SEED },
	{ "ref", required_argument, NULL, O_REF },
	{ "hot-region", required_argument, NULL, O_HOTREGION },
	{ "stall-timeout", required_argument, NULL, O_STALL },
	{ "batch", required_argument, NULL, O_BATCH },
	{ "keep", no_argument, NULL, O_KEEP },
	{ "no-syscalls", no_argument, NULL, O_NO_SYSCALLS },
	{ "version", no_argument, NULL, O_VERSION },
	{ 0, 0, 0, 0 },
};

#define MAXLIST 32

/* The presets, by what they measure, and how each is asked for. */
static const char *const presets[][2] = {
	{ "cold-vs-direct", "--preset cold-vs-direct" },
	{ "streams", "--preset streams" },
	{ "mix", "--preset mix" },
	{ "seed-sweep", "--preset seed-sweep" },
};

/* The option that names preset `name`, or NULL if there is no such preset. */
static const char *preset_option(const char *name)
{
	for (unsigned i = 0; i < sizeof(presets) / sizeof(presets[0]); i++)
		if (!strcmp(presets[i][0], name))
			return presets[i][1];
	return NULL;
}

int main(int argc, char **argv)
{
	struct bench_settings s = {
		.dir = ".", .nfiles = 1, .workers = 0, .hot_region_pct = 25, .fadvise_opt = -2,
		.seed = 0x5eed2004, .stall_timeout = 60,
	};
	const char *mode = NULL, *mode_opt = NULL, *csv = NULL, *json = NULL, *plot = NULL, *shim_opt = NULL;
	const char *ref_opt = NULL, *workload_opt = NULL;
	bool no_syscalls = false;
	bool list = false, keep = false, have_batch = false, have_size = false, have_runtime = false, have_ramp = false, have_reps = false;
	enum bench_pattern pattern = PAT_RAND;
	enum bench_cache cache = CACHE_COLD;
	unsigned hot_pct = 0, nrw = 1, nbs = 5, ndepth = 1;
	enum bench_rw rws[3] = { RW_READ };
	uint32_t bss[MAXLIST] = { 4096, 16384, 65536, 262144, 1048576 };
	unsigned depths[MAXLIST] = { 16 };
	uint64_t methods_opt = 0;
	char *items[MAXLIST];
	unsigned long u;
	int opt;

	opterr = 0;
	/* ':' first: a missing value is told apart from an unknown option. */
	while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (opt) {
		case O_QUICK: case O_FULL: case O_PRESET: {
			const char *m = opt == O_QUICK ? "quick" : opt == O_FULL ? "seed-sweep" : optarg;
			const char *how = opt == O_QUICK ? "--quick" : opt == O_FULL ? "--full" : preset_option(m);
			if (!how)
				bad("--preset %s: unknown preset (cold-vs-direct, streams, mix or seed-sweep)", m);
			if (mode && strcmp(mode, m) != 0)
				bad("%s and %s do not combine: choose one", mode_opt, how);
			mode = m;
			mode_opt = how;
			break;
		}
		case O_PATTERN:
			workload_opt = "--pattern";
			if (!strcmp(optarg, "rand") || !strcmp(optarg, "random"))
				pattern = PAT_RAND;
			else if (!strcmp(optarg, "seq") || !strcmp(optarg, "sequential"))
				pattern = PAT_SEQ;
			else
				bad("--pattern %s: rand or seq", optarg);
			break;
		case O_RW:
			workload_opt = "--rw";
			nrw = split(optarg, items, 3, "--rw");
			for (unsigned i = 0; i < nrw; i++) {
				if (!strcmp(items[i], "read"))
					rws[i] = RW_READ;
				else if (!strcmp(items[i], "write"))
					rws[i] = RW_WRITE;
				else if (!strcmp(items[i], "mix"))
					rws[i] = RW_MIX;
				else
					bad("--rw %s: read, write or mix", items[i]);
			}
			break;
		case O_BS:
			workload_opt = "--bs";
			nbs = split(optarg, items, MAXLIST, "--bs");
			for (unsigned i = 0; i < nbs; i++) {
				uint64_t v;
				if (!parse_size(items[i], &v) || v < BENCH_SECTOR || v > (64u << 20) ||
				    v % BENCH_SECTOR)
					bad("--bs %s: a multiple of 512 from 512 to 64m", items[i]);
				bss[i] = (uint32_t)v;
			}
			break;
		case O_DEPTH:
			workload_opt = "--depth";
			ndepth = split(optarg, items, MAXLIST, "--depth");
			for (unsigned i = 0; i < ndepth; i++) {
				if (!parse_uint(items[i], 1, BENCH_MAX_DEPTH, &u))
					bad("--depth %s: 1..%u", items[i], BENCH_MAX_DEPTH);
				depths[i] = (unsigned)u;
			}
			break;
		case O_CACHE:
			workload_opt = "--cache";
			if (!strcmp(optarg, "cold"))
				cache = CACHE_COLD;
			else if (!strcmp(optarg, "hot"))
				cache = CACHE_HOT;
			else if (!strncmp(optarg, "mix:", 4) && parse_uint(optarg + 4, 1, 99, &u)) {
				cache = CACHE_MIX;
				hot_pct = (unsigned)u;
			} else
				bad("--cache %s: cold, hot or mix:PCT with PCT 1..99", optarg);
			break;
		case O_HOTREGION:
			s.hot_region_pct = (unsigned)opt_uint("--hot-region", optarg, 1, 99,
							      "1..99 (percent of each file)");
			break;
		case O_RUNTIME:
			if (!parse_secs(optarg, &s.runtime) || s.runtime <= 0)
				bad("--runtime %s: seconds > 0", optarg);
			have_runtime = true;
			break;
		case O_RAMP:
			if (!parse_secs(optarg, &s.ramp))
				bad("--ramp %s: seconds >= 0", optarg);
			have_ramp = true;
			break;
		case O_BYTES:
			if (!parse_size(optarg, &s.bytes))
				bad("--bytes %s: not a size (e.g. 512m, 1g)", optarg);
			if (!s.bytes)
				bad("--bytes %s: more than 0", optarg);
			break;
		case O_SIZE: {
			if (!parse_size(optarg, &s.size))
				bad("--size %s: not a size (e.g. 256m, 1g)", optarg);
			if (s.size < (1u << 20))
				bad("--size %s: at least 1m", optarg);
			have_size = true;
			break;
		}
		case O_DIR:
			s.dir = optarg;
			break;
		case O_FILES:
			s.nfiles = (unsigned)opt_uint("--files", optarg, 1, BENCH_MAX_FILES, "1..64");
			break;
		case O_METHODS: {
			unsigned n = split(optarg, items, MAXLIST, "--methods");
			methods_opt = 0;
			for (unsigned i = 0; i < n; i++) {
				if (!strcmp(items[i], "all")) {
					methods_opt |= all_methods();
					continue;
				}
				unsigned k = method_index(items[i]);
				if (k == UINT_MAX)
					bad("--methods: unknown method %s (see --list)", items[i]);
				methods_opt |= 1ull << k;
			}
			break;
		}
		case O_REF:
			if (method_index(optarg) == UINT_MAX)
				bad("--ref: unknown method %s (see --list)", optarg);
			ref_opt = optarg;
			break;
		case O_REPS:
			s.reps = (unsigned)opt_uint("--reps", optarg, 1, 99, "1..99");
			have_reps = true;
			break;
		case O_WORKERS:
			s.workers = (unsigned)opt_uint("--workers", optarg, 1, 4096, "1..4096");
			break;
		case O_FADVISE:
			if (!strcmp(optarg, "auto"))
				s.fadvise_opt = -2;
			else if (!strcmp(optarg, "random"))
				s.fadvise_opt = POSIX_FADV_RANDOM;
			else if (!strcmp(optarg, "none"))
				s.fadvise_opt = -1;
			else if (!strcmp(optarg, "sequential"))
				s.fadvise_opt = POSIX_FADV_SEQUENTIAL;
			else
				bad("--fadvise %s: auto, random, none or sequential", optarg);
			break;
		case O_SEED:
			s.seed = opt_uint("--seed", optarg, 0, ULONG_MAX, "a number");
			break;
		case O_BATCH:
			if (!parse_uint(optarg, 1, BENCH_MAX_DEPTH, &u))
				bad("--batch %s: 1..%u", optarg, BENCH_MAX_DEPTH);
			s.batch = (unsigned)u;
			have_batch = true;
			break;
		case O_STALL:
			if (!parse_secs(optarg, &s.stall_timeout) || s.stall_timeout < 1)
				bad("--stall-timeout %s: seconds >= 1", optarg);
			break;
		case O_CSV: csv = optarg; break;
		case O_JSON: json = optarg; break;
		case O_PLOT: plot = optarg; break;
		case O_SHIM: shim_opt = optarg; break;
		case O_LIST: list = true; break;
		case O_KEEP: keep = true; break;
		case O_NO_SYSCALLS: no_syscalls = true; break;
		case 'h':
		case O_HELP:
			usage_full();
			return fflush(stdout) == 0 && !ferror(stdout) ? 0 : 1;
		case O_VERSION:
			printf("fsaio-bench (libfsaio) %s\n", FSAIO_VERSION_STRING);
			return fflush(stdout) == 0 && !ferror(stdout) ? 0 : 1;
		case ':':
			bad("%s needs a value (see --help)", argv[optind - 1]);
		default:
			if (optopt && optopt < 256)
				bad("unknown option -%c (see --help)", optopt);
			bad("unknown option %s (see --help)", argv[optind - 1]);
		}
	}
	if (optind < argc)
		bad("unexpected argument %s (see --help)", argv[optind]);
	if (mode && workload_opt)
		bad("%s does not combine with %s (a preset fixes the workload)", workload_opt, mode_opt);
	if (!mode)
		mode = workload_opt ? "custom" : "quick";
	if (s.bytes && have_runtime)
		bad("--runtime and --bytes do not combine: choose one limit");

	/* Every output is checked before the run, which may take minutes. */
	check_output("--csv", csv);
	check_output("--json", json);
	check_output("--plot", plot);
	if ((csv && json && same_file(csv, json)) || (csv && plot && same_file(csv, plot)))
		bad("--csv %s: also given as another output", csv);
	if (json && plot && same_file(json, plot))
		bad("--json %s: also given as --plot", json);
	if (plot && !bench_plot_available())
		bad("--plot %s: gnuplot not found (Debian: apt-get install gnuplot-nox)", plot);

	/* ---- the cases ---- */
	struct bench_case cases[3 * MAXLIST * MAXLIST];
	unsigned ncases = 0;
	const uint64_t all = all_methods();
#define M(name) (1ull << method_index(name))
	double runtime = 2, ramp = 0.3;
	unsigned reps = 3;
	uint64_t size = 1ull << 30;
	if (!strcmp(mode, "quick")) {
		size = 256ull << 20;
		runtime = 0.5;
		ramp = 0.1;
		cases[ncases++] = (struct bench_case){ PAT_RAND, RW_READ, CACHE_COLD, 0, 4096, 32, all, "kaio-buffered" };
		cases[ncases++] = (struct bench_case){ PAT_RAND, RW_READ, CACHE_HOT, 0, 4096, 32, all, "pread" };
	} else if (!strcmp(mode, "seed-sweep")) {
		runtime = 1.5;
		ramp = 0.2;
		for (unsigned w = 0; w < 2; w++)
			for (unsigned i = 0; i < 5; i++)
				cases[ncases++] = (struct bench_case){ PAT_RAND, w ? RW_WRITE : RW_READ, CACHE_COLD,
					0, 4096u << (2 * i), 16, all, "kaio-buffered" };
	} else if (!strcmp(mode, "cold-vs-direct")) {
		reps = 5;   /* few methods and cases: afford a steadier median */
		cases[ncases++] = (struct bench_case){ PAT_RAND, RW_READ, CACHE_COLD, 0, 4096, 32,
			M("fsaio") | M("kaio-direct") | M("kaio-buffered"), "kaio-buffered" };
		cases[ncases++] = (struct bench_case){ PAT_RAND, RW_READ, CACHE_HOT, 0, 4096, 32,
			M("fsaio") | M("pread"), "pread" };
	} else if (!strcmp(mode, "streams")) {
		reps = 5;
		/* A cold sequential run ends after one pass over the file. */
		cases[ncases++] = (struct bench_case){ PAT_SEQ, RW_READ, CACHE_COLD, 0, 128 * 1024, 8,
			M("fsaio") | M("pread") | M("uring-buffered"), "pread" };
		/* The stream detector on and off, and the O_DIRECT path against
		 * kernel AIO, on the same workload in one interleaved case. */
		cases[ncases++] = (struct bench_case){ PAT_RAND, RW_READ, CACHE_COLD, 0, 4096, 32,
			M("fsaio") | M("fsaio-nora") | M("fsaio-direct") | M("kaio-direct"), "fsaio-nora" };
	} else if (!strcmp(mode, "mix")) {
		runtime = 3;
		reps = 5;
		/* The question is one request's latency: submit one request per
		 * call and look for completions between calls, as an event loop
		 * would, so a hot request is not timed with its batch-mates. */
		if (!have_batch)
			s.batch = 1;
		cases[ncases++] = (struct bench_case){ PAT_RAND, RW_READ, CACHE_MIX, 90, 4096, 32,
			M("fsaio") | M("posix-aio") | M("threads"), "threads" };
	} else {
		const char *ref = cache == CACHE_COLD ? "kaio-buffered" : cache == CACHE_HOT ? "pread" : "threads";
		for (unsigned w = 0; w < nrw; w++)
			for (unsigned d = 0; d < ndepth; d++)
				for (unsigned b = 0; b < nbs; b++)
					cases[ncases++] = (struct bench_case){ pattern, rws[w], cache, hot_pct,
						bss[b], depths[d], all, ref };
	}
#undef M
	for (unsigned i = 0; i < ncases; i++) {
		if (methods_opt)
			cases[i].methods = methods_opt;
		if (ref_opt)
			cases[i].ref = ref_opt;
	}
	if (!have_size)
		s.size = size;
	if (!have_runtime)
		s.runtime = s.bytes ? 0 : runtime;
	if (!have_ramp)
		s.ramp = ramp;
	if (!have_reps)
		s.reps = reps;
	for (unsigned i = 0; i < ncases; i++)
		if (cases[i].bs > s.size)
			bad("--bs %u is larger than --size", cases[i].bs);

	/* ---- files and machine ---- */
	struct bench_report rp = { .preset = mode, .s = &s, .ncases = ncases, .cases = cases };
	struct utsname un;
	bench_iso_time(time(NULL), rp.started, sizeof(rp.started));
	if (uname(&un) == 0)
		snprintf(rp.kernel, sizeof(rp.kernel), "%.20s %.64s %.20s", un.sysname, un.release, un.machine);
	rp.cpus = sysconf(_SC_NPROCESSORS_ONLN);
	/* Other work on the machine moves every figure: say how busy it was. */
	if (getloadavg(&rp.load[0], 1) != 1)
		rp.load[0] = -1;
	s.shim_path = find_shim(shim_opt);
	if (shim_opt && !s.shim_path)
		bad("--shim %s: cannot read it", shim_opt);

	/* --list must not write a gigabyte to answer: the probes get a
	 * one-block scratch file in --dir (O_DIRECT is a property of the file
	 * system there), removed at once. */
	char *probe_path = NULL;
	bench_scratch_init();
	if (list) {
		void *blk;
		if (asprintf(&probe_path, "%s/.fsaio-bench-probe.%ld", s.dir, (long)getpid()) < 0 ||
		    posix_memalign(&blk, 4096, 4096) != 0) {
			fprintf(stderr, "fsaio-bench: out of memory\n");
			return 1;
		}
		bench_pattern_fill(blk, 4096, 0, 0);
		if (bench_scratch_add(probe_path) != 0) {
			fprintf(stderr, "fsaio-bench: out of memory\n");
			return 1;
		}
		int fd = open(probe_path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0 || pwrite(fd, blk, 4096, 0) != 4096) {
			fprintf(stderr, "fsaio-bench: --dir %s: %s\n", s.dir, strerror(errno));
			if (fd < 0)
				bench_scratch_forget_last();   /* not ours: never remove it */
			exit(2);
		}
		close(fd);
		free(blk);
		s.paths = &probe_path;
		s.nfiles = 1;
	} else {
		bool usage_error;
		if (bench_files_prepare(s.dir, s.nfiles, s.size, keep, &s.paths, &rp.fs, &usage_error) != 0) {
			if (usage_error)
				exit(2);
			return 1;
		}
	}

	/* System calls are counted from here, while this is the only thread:
	 * the probes and the runs start every other one. */
	if (!list && !no_syscalls)
		bench_syscount_open();
	else if (no_syscalls)
		bench_syscount_skip("--no-syscalls");

	/* Which methods can run here at all. */
	struct bench_job pj = { .nfiles = s.nfiles, .paths = s.paths, .file_size = s.size, .depth = 1,
				.bs = 4096, .shim_path = s.shim_path, .fadvise = -1 };
	char why[BENCH_MAX_METHODS][256];
	bool avail[BENCH_MAX_METHODS];
	for (unsigned m = 0; m < bench_nmethods; m++) {
		why[m][0] = 0;
		avail[m] = bench_method_probe(&bench_methods[m], &pj, why[m], sizeof(why[m])) == 0;
	}
	if (list) {
		bench_scratch_remove();   /* the probe file, the only one registered */
		free(probe_path);
		for (unsigned m = 0; m < bench_nmethods; m++)
			printf("%-15s %s%s%s\n", bench_methods[m].name, bench_methods[m].what,
			       avail[m] ? "" : "\n                unavailable here: ", avail[m] ? "" : why[m]);
		return 0;
	}

	rp.cells = calloc((size_t)ncases * bench_nmethods, sizeof(*rp.cells));
	struct bench_result *res = calloc((size_t)bench_nmethods * s.reps, sizeof(*res));
	if (!rp.cells || !res) {
		fprintf(stderr, "fsaio-bench: out of memory\n");
		return 1;
	}

	char sz[32];
	bench_size_str(s.size, sz, sizeof(sz));
	printf("fsaio-bench %s (libfsaio %s): %s, %ld CPUs, %s on %s (read_ahead_kb %d), %u file(s) of %s in %s\n",
	       mode, fsaio_version(), rp.kernel, rp.cpus, rp.fs.fstype, rp.fs.device, rp.fs.read_ahead_kb, s.nfiles, sz, s.dir);
	printf("%s, load average %.2f; %u rep(s), median; %s per run after a %.2f s ramp; ", rp.started,
	       rp.load[0], s.reps, s.bytes ? "a byte count" : "a fixed time", s.ramp);
	if (s.batch)
		printf("at most %u request(s) per submit call\n", s.batch);
	else
		printf("every free slot in one submit call\n");
	fflush(stdout);

	bool tty = isatty(STDERR_FILENO);
	unsigned total_runs = 0, run_no = 0;
	for (unsigned c = 0; c < ncases; c++)
		for (unsigned m = 0; m < bench_nmethods; m++)
			if ((cases[c].methods >> m) & 1 && avail[m])
				total_runs += s.reps;

	bool any_error = false, failed_m[BENCH_MAX_METHODS];
	memset(failed_m, 0, sizeof(failed_m));
	uint64_t t0 = bench_now_ns();
	for (unsigned c = 0; c < ncases; c++) {
		const struct bench_case *cs = &cases[c];
		unsigned nok[BENCH_MAX_METHODS];
		char label[96];
		bench_case_label(cs, label, sizeof(label));
		memset(nok, 0, sizeof(nok));
		for (unsigned m = 0; m < bench_nmethods; m++) {
			struct bench_cell *cell = bench_cell_at(&rp, c, m);
			if (!((cs->methods >> m) & 1))
				cell->status = ST_SKIPPED;
			else if (!avail[m]) {
				cell->status = ST_UNAVAILABLE;
				snprintf(cell->why, sizeof(cell->why), "%s", why[m]);
			}
		}
		for (unsigned rep = 0; rep < s.reps; rep++) {
			/* Odd reps run the methods in reverse order: a drift of
			 * the machine's load over a rep favours no method. */
			for (unsigned mi = 0; mi < bench_nmethods; mi++) {
				unsigned m = rep % 2 ? bench_nmethods - 1 - mi : mi;
				struct bench_cell *cell = bench_cell_at(&rp, c, m);
				if (cell->status == ST_SKIPPED || cell->status == ST_UNAVAILABLE)
					continue;
				if (failed_m[m] || cell->status == ST_ERROR) {
					if (cell->status != ST_ERROR) {
						cell->status = ST_ERROR;
						snprintf(cell->why, sizeof(cell->why), "failed in an earlier case");
					}
					continue;
				}
				run_no++;
				if (tty) {
					double el = (double)(bench_now_ns() - t0) / 1e9;
					fprintf(stderr, "\r\033[K[%u/%u %.0fs] %s: %s rep %u/%u", run_no, total_runs,
						el, label, bench_methods[m].name, rep + 1, s.reps);
				}
				struct bench_result *r = &res[m * s.reps + nok[m]];
				bench_run(&s, cs, &bench_methods[m], rep, r);
				if (r->status) {
					cell->status = ST_ERROR;
					snprintf(cell->why, sizeof(cell->why), "%s", r->err);
					failed_m[m] = true;
					any_error = true;
					if (tty)
						fprintf(stderr, "\r\033[K");
					fprintf(stderr, "fsaio-bench: %s, %s: %s\n", label, bench_methods[m].name, r->err);
					continue;
				}
				nok[m]++;
			}
		}
		for (unsigned m = 0; m < bench_nmethods; m++) {
			struct bench_cell *cell = bench_cell_at(&rp, c, m);
			if (cell->status != ST_OK)
				continue;
			cell->reps_ok = nok[m];
			median_result(&res[m * s.reps], nok[m], &cell->med);
		}
		if (tty)
			fprintf(stderr, "\r\033[K");
		struct bench_report one = rp;
		one.cases = cs;
		one.cells = bench_cell_at(&rp, c, 0);
		one.ncases = 1;
		bench_report_table(&one, stdout);
		fflush(stdout);
	}
	bench_syscount_close();
	rp.total_secs = (double)(bench_now_ns() - t0) / 1e9;
	bench_iso_time(time(NULL), rp.finished, sizeof(rp.finished));
	if (getloadavg(&rp.load[1], 1) != 1)
		rp.load[1] = -1;
	printf("\n");
	bench_report_targets(&rp, stdout);
	printf("%s: total %.0f s, load average %.2f at the end\n", rp.finished, rp.total_secs, rp.load[1]);
	fflush(stdout);

	int rc = any_error ? 1 : 0;
	if (csv && bench_report_csv(&rp, csv) != 0)
		rc = 1;
	if (json && bench_report_json(&rp, json) != 0)
		rc = 1;
	if (plot && bench_plot(&rp, plot) < 0)
		rc = 1;
	free(res);
	free(rp.cells);
	for (unsigned i = 0; i < s.nfiles; i++)
		free(s.paths[i]);
	free(s.paths);
	return rc;
}

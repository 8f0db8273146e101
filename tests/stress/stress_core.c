/* SPDX-License-Identifier: MIT */
/*
 * fsaio_stress: concurrency scenarios, one file each (stress_<name>.c),
 * sharing this core: see stress_core.h for what every scenario asserts.
 *
 * One line is printed per scenario and, last, "N passed, M failed" alone
 * on a line; the exit status is 0 only when nothing failed. A watchdog
 * thread aborts with the scenario's name if one runs past its limit
 * (SCENARIO_LIMIT_S, or the long mode's own), so a lost wake-up or a
 * deadlock fails loudly instead of hanging CI.
 *
 * Files live in a fresh directory under $FSAIO_TESTDIR, else
 * $FSAIO_TEST_BUILDDIR (set by meson to the build directory), else ".";
 * never on tmpfs, which has no RWF_NOWAIT and would skip the engine's
 * inline path. Cold ranges are made by fsync + posix_fadvise(DONTNEED).
 *
 * Usage: fsaio_stress [--list] [scenario...]   (no name: all the short ones)
 *        fsaio_stress --long [--requests N]    (see stress_long.c)
 * Environment: FSAIO_STRESS_SEED (default: from the clock, printed),
 * FSAIO_STRESS_SCALE (multiplies every time budget; default 1).
 */
#include "stress_core.h"

/* ------------------------------------------------------------------ */
/* Failure recording: any thread may fail the current scenario.       */

pthread_mutex_t fail_lock = PTHREAD_MUTEX_INITIALIZER;
char fail_msg[512];
atomic_bool failed;

void fail_at(int line, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&fail_lock);
	/* The first failure is the interesting one; later ones are often its
	 * consequences. */
	if (!atomic_load(&failed)) {
		int n = snprintf(fail_msg, sizeof(fail_msg), "line %d: ", line);

		va_start(ap, fmt);
		vsnprintf(fail_msg + n, sizeof(fail_msg) - (size_t)n, fmt, ap);
		va_end(ap);
		atomic_store(&failed, true);
	}
	pthread_mutex_unlock(&fail_lock);
}

bool has_failed(void)
{
	return atomic_load_explicit(&failed, memory_order_relaxed);
}

bool events_lost(int64_t last, unsigned long missing, const char *what)
{
	if (now_ns() - last <= (int64_t)LOST_EVENT_S * 1000000000)
		return false;
	FAIL("%s: %lu request(s) without an event for %d s", what, missing, LOST_EVENT_S);
	return true;
}

bool reaper_stops(bool submitted, unsigned long expected, unsigned long reaped,
		  int64_t last, const char *what)
{
	if (submitted && reaped == expected)
		return true;
	return events_lost(last, expected - reaped, what);
}

/* ------------------------------------------------------------------ */
/* Time, randomness, the pattern.                                      */

int64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

void sleep_us(unsigned us)
{
	struct timespec t = { us / 1000000, (long)(us % 1000000) * 1000 };

	while (nanosleep(&t, &t) < 0 && errno == EINTR)
		;
}

double scale = 1.0;
uint64_t base_seed;

/* A scenario's time budget in ns, scaled by FSAIO_STRESS_SCALE. */
int64_t budget_ns(unsigned ms)
{
	return (int64_t)(ms * scale * 1e6);
}

uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}

void rng_init(struct rng *r, uint64_t salt)
{
	r->s = mix64(base_seed ^ mix64(salt + 0x1234567ull)) | 1;
}

uint64_t rnd(struct rng *r)
{
	/* xorshift64*: plenty for picking sizes and victims. */
	r->s ^= r->s >> 12;
	r->s ^= r->s << 25;
	r->s ^= r->s >> 27;
	return r->s * 2685821657736338717ull;
}

/* Uniform in [lo, hi]. */
uint64_t rnd_in(struct rng *r, uint64_t lo, uint64_t hi)
{
	return lo + rnd(r) % (hi - lo + 1);
}

/* The pattern: one 64-bit hash per 8-byte word of the stream, so filling
 * and checking go a word at a time, yet every byte depends on its offset. */
uint64_t pat_word(unsigned seed, uint64_t word)
{
	return htole64(mix64(word * 0x9e3779b97f4a7c15ull + seed));
}

uint8_t pat_byte(unsigned seed, uint64_t off)
{
	return (uint8_t)(le64toh(pat_word(seed, off >> 3)) >> (8 * (off & 7)));
}

void pat_fill(void *buf, size_t len, unsigned seed, uint64_t off)
{
	uint8_t *p = buf;

	for (; len && (off & 7); len--)
		*p++ = pat_byte(seed, off++);
	for (; len >= 8; len -= 8, p += 8, off += 8) {
		uint64_t w = pat_word(seed, off >> 3);

		memcpy(p, &w, 8);
	}
	for (; len; len--)
		*p++ = pat_byte(seed, off++);
}

/* Index of the first byte of buf that is not the pattern at off, or -1. */
ssize_t pat_mismatch(const void *buf, size_t len, unsigned seed, uint64_t off)
{
	const uint8_t *p = buf;
	size_t i = 0;

	for (; i < len && ((off + i) & 7); i++)
		if (p[i] != pat_byte(seed, off + i))
			return (ssize_t)i;
	for (; i + 8 <= len; i += 8) {
		uint64_t w = pat_word(seed, (off + i) >> 3);

		if (memcmp(p + i, &w, 8))
			break;
	}
	for (; i < len; i++)
		if (p[i] != pat_byte(seed, off + i))
			return (ssize_t)i;
	return -1;
}

bool bytes_are(const void *buf, size_t len, uint8_t c)
{
	const uint8_t *p = buf;

	for (size_t i = 0; i < len; i++)
		if (p[i] != c)
			return false;
	return true;
}

/* ------------------------------------------------------------------ */
/* The watchdog: a thread that aborts the process when a scenario runs  */
/* past its limit (a deadlock, a lost wake-up).                        */

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	const char *name;       /* lock: the scenario running, NULL if none */
	int64_t deadline;       /* lock: CLOCK_MONOTONIC ns */
	bool quit;              /* lock */
	pthread_t thread;
} wd = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void *watchdog_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&wd.lock);
	while (!wd.quit) {
		struct timespec ts;
		int64_t t = wd.name ? wd.deadline : now_ns() + 1000000000;

		if (wd.name && now_ns() >= wd.deadline) {
			/* Say what hung and what had failed so far, then abort:
			 * a core dump of the stuck threads is the best evidence. */
			fprintf(stderr, "fsaio_stress: watchdog: scenario '%s' still running after %d s, aborting\n",
				wd.name, SCENARIO_LIMIT_S);
			/* trylock: a thread stuck while holding it must not
			 * stop the abort. */
			if (has_failed() && pthread_mutex_trylock(&fail_lock) == 0) {
				fprintf(stderr, "fsaio_stress: first failure: %s\n", fail_msg);
				pthread_mutex_unlock(&fail_lock);
			}
			fflush(stderr);
			abort();
		}
		ts.tv_sec = (time_t)(t / 1000000000);
		ts.tv_nsec = (long)(t % 1000000000);
		pthread_cond_timedwait(&wd.cond, &wd.lock, &ts);
	}
	pthread_mutex_unlock(&wd.lock);
	return NULL;
}

static void watchdog_start(void)
{
	pthread_condattr_t ca;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&wd.cond, &ca);
	pthread_condattr_destroy(&ca);
	if (pthread_create(&wd.thread, NULL, watchdog_main, NULL)) {
		fprintf(stderr, "fsaio_stress: cannot start the watchdog\n");
		exit(2);
	}
}

void watchdog_arm(const char *name)
{
	pthread_mutex_lock(&wd.lock);
	wd.name = name;
	wd.deadline = now_ns() + (int64_t)SCENARIO_LIMIT_S * 1000000000;
	pthread_cond_signal(&wd.cond);
	pthread_mutex_unlock(&wd.lock);
}

static void watchdog_disarm(void)
{
	pthread_mutex_lock(&wd.lock);
	wd.name = NULL;
	pthread_mutex_unlock(&wd.lock);
}

static void watchdog_stop(void)
{
	pthread_mutex_lock(&wd.lock);
	wd.quit = true;
	pthread_cond_signal(&wd.cond);
	pthread_mutex_unlock(&wd.lock);
	pthread_join(wd.thread, NULL);
}

/* ------------------------------------------------------------------ */
/* Files and small helpers.                                            */

char tdir[4096];
unsigned tfile_no;

void spawn(pthread_t *t, void *(*fn)(void *), void *arg)
{
	int ret = pthread_create(t, NULL, fn, arg);

	if (ret) {
		fprintf(stderr, "fsaio_stress: pthread_create: %s\n", strerror(ret));
		exit(2);
	}
}

void *xmalloc(size_t n)
{
	void *p = malloc(n);

	if (!p) {
		fprintf(stderr, "fsaio_stress: out of memory\n");
		exit(2);
	}
	return p;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n, size);

	if (!p) {
		fprintf(stderr, "fsaio_stress: out of memory\n");
		exit(2);
	}
	return p;
}

/* 4 KiB aligned, as O_DIRECT needs. */
void *xalign(size_t n)
{
	void *p;

	if (posix_memalign(&p, 4096, n)) {
		fprintf(stderr, "fsaio_stress: out of memory\n");
		exit(2);
	}
	return p;
}

static void make_tdir(void)
{
	const char *base = getenv("FSAIO_TESTDIR");
	struct statfs sfs;

	if (!base || !*base)
		base = getenv("FSAIO_TEST_BUILDDIR");
	if (!base || !*base)
		base = ".";
	snprintf(tdir, sizeof(tdir), "%s/fsaio-stress-XXXXXX", base);
	if (!mkdtemp(tdir)) {
		fprintf(stderr, "fsaio_stress: mkdtemp %s: %s\n", tdir, strerror(errno));
		exit(2);
	}
	if (statfs(tdir, &sfs) == 0 && (sfs.f_type == TMPFS_MAGIC || sfs.f_type == RAMFS_MAGIC)) {
		fprintf(stderr, "fsaio_stress: %s is on tmpfs/ramfs, where RWF_NOWAIT and O_DIRECT "
			"do not apply; set FSAIO_TESTDIR to a directory on disk\n", tdir);
		rmdir(tdir);
		exit(2);
	}
}

static void remove_tdir(void)
{
	char p[4200];

	for (unsigned i = 0; i < tfile_no; i++) {
		snprintf(p, sizeof(p), "%s/f%u", tdir, i);
		unlink(p);
	}
	rmdir(tdir);
}

/* A new file in tdir: size bytes of the pattern of seed (or holes when
 * seed is 0), written back to disk. *path receives its name. */
int make_file(uint64_t size, unsigned seed, char *path, size_t pathlen)
{
	char p[4200];
	uint8_t *buf;
	int fd;

	snprintf(p, sizeof(p), "%s/f%u", tdir, tfile_no++);
	fd = open(p, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		fprintf(stderr, "fsaio_stress: open %s: %s\n", p, strerror(errno));
		exit(2);
	}
	if (path)
		snprintf(path, pathlen, "%s", p);
	if (!seed) {
		if (ftruncate(fd, (off_t)size) < 0) {
			fprintf(stderr, "fsaio_stress: ftruncate: %s\n", strerror(errno));
			exit(2);
		}
		return fd;
	}
	buf = xmalloc(MiB);
	for (uint64_t off = 0; off < size; off += MiB) {
		size_t n = size - off < MiB ? (size_t)(size - off) : MiB;

		pat_fill(buf, n, seed, off);
		if (pwrite(fd, buf, n, (off_t)off) != (ssize_t)n) {
			fprintf(stderr, "fsaio_stress: writing %s: %s\n", p, strerror(errno));
			exit(2);
		}
	}
	free(buf);
	if (fsync(fd) < 0) {
		fprintf(stderr, "fsaio_stress: fsync: %s\n", strerror(errno));
		exit(2);
	}
	return fd;
}

/* Drop [off, off+len) from the page cache (len 0: to EOF). fsync first:
 * DONTNEED leaves dirty pages alone. Best effort, as the kernel's is. */
void make_cold(int fd, uint64_t off, uint64_t len)
{
	if (fsync(fd) < 0)
		FAIL("fsync: %s", strerror(errno));
	(void)posix_fadvise(fd, (off_t)off, (off_t)len, POSIX_FADV_DONTNEED);
}

int open_again(const char *path, int flags)
{
	int fd = open(path, flags | O_CLOEXEC);

	if (fd < 0) {
		fprintf(stderr, "fsaio_stress: open %s: %s\n", path, strerror(errno));
		exit(2);
	}
	return fd;
}

/* Whether this kernel lets us have an io_uring at all (io_uring_disabled,
 * seccomp): the scenarios that expect the ring to be used ask first. */
bool uring_available(void)
{
	struct io_uring_params p;
	long fd;

	memset(&p, 0, sizeof(p));
	fd = syscall(__NR_io_uring_setup, 1, &p);
	if (fd < 0)
		return false;
	close((int)fd);
	return true;
}

/* Whether the context would use the ring for O_DIRECT: not when the
 * caller's environment forces the pool. */
bool env_backend_is(const char *name)
{
	const char *e = getenv("FSAIO_BACKEND");

	return e && !strcmp(e, name);
}

fsaio_ctx_t *ctx_create(const struct fsaio_params *p)
{
	fsaio_ctx_t *ctx = NULL;
	int ret;

	errno = ERRNO_SENTINEL;
	ret = fsaio_ctx_create(p, &ctx);
	if (ret || !ctx) {
		fprintf(stderr, "fsaio_stress: fsaio_ctx_create: %d\n", ret);
		exit(2);
	}
	CHECK(errno == ERRNO_SENTINEL, "fsaio_ctx_create changed errno to %d", errno);
	return ctx;
}

void ctx_destroy(fsaio_ctx_t *ctx)
{
	int ret;

	errno = ERRNO_SENTINEL;
	ret = fsaio_ctx_destroy(ctx);
	CHECK(ret == 0, "fsaio_ctx_destroy: %d", ret);
	CHECK(errno == ERRNO_SENTINEL, "fsaio_ctx_destroy changed errno to %d", errno);
}

/* Submit with errno watched; the count accepted or -errno. */
int submit(fsaio_ctx_t *ctx, struct fsaio_req **reqs, unsigned nr)
{
	int ret;

	errno = ERRNO_SENTINEL;
	ret = fsaio_submit(ctx, reqs, nr);
	CHECK(errno == ERRNO_SENTINEL, "fsaio_submit changed errno to %d", errno);
	return ret;
}

int getevents(fsaio_ctx_t *ctx, unsigned min_nr, unsigned nr, struct fsaio_event *evs,
		     unsigned timeout_ms)
{
	struct timespec ts = { timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000 };
	int ret;

	errno = ERRNO_SENTINEL;
	ret = fsaio_getevents(ctx, min_nr, nr, evs, &ts);
	CHECK(errno == ERRNO_SENTINEL, "fsaio_getevents changed errno to %d", errno);
	CHECK(ret >= 0 && (unsigned)ret <= nr, "fsaio_getevents(%u, %u): %d", min_nr, nr, ret);
	return ret < 0 ? 0 : ret;
}

int cancel(fsaio_ctx_t *ctx, struct fsaio_req *r)
{
	int ret;

	errno = ERRNO_SENTINEL;
	ret = fsaio_cancel(ctx, r);
	CHECK(errno == ERRNO_SENTINEL, "fsaio_cancel changed errno to %d", errno);
	return ret;
}

struct fsaio_stats get_stats(fsaio_ctx_t *ctx)
{
	struct fsaio_stats st;
	int ret;

	errno = ERRNO_SENTINEL;
	ret = fsaio_get_stats(ctx, &st);
	CHECK(ret == 0, "fsaio_get_stats: %d", ret);
	CHECK(errno == ERRNO_SENTINEL, "fsaio_get_stats changed errno to %d", errno);
	return st;
}

/* After a scenario has reaped everything: nothing more may come. */
void expect_no_more_events(fsaio_ctx_t *ctx)
{
	struct fsaio_event ev[4];
	int n = getevents(ctx, 1, 4, ev, 50);

	CHECK(n == 0, "%d event(s) after every request had its one event (first res %" PRId64 ")",
	      n, n > 0 ? ev[0].res : 0);
}

/* Wait for a child with a bound; a child still running then is killed.
 * Its exit status, or -1. */
int waitpid_bounded(pid_t pid, int timeout_ms)
{
	int64_t end = now_ns() + (int64_t)timeout_ms * 1000000;
	int status;

	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid)
			return status;
		if (r < 0 && errno != EINTR)
			return -1;
		if (now_ns() > end) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			return -1;
		}
		sleep_us(2000);
	}
}
static const struct scenario {
	const char *name;
	bool (*fn)(char *msg, size_t msglen);
} scenarios[] = {
	{ "mixed", sc_mixed },
	{ "reapers", sc_reapers },
	{ "cancel", sc_cancel },
	{ "destroy", sc_destroy },
	{ "pipes", sc_pipes },
	{ "direct", sc_direct },
	{ "uring_misses", sc_uring_misses },
	{ "fork", sc_fork },
	{ "faults", sc_faults },
};

uint64_t long_requests;

/* Run the scenarios of list that are selected (all when names is empty):
 * one line each, then the totals; the exit status. */
static int run_scenarios(const struct scenario *list, size_t n, char **names, int nnames)
{
	const char *e;
	unsigned passed = 0, nfailed = 0;
	bool any = false;

	e = getenv("FSAIO_STRESS_SEED");
	base_seed = e && *e ? strtoull(e, NULL, 0) : (uint64_t)now_ns() ^ ((uint64_t)getpid() << 32);
	e = getenv("FSAIO_STRESS_SCALE");
	if (e && *e && strtod(e, NULL) > 0)
		scale = strtod(e, NULL);
	/* A write to a pipe without readers must come back as -EPIPE in an
	 * event (a failure message), not kill the run. */
	signal(SIGPIPE, SIG_IGN);
	make_tdir();
	printf("fsaio_stress: seed %#" PRIx64 " (FSAIO_STRESS_SEED), files in %s\n", base_seed, tdir);
	watchdog_start();

	for (size_t i = 0; i < n; i++) {
		const struct scenario *sc = &list[i];
		char msg[1024] = "";
		bool selected = nnames == 0, ok;
		int64_t t0;

		for (int a = 0; a < nnames; a++)
			selected |= !strcmp(names[a], sc->name);
		if (!selected)
			continue;
		any = true;
		atomic_store(&failed, false);
		fail_msg[0] = 0;
		watchdog_arm(sc->name);
		t0 = now_ns();
		ok = sc->fn(msg, sizeof(msg)) && !has_failed();
		watchdog_disarm();
		if (ok) {
			passed++;
			printf("PASS %s (%.1f s): %s\n", sc->name, (double)(now_ns() - t0) / 1e9, msg);
		} else {
			nfailed++;
			printf("FAIL %s (%.1f s): %s\n", sc->name, (double)(now_ns() - t0) / 1e9, fail_msg);
		}
	}
	watchdog_stop();
	remove_tdir();
	if (!any)
		fprintf(stderr, "fsaio_stress: nothing selected\n");
	printf("%u passed, %u failed\n", passed, nfailed);
	return nfailed == 0 && any ? 0 : 1;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 2 && !strcmp(argv[1], "--long")) {
		/* The long mode: sc_long alone, with its request target. */
		static const struct scenario lng = { "long", sc_long };
		char *end = NULL;

		long_requests = 10000000;
		if (argc == 4 && !strcmp(argv[2], "--requests"))
			long_requests = strtoull(argv[3], &end, 0);
		if ((argc != 2 && argc != 4) || (argc == 4 && (!end || *end || !long_requests))) {
			fprintf(stderr, "usage: fsaio_stress --long [--requests N]\n");
			return 2;
		}
		return run_scenarios(&lng, 1, NULL, 0);
	}
	if (argc == 2 && !strcmp(argv[1], "--list")) {
		for (size_t i = 0; i < ARRAY_SIZE(scenarios); i++)
			printf("%s\n", scenarios[i].name);
		return 0;
	}
	for (int a = 1; a < argc; a++) {
		bool known = false;

		for (size_t i = 0; i < ARRAY_SIZE(scenarios); i++)
			known |= !strcmp(argv[a], scenarios[i].name);
		if (!known) {
			fprintf(stderr, "fsaio_stress: no scenario '%s' (--list lists them)\n", argv[a]);
			return 2;
		}
	}
	return run_scenarios(scenarios, ARRAY_SIZE(scenarios), argv + 1, argc - 1);
}

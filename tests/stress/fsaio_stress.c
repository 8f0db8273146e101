/* SPDX-License-Identifier: MIT */
/*
 * fsaio_stress: concurrency scenarios for ThreadSanitizer, without Criterion.
 *
 * Why a separate program: every Criterion binary aborts at start-up under
 * TSan ("Could not initialize inheritable arena", Criterion issue #274), so
 * the core suite cannot say whether the engine is race-free. This program
 * uses nothing but libc, pthreads and libfsaio, and is run in every build
 * (plain, ASan+UBSan, TSan) by `meson test --suite stress`.
 *
 * Each scenario is a function that returns pass/fail with a message; one
 * line is printed per scenario and, last, "N passed, M failed" alone on a
 * line; the exit status is 0 only when nothing failed. A watchdog thread
 * aborts with the scenario's name if one runs past SCENARIO_LIMIT_S, so a
 * lost wake-up or a deadlock fails loudly instead of hanging CI.
 *
 * What every scenario asserts:
 *  - data: files and pipe streams hold a position-dependent pattern (byte at
 *    offset off of stream seed s), so a read of the wrong range, a short
 *    copy or a shifted vector shows up as a mismatch; read buffers are
 *    poisoned first and guarded by sentinel bytes;
 *  - exactly one event per accepted request: per request counters, the
 *    event's user_data matched against the current submission, and a
 *    final wait that must see no extra event.
 *
 * Files live in a fresh directory under $FSAIO_TESTDIR, else
 * $FSAIO_TEST_BUILDDIR (set by meson to the build directory), else ".";
 * never on tmpfs, which has no RWF_NOWAIT and would skip the engine's
 * inline path. Cold ranges are made by fsync + posix_fadvise(DONTNEED).
 *
 * Usage: fsaio_stress [--list] [scenario...]   (no name: all of them)
 * Environment: FSAIO_STRESS_SEED (default: from the clock, printed),
 * FSAIO_STRESS_SCALE (multiplies every time budget; default 1).
 */
#include <errno.h>
#include <fcntl.h>
#include <endian.h>
#include <inttypes.h>
#include <linux/io_uring.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fsaio.h"

#ifndef TMPFS_MAGIC
#define TMPFS_MAGIC 0x01021994
#endif
#ifndef RAMFS_MAGIC
#define RAMFS_MAGIC 0x858458f6
#endif

#define KiB 1024u
#define MiB (1024u * 1024u)

/* Generous: the TSan build on two shared cores is ~10x slower than plain,
 * and every scenario's own budget is a few seconds. */
#define SCENARIO_LIMIT_S 60
/* How long a thread waits for an event it is owed before calling it lost:
 * below the watchdog, so a lost event gets a message of its own. */
#define LOST_EVENT_S 30
/* Any value no libc call sets: a call that touches errno is caught. */
#define ERRNO_SENTINEL 7919
#define GUARD 64                /* sentinel bytes after every read buffer */
#define GUARD_BYTE 0xA5

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define CONTAINER_OF(p, type, member) ((type *)((char *)(p) - offsetof(type, member)))

/* ------------------------------------------------------------------ */
/* Failure recording: any thread may fail the current scenario.       */

static pthread_mutex_t fail_lock = PTHREAD_MUTEX_INITIALIZER;
static char fail_msg[512];
static atomic_bool failed;

__attribute__((format(printf, 2, 3)))
static void fail_at(int line, const char *fmt, ...)
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

#define FAIL(...) fail_at(__LINE__, __VA_ARGS__)
#define CHECK(cond, ...) do { if (!(cond)) FAIL(__VA_ARGS__); } while (0)

static bool has_failed(void)
{
	return atomic_load_explicit(&failed, memory_order_relaxed);
}

/* ------------------------------------------------------------------ */
/* Time, randomness, the pattern.                                      */

static int64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void sleep_us(unsigned us)
{
	struct timespec t = { us / 1000000, (long)(us % 1000000) * 1000 };

	while (nanosleep(&t, &t) < 0 && errno == EINTR)
		;
}

static double scale = 1.0;
static uint64_t base_seed;

/* A scenario's time budget in ns, scaled by FSAIO_STRESS_SCALE. */
static int64_t budget_ns(unsigned ms)
{
	return (int64_t)(ms * scale * 1e6);
}

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}

struct rng {
	uint64_t s;
};

static void rng_init(struct rng *r, uint64_t salt)
{
	r->s = mix64(base_seed ^ mix64(salt + 0x1234567ull)) | 1;
}

static uint64_t rnd(struct rng *r)
{
	/* xorshift64*: plenty for picking sizes and victims. */
	r->s ^= r->s >> 12;
	r->s ^= r->s << 25;
	r->s ^= r->s >> 27;
	return r->s * 2685821657736338717ull;
}

/* Uniform in [lo, hi]. */
static uint64_t rnd_in(struct rng *r, uint64_t lo, uint64_t hi)
{
	return lo + rnd(r) % (hi - lo + 1);
}

/* The pattern: one 64-bit hash per 8-byte word of the stream, so filling
 * and checking go a word at a time, yet every byte depends on its offset. */
static uint64_t pat_word(unsigned seed, uint64_t word)
{
	return htole64(mix64(word * 0x9e3779b97f4a7c15ull + seed));
}

static uint8_t pat_byte(unsigned seed, uint64_t off)
{
	return (uint8_t)(le64toh(pat_word(seed, off >> 3)) >> (8 * (off & 7)));
}

static void pat_fill(void *buf, size_t len, unsigned seed, uint64_t off)
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
static ssize_t pat_mismatch(const void *buf, size_t len, unsigned seed, uint64_t off)
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

static bool bytes_are(const void *buf, size_t len, uint8_t c)
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

static void watchdog_arm(const char *name)
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

static char tdir[4096];
static unsigned tfile_no;

static void spawn(pthread_t *t, void *(*fn)(void *), void *arg)
{
	int ret = pthread_create(t, NULL, fn, arg);

	if (ret) {
		fprintf(stderr, "fsaio_stress: pthread_create: %s\n", strerror(ret));
		exit(2);
	}
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n);

	if (!p) {
		fprintf(stderr, "fsaio_stress: out of memory\n");
		exit(2);
	}
	return p;
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n, size);

	if (!p) {
		fprintf(stderr, "fsaio_stress: out of memory\n");
		exit(2);
	}
	return p;
}

/* 4 KiB aligned, as O_DIRECT needs. */
static void *xalign(size_t n)
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
static int make_file(uint64_t size, unsigned seed, char *path, size_t pathlen)
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
static void make_cold(int fd, uint64_t off, uint64_t len)
{
	if (fsync(fd) < 0)
		FAIL("fsync: %s", strerror(errno));
	(void)posix_fadvise(fd, (off_t)off, (off_t)len, POSIX_FADV_DONTNEED);
}

static int open_again(const char *path, int flags)
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
static bool uring_available(void)
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
static bool env_backend_is(const char *name)
{
	const char *e = getenv("FSAIO_BACKEND");

	return e && !strcmp(e, name);
}

static fsaio_ctx_t *ctx_create(const struct fsaio_params *p)
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

static void ctx_destroy(fsaio_ctx_t *ctx)
{
	int ret;

	errno = ERRNO_SENTINEL;
	ret = fsaio_ctx_destroy(ctx);
	CHECK(ret == 0, "fsaio_ctx_destroy: %d", ret);
	CHECK(errno == ERRNO_SENTINEL, "fsaio_ctx_destroy changed errno to %d", errno);
}

/* Submit with errno watched; the count accepted or -errno. */
static int submit(fsaio_ctx_t *ctx, struct fsaio_req **reqs, unsigned nr)
{
	int ret;

	errno = ERRNO_SENTINEL;
	ret = fsaio_submit(ctx, reqs, nr);
	CHECK(errno == ERRNO_SENTINEL, "fsaio_submit changed errno to %d", errno);
	return ret;
}

static int getevents(fsaio_ctx_t *ctx, unsigned min_nr, unsigned nr, struct fsaio_event *evs,
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

static int cancel(fsaio_ctx_t *ctx, struct fsaio_req *r)
{
	int ret;

	errno = ERRNO_SENTINEL;
	ret = fsaio_cancel(ctx, r);
	CHECK(errno == ERRNO_SENTINEL, "fsaio_cancel changed errno to %d", errno);
	return ret;
}

static struct fsaio_stats get_stats(fsaio_ctx_t *ctx)
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
static void expect_no_more_events(fsaio_ctx_t *ctx)
{
	struct fsaio_event ev[4];
	int n = getevents(ctx, 1, 4, ev, 50);

	CHECK(n == 0, "%d event(s) after every request had its one event (first res %" PRId64 ")",
	      n, n > 0 ? ev[0].res : 0);
}

/* Wait for a child with a bound; a child still running then is killed.
 * Its exit status, or -1. */
static int waitpid_bounded(pid_t pid, int timeout_ms)
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

/* ------------------------------------------------------------------ */
/* The mixed workload: scenarios mixed, reapers, direct, uring_misses   */
/* and fork are this one runner with different settings.               */

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
		if (atomic_load(&m->submit_done) && atomic_load(&m->reaped) == atomic_load(&m->accepted))
			break;
		if (now_ns() - last > (int64_t)LOST_EVENT_S * 1000000000) {
			FAIL("reaper: %lu request(s) without an event after %d s",
			     atomic_load(&m->accepted) - atomic_load(&m->reaped), LOST_EVENT_S);
			break;
		}
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
/* cancel: one worker, many cold reads, two threads cancelling random   */
/* ones while a reaper collects: every request one event, -ECANCELED    */
/* exactly when a cancel returned 0 for it.                            */

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

struct ccanceller {
	struct cround *c;
	unsigned id;
	pthread_t thread;
};

static void *cancel_canceller(void *arg)
{
	struct ccanceller *cc = arg;
	struct cround *c = cc->c;
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
	struct ccanceller cc[2];
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
		cc[i].c = &c;
		cc[i].id = i;
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

static bool sc_cancel(char *msg, size_t msglen)
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
/* several threads: each request exactly one callback, none after        */
/* destroy returns, no buffer touched after (they are freed at once).    */

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

static bool sc_destroy(char *msg, size_t msglen)
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
/* through the engine that wait for room), a thread cancelling waiting   */
/* reads and POLL ops. Each fd's reads come from one submitting thread,  */
/* so they consume its stream in submission order: read i holds the     */
/* bytes after everything the reads before it took, cancelled or not.   */

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
		if (atomic_load(&pp->submit_done) && atomic_load(&pp->writers_done) &&
		    atomic_load(&pp->reaped) == atomic_load(&pp->expected))
			break;
		if (now_ns() - last > (int64_t)LOST_EVENT_S * 1000000000) {
			FAIL("%lu request(s) on pipes without an event for %d s",
			     atomic_load(&pp->expected) - atomic_load(&pp->reaped), LOST_EVENT_S);
			break;
		}
	}
	return NULL;
}

struct pthr {
	struct pipes *pp;
	unsigned id;
	pthread_t thread;
};

/* Submits the POLL op and the reads of the channels ch % 2 == id, in small
 * batches, round-robin over its channels. */
static void *pipes_submitter(void *arg)
{
	struct pthr *th = arg;
	struct pipes *pp = th->pp;
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
	struct pthr *th = arg;
	struct pipes *pp = th->pp;
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
	struct pthr subs[2], writers[2];
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
		subs[i] = (struct pthr){ .pp = pp, .id = i };
		writers[i] = (struct pthr){ .pp = pp, .id = i };
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

static bool sc_pipes(char *msg, size_t msglen)
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

/* ------------------------------------------------------------------ */
/* The list.                                                           */

static bool sc_mixed(char *msg, size_t msglen)
{
	/* Four threads submitting and reaping on one context: hot, cold and
	 * half-cached reads (the cache churned under them), vectored reads
	 * and writes, RWF_NOWAIT reads, fsync and fdatasync. */
	static const struct mixcfg c = { .submitters = 4, .ms = 3000, .target = 1000000 };

	return run_mixed(&c, msg, msglen);
}

static bool sc_reapers(char *msg, size_t msglen)
{
	/* Submitters that never reap, two reapers with min_nr > 1 and
	 * timeouts, and a thread on get_stats / event_fd / poll. */
	static const struct mixcfg c = { .submitters = 2, .reapers = 2, .stats_thread = true,
					 .workers = 8, .ms = 3000, .target = 1000000 };

	return run_mixed(&c, msg, msglen);
}

static bool sc_direct(char *msg, size_t msglen)
{
	/* O_DIRECT through io_uring from four submitters at once. */
	static const struct mixcfg c = { .submitters = 4, .direct = true, .ms = 2500, .target = 1000000 };

	return run_mixed(&c, msg, msglen);
}

static bool sc_uring_misses(char *msg, size_t msglen)
{
	/* Buffered misses carried by io_uring (miss_backend URING, what
	 * FSAIO_BACKEND=uring selects) instead of the pool. */
	static const struct mixcfg c = { .submitters = 4, .backend = FSAIO_BACKEND_URING,
					 .ms = 2500, .target = 1000000 };

	return run_mixed(&c, msg, msglen);
}

static bool sc_fork(char *msg, size_t msglen)
{
	/* Forks while three threads keep the workers busy with cold reads. */
	static const struct mixcfg c = { .submitters = 3, .workers = 4, .forks = 4, .ms = 3000,
					 .target = 1000000 };

	return run_mixed(&c, msg, msglen);
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
};

int main(int argc, char **argv)
{
	const char *e;
	unsigned passed = 0, nfailed = 0;
	bool any = false;

	setvbuf(stdout, NULL, _IOLBF, 0);
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

	for (size_t i = 0; i < ARRAY_SIZE(scenarios); i++) {
		const struct scenario *sc = &scenarios[i];
		char msg[512] = "";
		bool selected = argc == 1, ok;
		int64_t t0;

		for (int a = 1; a < argc; a++)
			selected |= !strcmp(argv[a], sc->name);
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

/* SPDX-License-Identifier: MIT */
/*
 * The stress programs' shared core: failure recording, time, randomness,
 * the data pattern, files, and the engine calls wrapped to watch errno.
 *
 * Why plain C: every Criterion binary aborts at start-up under TSan
 * ("Could not initialize inheritable arena", Criterion, https://github.com/Snaipe/Criterion/issues/274), so
 * these scenarios are what says whether the engine is race-free. They use
 * nothing but libc, pthreads and libfsaio, and run in every build (plain,
 * ASan+UBSan, TSan) by `meson test --suite stress`.
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
 * Any thread may fail the running scenario (FAIL, CHECK); the first
 * failure is the one reported. Each scenario lives in stress_<name>.c and
 * is listed in stress_core.c.
 */
#ifndef STRESS_CORE_H
#define STRESS_CORE_H

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


/* A scenario: pass/fail, and on pass a one-line summary in msg. */
typedef bool stress_fn(char *msg, size_t msglen);
stress_fn sc_mixed, sc_reapers, sc_cancel, sc_destroy, sc_pipes, sc_direct, sc_uring_misses, sc_fork,
	  sc_faults, sc_long;

/* The long mode's request target (--long [--requests N]); 0 otherwise. */
extern uint64_t long_requests;

/* (Re)start the running scenario's watchdog limit: a scenario that runs
 * in rounds calls it at the start of each. */
void watchdog_arm(const char *name);

/* Failure recording: fail_lock guards fail_msg; failed is atomic. */
extern pthread_mutex_t fail_lock;
extern char fail_msg[512];
extern atomic_bool failed;
__attribute__((format(printf, 2, 3)))
void fail_at(int line, const char *fmt, ...);
#define FAIL(...) fail_at(__LINE__, __VA_ARGS__)
#define CHECK(cond, ...) do { if (!(cond)) FAIL(__VA_ARGS__); } while (0)
bool has_failed(void);
/* A reaper's watchdog: whether LOST_EVENT_S have passed since its last
 * event (now_ns() at last); then it FAILs, what naming the reaper and
 * missing the requests still without an event. */
bool events_lost(int64_t last, unsigned long missing, const char *what);
/* Whether a reaper stops: all is submitted (submitted, read before the
 * counts: expected is final then) and reaped has reached expected, or
 * events_lost() fired. */
bool reaper_stops(bool submitted, unsigned long expected, unsigned long reaped,
		  int64_t last, const char *what);

/* Set once by main before any scenario runs; read-only after. */
extern double scale;            /* FSAIO_STRESS_SCALE */
extern uint64_t base_seed;      /* FSAIO_STRESS_SEED */
extern char tdir[4096];         /* the scratch directory */
extern unsigned tfile_no;       /* files made so far: main's thread only */

/* Time: monotonic ns; a scenario's budget scaled by FSAIO_STRESS_SCALE. */
int64_t now_ns(void);
void sleep_us(unsigned us);
int64_t budget_ns(unsigned ms);

/* Randomness: xorshift64* seeded from base_seed and a salt. */
struct rng {
	uint64_t s;
};
uint64_t mix64(uint64_t x);
void rng_init(struct rng *r, uint64_t salt);
uint64_t rnd(struct rng *r);
uint64_t rnd_in(struct rng *r, uint64_t lo, uint64_t hi);

/* The pattern: byte at off of stream seed; pat_mismatch gives the index of
 * the first wrong byte, or -1. */
uint64_t pat_word(unsigned seed, uint64_t word);
uint8_t pat_byte(unsigned seed, uint64_t off);
void pat_fill(void *buf, size_t len, unsigned seed, uint64_t off);
ssize_t pat_mismatch(const void *buf, size_t len, unsigned seed, uint64_t off);
bool bytes_are(const void *buf, size_t len, uint8_t c);

/* Threads and memory: exit(2) when the machine refuses. */
void spawn(pthread_t *t, void *(*fn)(void *), void *arg);
/* One of a scenario's numbered threads: what it shares with the others
 * (the scenario's state), its number, and its pthread. */
struct numbered {
	void *shared;
	unsigned id;
	pthread_t thread;
};
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xalign(size_t n);

/* Files in tdir: make_file writes size bytes of seed's pattern (holes for
 * seed 0) and fsyncs; make_cold drops a range from the page cache. */
int make_file(uint64_t size, unsigned seed, char *path, size_t pathlen);
void make_cold(int fd, uint64_t off, uint64_t len);
int open_again(const char *path, int flags);
bool uring_available(void);
bool env_backend_is(const char *name);

/* The engine's calls with errno watched (a change fails the scenario). */
fsaio_ctx_t *ctx_create(const struct fsaio_params *p);
void ctx_destroy(fsaio_ctx_t *ctx);
int submit(fsaio_ctx_t *ctx, struct fsaio_req **reqs, unsigned nr);
int getevents(fsaio_ctx_t *ctx, unsigned min_nr, unsigned nr, struct fsaio_event *evs,
		     unsigned timeout_ms);
int cancel(fsaio_ctx_t *ctx, struct fsaio_req *r);
struct fsaio_stats get_stats(fsaio_ctx_t *ctx);
void expect_no_more_events(fsaio_ctx_t *ctx);
int waitpid_bounded(pid_t pid, int timeout_ms);

#endif /* STRESS_CORE_H */

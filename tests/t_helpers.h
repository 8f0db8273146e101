/* SPDX-License-Identifier: MIT */
/*
 * Shared helpers of the core test suite.
 *
 * Every test runs in its own process (Criterion forks), so the helpers keep
 * their state in plain globals: one temporary directory per test, on disk
 * (tmpfs has no RWF_NOWAIT, so a test there would not exercise the engine's
 * inline path), created by t_setup() and removed by t_teardown().
 *
 * Helpers that assert (cr_assert*) may be called only from the test's own
 * thread: a Criterion assertion unwinds the test, which cannot be done from
 * another thread. The t_*_nocheck variants return a status instead.
 */
#ifndef T_HELPERS_H
#define T_HELPERS_H

#ifdef T_NO_CRITERION
#include "t_runner.h"   /* ThreadSanitizer builds: see t_runner.h */
#else
#include <criterion/criterion.h>
#endif
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include "fsaio.h"

/* Any value no libc call sets: a call that touches errno is caught. */
#define T_ERRNO_SENTINEL 7919

/*
 * Evaluate a library call with errno set to a sentinel and assert that the
 * call left it alone (the API promises that for every call, failing or not).
 */
#define T_CALL(expr) __extension__({					\
	errno = T_ERRNO_SENTINEL;					\
	__typeof__(expr) t_call_r_ = (expr);				\
	int t_call_e_ = errno;						\
	cr_assert_eq(t_call_e_, T_ERRNO_SENTINEL,			\
		     "%s changed errno to %d (%s)", #expr, t_call_e_,	\
		     strerror(t_call_e_));				\
	t_call_r_;							\
})

/* T_CALL, then assert the call returned want (readable failure messages). */
#define T_ASSERT_RET(expr, want) do {					\
	long long t_ret_r_ = (long long)T_CALL(expr);			\
	long long t_ret_w_ = (long long)(want);				\
	cr_assert_eq(t_ret_r_, t_ret_w_, "%s returned %lld, want %lld",	\
		     #expr, t_ret_r_, t_ret_w_);			\
} while (0)

/* A generous bound on how long a single expected event may take to arrive:
 * generous because a loaded CI machine must not make a correct engine fail. */
#define T_EVENT_TIMEOUT_MS 20000

/* Per-test fixture: the temporary directory and the files made in it. */
void t_setup(void);
void t_teardown(void);
const char *t_dir(void);

/* A file of size bytes filled with the pattern of seed, opened O_RDWR; its
 * pages are in the cache (dirty) until t_make_cold(). */
int t_tmpfile(size_t size, unsigned seed);
/* The same, and its path copied into path (at least PATH_MAX bytes). */
int t_tmpfile_path(size_t size, unsigned seed, char *path);
/* The same, written back and dropped from the cache (t_make_cold). */
int t_coldfile(size_t size, unsigned seed);
/* The same, with every page of it in the cache (t_make_hot). */
int t_hotfile(size_t size, unsigned seed);
/* A t_coldfile whose first hot_len bytes are then brought into the cache
 * (t_make_hot). */
int t_hotprefix_file(size_t size, unsigned seed, uint64_t hot_len);
/* A file in /dev/shm (tmpfs) for the tests about tmpfs; removed by t_teardown. */
int t_shmfile(size_t size, unsigned seed);
/* Open the file behind fd again, with other flags (a new open file description). */
int t_reopen(int fd, int flags);

/* The position-dependent pattern: byte at file offset off for seed. */
uint8_t t_pattern_byte(uint64_t off, unsigned seed);
void t_fill_pattern(void *buf, size_t len, uint64_t off, unsigned seed);
/* Index of the first byte of buf that is not the pattern at off, or -1. */
ssize_t t_pattern_mismatch(const void *buf, size_t len, uint64_t off, unsigned seed);
/* Assert that buf holds the pattern of file offset off. */
void t_check_pattern(const void *buf, size_t len, uint64_t off, unsigned seed);
/* Read the file back (plain pread) and assert it holds the pattern. */
void t_check_file(int fd, uint64_t off, size_t len, unsigned seed);
/* Assert that every byte of buf is c (sentinels around and between buffers). */
void t_check_bytes(const void *buf, size_t len, uint8_t c);

/* Page cache state of a range, from cachestat(2); len 0 means to EOF. */
uint64_t t_cached_pages(int fd, uint64_t off, uint64_t len);
/* Pages of the range evicted by reclaim (cachestat's nr_evicted: they left
 * a shadow entry; fadvise DONTNEED leaves none). */
uint64_t t_evicted_pages(int fd, uint64_t off, uint64_t len);
uint64_t t_dirty_pages(int fd, uint64_t off, uint64_t len);
/* fsync + POSIX_FADV_DONTNEED, then assert that no page of the file is cached. */
void t_make_cold(int fd);
/* What sysfs says the read_ahead_kb of the device holding fd's file is: the
 * disk's queue (a partition's disk), else the filesystem's bdi; -1 when
 * none says. */
long t_sysfs_ra_kb(int fd);
/* Bring exactly the pages of [off, off+len) into the cache (no readahead
 * beyond them), pin them there until t_make_cold() of the same file or the
 * end of the test, and assert that they are all cached. */
void t_make_hot(int fd, uint64_t off, uint64_t len);

/* Context and call wrappers that assert success and errno untouched. */
fsaio_ctx_t *t_ctx(const struct fsaio_params *p);
/* A context whose misses go to the given FSAIO_BACKEND_*. */
fsaio_ctx_t *t_ctx_backend(uint32_t backend);
/* Whether this process may use io_uring at all (a seccomp filter or the
 * io_uring_disabled sysctl may deny it; the engine falls back then). */
bool t_ring_ok(void);
/* A context whose misses go to the worker pool (FSAIO_BACKEND_THREADS):
 * for the tests that assert the pool's counters (queued, bytes_worker,
 * pool_queue_len), which another backend would not touch. */
fsaio_ctx_t *t_pool_ctx(const struct fsaio_params *p);
void t_ctx_destroy(fsaio_ctx_t *ctx);
void t_submit(fsaio_ctx_t *ctx, struct fsaio_req **reqs, unsigned nr);
void t_submit1(fsaio_ctx_t *ctx, struct fsaio_req *req);
/* Submit req alone and reap its one event (asserted to be req's). */
struct fsaio_event t_run1(fsaio_ctx_t *ctx, struct fsaio_req *req);
/* One read of [off, off+len) of fd through t_run1: the event's res. */
int64_t t_read1(fsaio_ctx_t *ctx, int fd, void *buf, size_t len, uint64_t off);
/* t_read1, which must read all len bytes, the pattern of seed. */
void t_read_check(fsaio_ctx_t *ctx, int fd, void *buf, size_t len, uint64_t off,
		  unsigned seed);
/* fsaio_cancel each of reqs[0..nr), its answer in ret[i]: taken back (0),
 * too late (-EBUSY) or already done (-EINVAL), nothing else. */
void t_cancel_each(fsaio_ctx_t *ctx, struct fsaio_req *reqs, unsigned nr, int *ret);
/* Submit reqs[0..nr) as one batch; all must be taken. */
void t_submit_array(fsaio_ctx_t *ctx, struct fsaio_req *reqs, unsigned nr);
/* That, then reap their nr events into evs (t_reap_all) and match them
 * one to one with the requests (t_match_events). */
void t_run(fsaio_ctx_t *ctx, struct fsaio_req *reqs, unsigned nr, struct fsaio_event *evs);
/* Prepare n reads of fd, read i being len bytes at i * stride into
 * buf + i * len; rp[i] = &reqs[i] unless rp is NULL (for t_submit). */
void t_prep_reads(struct fsaio_req *reqs, struct fsaio_req **rp, unsigned n, int fd,
		  uint8_t *buf, size_t len, uint64_t stride);
/* t_run of n reads of fd, read i being len bytes at i * stride into
 * buf + i * len; assert each read all len bytes, the pattern of seed.
 * Failures name the batch as "what idx". */
void t_read_batch(fsaio_ctx_t *ctx, int fd, uint8_t *buf, unsigned n, size_t len,
		  uint64_t stride, unsigned seed, const char *what, unsigned idx);
/* A completion callback (fsaio_params.complete) that counts its calls in
 * the _Atomic unsigned complete_arg points at. */
void t_count_cb(void *arg, const struct fsaio_event *ev);
struct fsaio_stats t_stats(fsaio_ctx_t *ctx);
/* The counters of the request path: what a case expects of them. */
struct t_path {
	uint64_t requests, completed_inline, partial_inline, queued;
	uint64_t bytes_inline, bytes_worker;
};
/* Assert that st's request-path counters are exactly want's; what names
 * the case in failure messages. */
void t_check_path(const struct fsaio_stats *st, struct t_path want, const char *what);

/*
 * Reap exactly n events into evs within timeout_ms, then assert that no
 * further event arrives (a short wait, so a duplicate is caught).
 */
void t_reap_all(fsaio_ctx_t *ctx, unsigned n, struct fsaio_event *evs, int timeout_ms);
/* Assert that no event is pending right now. */
void t_no_event(fsaio_ctx_t *ctx);
/* Assert that evs[0..n) and reqs[0..nreq) match one to one (each request
 * exactly one event, user_data carried) and that n == nreq. */
void t_match_events(const struct fsaio_event *evs, unsigned n,
		    struct fsaio_req *const *reqs, unsigned nreq);
/* The one event of req among evs (asserts there is exactly one). */
const struct fsaio_event *t_event_of(const struct fsaio_event *evs, unsigned n,
				     const struct fsaio_req *req);

/*
 * A deterministic way to keep a worker busy: a page registered with
 * userfaultfd. A worker that copies from or to it blocks in the kernel until
 * the test resolves the fault, and the test learns the moment it blocked by
 * reading the userfaultfd. Real kernel behaviour, no timing involved.
 */
struct t_blocker {
	int uffd;
	void *page;
	size_t len;
};
void t_blocker_init(struct t_blocker *b);
/* Assert that a thread faulted on the page within timeout_ms. */
void t_blocker_wait_fault(struct t_blocker *b, int timeout_ms);
/* Fill the page with content (len bytes), waking the blocked thread.
 * 0 or -errno; safe from any thread. */
int t_blocker_release_nocheck(struct t_blocker *b, const void *content);
void t_blocker_release(struct t_blocker *b, const void *content);
void t_blocker_fini(struct t_blocker *b);

/*
 * A context whose only worker is held by a blocker: its first request, a
 * RWF_DSYNC write from the blocker page (such a write always goes to a
 * worker, so the submitter never touches the page itself), faults and stays
 * blocked until t_sat_unblock(). Everything the context then hands to the
 * pool stays queued, deterministically. p must ask for workers = 1; misses
 * go to the pool (FSAIO_BACKEND_THREADS) whatever p says.
 */
struct t_sat {
	fsaio_ctx_t *ctx;
	struct t_blocker blk;
	struct fsaio_req breq;
	int wfd;
	uint8_t content[4096];
};
void t_saturate(struct t_sat *s, const struct fsaio_params *p);
void t_sat_unblock(struct t_sat *s);
/* Assert the blocker's event is among evs with its full size, and its data
 * reached the file. */
void t_sat_check(struct t_sat *s, const struct fsaio_event *evs, unsigned n);

/*
 * For the tests run once per backend and once with the pool held: a
 * context of backend, or with s a one-worker pool context held by s
 * (t_saturate); destroyed by t_ctx_sat_destroy.
 */
fsaio_ctx_t *t_ctx_or_sat(struct t_sat *s, uint32_t backend);
/* Reap the events of reqs[0..nreq) and, with s, the blocker's (checked by
 * t_sat_check, then dropped); match them to reqs. evs holds nreq + 1; the
 * first nreq are reqs' events. */
void t_reap_sat(fsaio_ctx_t *ctx, struct t_sat *s, struct fsaio_event *evs,
		struct fsaio_req **reqs, unsigned nreq);
void t_ctx_sat_destroy(fsaio_ctx_t *ctx, struct t_sat *s);
/* Release the blocker when it is the only request left: reap its one event
 * from s->ctx and t_sat_check it. */
void t_sat_reap_blocker(struct t_sat *s);

/* Time and waiting; never used to assert durations of the engine. */
uint64_t t_now_ns(void);
void t_sleep_ms(unsigned ms);
/* waitpid with a bound: the child's status; a child still running after
 * timeout_ms is killed and the test fails. */
int t_waitpid_bounded(pid_t pid, int timeout_ms);

#endif /* T_HELPERS_H */

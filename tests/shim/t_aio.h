/* SPDX-License-Identifier: MIT */
/*
 * Helpers of the libaio shim's tests.
 *
 * Every test here is a real libaio program: it includes Debian's
 * <libaio.h>, links -laio, and calls io_setup/io_submit/... The same binary
 * runs twice (tests/shim/meson.build): with libfsaio-libaio.so preloaded
 * (T_AIO_MODE=shim, or =soname when it is found as libaio.so.1 on
 * LD_LIBRARY_PATH), and on the real libaio and kernel (T_AIO_MODE=kernel).
 * A semantic test passing in both modes is the proof that the shim and the
 * kernel agree; the few tests of what only the shim does skip in kernel
 * mode, and say why.
 *
 * Files live in a directory made under $FSAIO_TEST_BUILDDIR (the build
 * tree, on disk; never tmpfs), one per test, removed at teardown.
 */
#ifndef T_AIO_H
#define T_AIO_H

#include "../t_files.h"

#ifdef T_NO_CRITERION
#include "../t_runner.h"    /* ThreadSanitizer builds: see t_runner.h */
#else
#include <criterion/criterion.h>
#endif
#include <errno.h>
#include <libaio.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

/* The kernel's ring header, as fio and libaio read it through io_context_t. */
struct t_aio_ring {
	unsigned id, nr, head, tail;
	unsigned magic, compat_features, incompat_features, header_length;
	struct io_event events[];
};
#define T_RING_MAGIC 0xa10a10a1u

#define T_ERRNO_SENTINEL 4243

/* Run a libaio call with errno set to a sentinel; assert errno survived. */
#define T_CALL(expr) __extension__({					\
	errno = T_ERRNO_SENTINEL;					\
	__typeof__(expr) t_r_ = (expr);					\
	int t_e_ = errno;						\
	cr_assert_eq(t_e_, T_ERRNO_SENTINEL, "%s changed errno to %d",	\
		     #expr, t_e_);					\
	t_r_;								\
})

#define T_EXPECT(expr, want) do {					\
	long long t_got_ = (long long)T_CALL(expr);			\
	long long t_want_ = (long long)(want);				\
	cr_assert_eq(t_got_, t_want_, "%s = %lld (%s), want %lld (%s)",	\
		     #expr, t_got_, t_got_ < 0 ? strerror((int)-t_got_) : "",	\
		     t_want_, t_want_ < 0 ? strerror((int)-t_want_) : "");	\
} while (0)

/* The end of a test on ctx and fd: io_destroy(ctx) must succeed; fd is closed. */
#define T_DONE(ctx, fd) do {						\
	T_EXPECT(io_destroy(ctx), 0);					\
	close(fd);							\
} while (0)

/* The same for a test on ctx and a pipe or socket pair p: both ends closed. */
#define T_DONE_PAIR(ctx, p) do {					\
	T_EXPECT(io_destroy(ctx), 0);					\
	t_close_pair(p);						\
} while (0)

/*
 * The fixture of a file whose tests share one context and one file: static
 * ctx (32 events) and fd (size bytes of seed's pattern), made by setup()
 * and checked and removed by teardown(), for .init/.fini.
 */
#define T_AIO_FIXTURE(size, seed)					\
	static io_context_t ctx;					\
	static int fd;							\
	static void setup(void)						\
	{								\
		t_setup();						\
		ctx = t_ctx(32);					\
		fd = t_file((size), (seed));				\
	}								\
	static void teardown(void)					\
	{								\
		T_DONE(ctx, fd);					\
		t_teardown();						\
	}

/* A bound for an event that must come; generous for a loaded machine. */
#define T_WAIT_SEC 30

/* Which libaio this process runs on. */
bool t_shim(void);
const char *t_mode(void);

void t_setup(void);
void t_teardown(void);
/* Close both ends of a pipe or socket pair. */
void t_close_pair(const int p[2]);
/* A batch of up to T_BATCH_MAX 4 KiB reads: buffers, iocbs, the list to
 * submit and room for their events. */
#define T_BATCH_MAX 16
struct t_batch {
	char buf[T_BATCH_MAX][4096];
	struct iocb cb[T_BATCH_MAX], *list[T_BATCH_MAX];
	struct io_event ev[T_BATCH_MAX];
};
/* Prepare b's first n reads of fd: read i at i * stride into b->buf[i],
 * its data 0x1000 + i, so that an event names its read. */
void t_batch_reads(struct t_batch *b, int n, int fd, long long stride);
/* Assert that b->ev[0..n) are events of b's first n reads (t_batch_reads
 * with stride, on a file of seed's pattern): data carried, all 4 KiB read,
 * res2 0, the file's bytes in the buffer. */
void t_batch_check(const struct t_batch *b, int n, long long stride, unsigned seed);

/* Install a handler on sig (with sa_flags) that counts its deliveries;
 * t_signals_handled() is the count, for the whole process. */
void t_count_signal(int sig, int sa_flags);
int t_signals_handled(void);
/* A thread that sends sig to the thread that started it every 20 ms until
 * t_poker_stop: whenever one lands, it lands while that thread waits or
 * just before. */
struct t_poker {
	pthread_t th, target;	/* set before the thread starts, then read-only */
	int sig;		/* the same */
	atomic_int stop;	/* set by t_poker_stop, polled by the thread */
};
void t_poker_start(struct t_poker *p, int sig);
void t_poker_stop(struct t_poker *p);
/* Pages of [off, off+len) in the page cache (cachestat, or mincore). */
uint64_t t_cached_pages(int fd, uint64_t off, uint64_t len);


io_context_t t_ctx(int nr);
int t_submit1(io_context_t ctx, struct iocb *cb);
/* Reap exactly n events (asserting they come within T_WAIT_SEC). */
void t_reap(io_context_t ctx, long n, struct io_event *ev);
/* The event of one iocb: submit it, reap it, return res. */
long t_do(io_context_t ctx, struct iocb *cb);

/* io_getevents where the real libaio cannot be trusted with the context:
 * libaio 0.3.113 reads ring->magic through io_context_t before its
 * syscall, which faults on a destroyed or forked-away (unmapped) ring. On
 * the kernel, ask the syscall; with the shim, the libaio entry point. */
long t_getevents_any(io_context_t ctx, long min_nr, long nr, struct io_event *ev,
		     struct timespec *ts);

/*
 * T_AIO_SYSCALL: the same tests through syscall(2). Built a second time
 * with it (tests/shim/meson.build), every io_setup, io_destroy, io_submit,
 * io_getevents, io_cancel and io_pgetevents of a test (and of these
 * helpers) is syscall(__NR_io_*, ...) instead of libaio's function: on the
 * kernel, its AIO system calls; with the shim preloaded, the drop-in's
 * syscall(). Each wrapper asserts syscall(2)'s convention (-1 and errno on
 * an error, errno untouched otherwise) and returns libaio's (-errno),
 * errno as the caller had it, so the tests' expectations stay the same.
 */
#ifdef T_AIO_SYSCALL
int t_sys_setup(int nr_events, io_context_t *ctxp);
int t_sys_destroy(io_context_t ctx);
int t_sys_submit(io_context_t ctx, long nr, struct iocb *ios[]);
int t_sys_getevents(io_context_t ctx, long min_nr, long nr, struct io_event *events,
		    struct timespec *timeout);
int t_sys_pgetevents(io_context_t ctx, long min_nr, long nr, struct io_event *events,
		     struct timespec *timeout, sigset_t *sigmask);
int t_sys_cancel(io_context_t ctx, struct iocb *iocb, struct io_event *evt);
#define io_setup t_sys_setup
#define io_destroy t_sys_destroy
#define io_submit t_sys_submit
#define io_getevents t_sys_getevents
#define io_pgetevents t_sys_pgetevents
#define io_cancel t_sys_cancel
#endif

/* Stop the test here when the rule is the shim's alone. */
#define T_SHIM_ONLY(why) do {						\
	if (!t_shim())							\
		cr_skip_test("shim only: %s", why);			\
} while (0)

#endif /* T_AIO_H */

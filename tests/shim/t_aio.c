/* SPDX-License-Identifier: MIT */
#include "t_aio.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

const char *t_mode(void)
{
	const char *m = getenv("T_AIO_MODE");

	return m ? m : "kernel";
}

/* Where io_submit really comes from, so a broken preload cannot pass for
 * the shim (nor the shim for the kernel). */
static const char *io_submit_origin(void)
{
	Dl_info info;
	void *sym = dlsym(RTLD_DEFAULT, "io_submit");

	if (!sym || !dladdr(sym, &info) || !info.dli_fname)
		return "?";
	return info.dli_fname;
}

#ifdef T_AIO_SYSCALL
/* Where syscall@GLIBC_2.2.5 comes from: the shim's (it serves the io_*
 * numbers) or libc's. */
static const char *syscall_origin(void)
{
	Dl_info info;
	void *sym = dlvsym(RTLD_DEFAULT, "syscall", "GLIBC_2.2.5");

	if (!sym || !dladdr(sym, &info) || !info.dli_fname)
		return "?";
	return info.dli_fname;
}

#endif

bool t_shim(void)
{
	return strcmp(t_mode(), "kernel") != 0;
}

void t_setup(void)
{
	const char *origin = io_submit_origin();
	bool ours = strstr(origin, "fsaio") || strstr(origin, "/dropin/libaio/");

	cr_assert_eq(ours, t_shim(), "T_AIO_MODE=%s but io_submit comes from %s", t_mode(), origin);
#ifdef T_AIO_SYSCALL
	origin = syscall_origin();
	ours = strstr(origin, "fsaio") || strstr(origin, "/dropin/libaio/");
	cr_assert_eq(ours, t_shim(), "T_AIO_MODE=%s but syscall comes from %s", t_mode(), origin);
#endif
	t_files_setup("shim-test");
}

void t_teardown(void)
{
	t_files_teardown();
}

void t_close_pair(const int p[2])
{
	close(p[0]);
	close(p[1]);
}

void t_batch_reads(struct t_batch *b, int n, int fd, long long stride)
{
	cr_assert_leq(n, T_BATCH_MAX);
	for (int i = 0; i < n; i++) {
		io_prep_pread(&b->cb[i], fd, b->buf[i], 4096, i * stride);
		b->cb[i].data = (void *)(uintptr_t)(0x1000 + i);
		b->list[i] = &b->cb[i];
	}
}

void t_batch_check(const struct t_batch *b, int n, long long stride, unsigned seed)
{
	for (int i = 0; i < n; i++) {
		const struct io_event *ev = &b->ev[i];
		long k = (struct iocb *)ev->obj - b->cb;

		cr_assert(k >= 0 && k < n, "event %d: obj %p is none of the %d reads", i,
			  (void *)ev->obj, n);
		cr_assert_eq((uintptr_t)ev->data, 0x1000 + (uintptr_t)k, "read %ld: data %p", k,
			     ev->data);
		cr_assert_eq(ev->res, 4096, "read %ld: res %ld", k, (long)ev->res);
		cr_assert_eq(ev->res2, 0, "read %ld: res2 %ld", k, (long)ev->res2);
		t_check(b->buf[k], 4096, (uint64_t)(k * stride), seed);
	}
}

/* Deliveries of the signals t_count_signal installed: atomic, as it is
 * bumped in a handler. */
static atomic_int signals_handled;

static void count_signal(int sig)
{
	(void)sig;
	atomic_fetch_add(&signals_handled, 1);
}

void t_count_signal(int sig, int sa_flags)
{
	struct sigaction sa = { .sa_handler = count_signal, .sa_flags = sa_flags };

	sigemptyset(&sa.sa_mask);
	cr_assert_eq(sigaction(sig, &sa, NULL), 0);
}

int t_signals_handled(void)
{
	return atomic_load(&signals_handled);
}

static void *poker_main(void *arg)
{
	struct t_poker *p = arg;

	while (!atomic_load(&p->stop)) {
		pthread_kill(p->target, p->sig);
		usleep(20000);
	}
	return NULL;
}

void t_poker_start(struct t_poker *p, int sig)
{
	p->target = pthread_self();
	p->sig = sig;
	atomic_init(&p->stop, 0);
	cr_assert_eq(pthread_create(&p->th, NULL, poker_main, p), 0);
}

void t_poker_stop(struct t_poker *p)
{
	atomic_store(&p->stop, 1);
	pthread_join(p->th, NULL);
}

#ifndef SYS_cachestat
#define SYS_cachestat 451
#endif

uint64_t t_cached_pages(int fd, uint64_t off, uint64_t len)
{
	struct { uint64_t off, len; } range = { off, len };
	struct { uint64_t cache, dirty, writeback, evicted, recently_evicted; } cs;
	long page = sysconf(_SC_PAGESIZE);
	unsigned char *vec;
	uint64_t n = 0, start = off / (uint64_t)page * (uint64_t)page;
	void *m;

	if (syscall(SYS_cachestat, fd, &range, &cs, 0) == 0)
		return cs.cache;
	m = mmap(NULL, off + len - start, PROT_READ, MAP_SHARED, fd, (off_t)start);
	cr_assert_neq(m, MAP_FAILED);
	vec = calloc((off + len - start + (uint64_t)page - 1) / (uint64_t)page, 1);
	cr_assert_eq(mincore(m, off + len - start, vec), 0);
	for (uint64_t i = 0; i < (off + len - start + (uint64_t)page - 1) / (uint64_t)page; i++)
		n += vec[i] & 1;
	free(vec);
	munmap(m, off + len - start);
	return n;
}

io_context_t t_ctx(int nr)
{
	io_context_t ctx = 0;

	T_EXPECT(io_setup(nr, &ctx), 0);
	cr_assert_not_null(ctx);
	return ctx;
}

int t_submit1(io_context_t ctx, struct iocb *cb)
{
	struct iocb *list[1] = { cb };

	return io_submit(ctx, 1, list);
}

void t_reap(io_context_t ctx, long n, struct io_event *ev)
{
	long got = 0;

	while (got < n) {
		struct timespec ts = { T_WAIT_SEC, 0 };
		int r = T_CALL(io_getevents(ctx, 1, n - got, ev + got, &ts));

		cr_assert_gt(r, 0, "io_getevents: %d with %ld of %ld events reaped", r, got, n);
		got += r;
	}
}

long t_do(io_context_t ctx, struct iocb *cb)
{
	struct io_event ev;

	T_EXPECT(t_submit1(ctx, cb), 1);
	t_reap(ctx, 1, &ev);
	cr_assert_eq((void *)ev.obj, (void *)cb);
	return (long)ev.res;
}

#ifdef T_AIO_SYSCALL
/* syscall(2)'s convention checked, libaio's returned: see t_aio.h. */
static long sys_call(long nr, long a, long b, long c, long d, long e, long f)
{
	int saved = errno;
	long r;

	errno = 0;
	r = syscall(nr, a, b, c, d, e, f);
	if (r == -1) {
		cr_assert_neq(errno, 0, "syscall(%ld) = -1 without errno", nr);
		r = -errno;
	} else {
		cr_assert_eq(errno, 0, "syscall(%ld) = %ld changed errno to %d", nr, r, errno);
		cr_assert_geq(r, 0, "syscall(%ld) = %ld", nr, r);
	}
	errno = saved;
	return r;
}

#define SYS(nr, a, b, c, d, e, f) \
	(int)sys_call(nr, (long)(a), (long)(b), (long)(c), (long)(d), (long)(e), (long)(f))

int t_sys_setup(int nr_events, io_context_t *ctxp)
{
	return SYS(SYS_io_setup, (unsigned)nr_events, ctxp, 0, 0, 0, 0);
}

int t_sys_destroy(io_context_t ctx)
{
	return SYS(SYS_io_destroy, ctx, 0, 0, 0, 0, 0);
}

int t_sys_submit(io_context_t ctx, long nr, struct iocb *ios[])
{
	return SYS(SYS_io_submit, ctx, nr, ios, 0, 0, 0);
}

int t_sys_getevents(io_context_t ctx, long min_nr, long nr, struct io_event *events,
		    struct timespec *timeout)
{
	return SYS(SYS_io_getevents, ctx, min_nr, nr, events, timeout, 0);
}

/* As libaio builds the kernel's struct __aio_sigset. */
int t_sys_pgetevents(io_context_t ctx, long min_nr, long nr, struct io_event *events,
		     struct timespec *timeout, sigset_t *sigmask)
{
	struct { const sigset_t *sigmask; size_t sigsetsize; } ss = { sigmask, _NSIG / 8 };

	return SYS(SYS_io_pgetevents, ctx, min_nr, nr, events, timeout, &ss);
}

int t_sys_cancel(io_context_t ctx, struct iocb *iocb, struct io_event *evt)
{
	return SYS(SYS_io_cancel, ctx, iocb, evt, 0, 0, 0);
}
#endif

long t_getevents_any(io_context_t ctx, long min_nr, long nr, struct io_event *ev,
		     struct timespec *ts)
{
	long r;

	if (t_shim())
		return io_getevents(ctx, min_nr, nr, ev, ts);
	int saved = errno;

	r = syscall(SYS_io_getevents, ctx, min_nr, nr, ev, ts);
	if (r < 0)
		r = -errno;
	errno = saved;
	return r;
}

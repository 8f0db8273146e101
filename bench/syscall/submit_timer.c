/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: the time a program spends in syscall(__NR_io_submit, ...), for
 * programs that submit through syscall(2) (ioping -A, stress-ng --aiol)
 * and report no submit latency of their own. Preloaded first, ahead of
 * the libaio drop-in or of nothing (then libc's syscall() serves), it
 * times each io_submit made through syscall() with CLOCK_MONOTONIC and,
 * at exit, prints to stderr:
 *
 *   submit_timer: io_submit calls N p50_us X p99_us Y max_us Z
 *
 * Every other call is passed on untouched. The first 65536 calls of the
 * process are kept (a fixed array: no allocation on the path); several
 * threads submitting at once may lose a few samples, never corrupt one.
 * bench/syscall/ioping-submit.sh uses it. Not installed.
 */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>

#define MAX_SAMPLES 65536

typedef long (*syscall_fn)(long, ...);

static syscall_fn next_syscall;          /* set once by the constructor */
static uint64_t samples[MAX_SAMPLES];    /* ns; slot i written by whoever took i */
static _Atomic uint32_t taken;           /* slots handed out */

__attribute__((constructor)) static void init(void)
{
	next_syscall = (syscall_fn)dlsym(RTLD_NEXT, "syscall");
}

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

long syscall(long nr, ...)
{
	va_list ap;
	long a, b, c, d, e, f, r;
	uint64_t t0;
	uint32_t i;

	va_start(ap, nr);
	a = va_arg(ap, long);
	b = va_arg(ap, long);
	c = va_arg(ap, long);
	d = va_arg(ap, long);
	e = va_arg(ap, long);
	f = va_arg(ap, long);
	va_end(ap);
	if (!next_syscall)
		init();
	if (nr != SYS_io_submit)
		return next_syscall(nr, a, b, c, d, e, f);
	t0 = now_ns();
	r = next_syscall(nr, a, b, c, d, e, f);
	i = atomic_fetch_add_explicit(&taken, 1, memory_order_relaxed);
	if (i < MAX_SAMPLES)
		samples[i] = now_ns() - t0;
	return r;
}

static int cmp(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? -1 : a > b;
}

__attribute__((destructor)) static void report(void)
{
	uint32_t n = atomic_load(&taken);

	if (n > MAX_SAMPLES)
		n = MAX_SAMPLES;
	if (!n)
		return;
	qsort(samples, n, sizeof(samples[0]), cmp);
	fprintf(stderr, "submit_timer: io_submit calls %u p50_us %.1f p99_us %.1f max_us %.1f\n", n,
		(double)samples[n / 2] / 1e3, (double)samples[(uint64_t)n * 99 / 100] / 1e3,
		(double)samples[n - 1] / 1e3);
}

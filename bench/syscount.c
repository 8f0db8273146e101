/* SPDX-License-Identifier: MIT */
/*
 * fsaio-bench: the process's system calls, as the kernel counts them.
 *
 * DESIGN: one perf counter on the raw_syscalls:sys_enter tracepoint, opened
 * with inherit set while the process still has a single thread. Every
 * thread created afterwards (the driver's watchdog, a method's threads, the
 * engine's worker pool and completion thread) gets a child counter, and a
 * read() of this one returns its own count plus every child's, whether the
 * child is still running or has exited. Counting therefore covers the whole
 * process, like getrusage(RUSAGE_SELF) does for CPU time, and a run takes
 * the difference of two reads around its measured interval.
 *
 * The counter is optional: without a readable tracepoint id (tracefs not
 * mounted, not root) or when perf_event_open(2) is refused (paranoid
 * setting, no perf support, seccomp), or when another thread already exists,
 * nothing is counted and bench_syscount_why() says why. tracefs is never
 * mounted here.
 *
 * While the counter is open, the kernel takes the tracepoint's path on
 * every system call entry, which makes each call a little dearer: the cost
 * is paid per call, so it weighs most on methods that make one per I/O.
 */
#include "driver.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static int sc_fd = -1;
static char sc_why[160] = "not opened";

static const char *const id_paths[] = {
	"/sys/kernel/tracing/events/raw_syscalls/sys_enter/id",
	"/sys/kernel/debug/tracing/events/raw_syscalls/sys_enter/id",
};

/* The tracepoint's id, or -1 with why[] set. */
static long tracepoint_id(void)
{
	int e = ENOENT;
	for (unsigned i = 0; i < sizeof(id_paths) / sizeof(id_paths[0]); i++) {
		FILE *f = fopen(id_paths[i], "re");
		long id;
		if (!f) {
			if (i == 0 || errno != ENOENT)
				e = errno;
			continue;
		}
		int n = fscanf(f, "%ld", &id);
		fclose(f);
		if (n == 1 && id >= 0)
			return id;
		e = EINVAL;
	}
	snprintf(sc_why, sizeof(sc_why), "raw_syscalls/sys_enter/id under tracefs: %s", strerror(e));
	return -1;
}

/* Threads: in /proc/self/status, or 0 if it cannot be read. */
static unsigned thread_count(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[128];
	unsigned n = 0;
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Threads: %u", &n) == 1)
			break;
	fclose(f);
	return n;
}

void bench_syscount_skip(const char *why)
{
	snprintf(sc_why, sizeof(sc_why), "%s", why);
}

int bench_syscount_open(void)
{
	if (sc_fd >= 0)
		return 0;
	/* A thread that exists already would never be counted. */
	unsigned nt = thread_count();
	if (nt != 1) {
		snprintf(sc_why, sizeof(sc_why), "the process had %u threads when counting was to start", nt);
		return -1;
	}
	long id = tracepoint_id();
	if (id < 0)
		return -1;
	struct perf_event_attr a;
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_TRACEPOINT;
	a.config = (uint64_t)id;
	a.inherit = 1;
	long fd = syscall(SYS_perf_event_open, &a, 0 /* this process */, -1 /* any CPU */, -1,
			  PERF_FLAG_FD_CLOEXEC);
	if (fd < 0) {
		snprintf(sc_why, sizeof(sc_why), "perf_event_open(raw_syscalls:sys_enter): %s", strerror(errno));
		return -1;
	}
	sc_fd = (int)fd;
	sc_why[0] = 0;
	return 0;
}

bool bench_syscount_read(uint64_t *v)
{
	if (sc_fd < 0)
		return false;
	if (read(sc_fd, v, sizeof(*v)) != (ssize_t)sizeof(*v)) {
		snprintf(sc_why, sizeof(sc_why), "reading the counter: %s", strerror(errno));
		close(sc_fd);
		sc_fd = -1;
		return false;
	}
	return true;
}

void bench_syscount_close(void)
{
	if (sc_fd >= 0)
		close(sc_fd);
	sc_fd = -1;
}

const char *bench_syscount_why(void)
{
	return sc_why[0] ? sc_why : NULL;
}

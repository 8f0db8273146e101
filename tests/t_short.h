/* SPDX-License-Identifier: MIT */
/*
 * The short-read tests' helpers, shared by every suite: a CPU hog inside
 * the test process (threads that spin until stopped, so the test's own
 * thread is preempted, and the kernel sets need_resched on it, as on a busy
 * machine), and the comparisons of a read through the API under test with
 * the blocking call of the same request.
 */
#ifndef T_SHORT_H
#define T_SHORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Start n spinning threads (at most T_HOG_MAX); t_hog_stop() joins them.
 * 0, or -errno when a thread could not be started (none is left running). */
#define T_HOG_MAX 8
int t_hog_start(unsigned n);
void t_hog_stop(void);

/* What a buffer holds before a read. */
#define T_SHORT_FILL 0xa5

/* A read through the API under test: len bytes of fd into buf, as parts
 * iovecs (1: a plain read) at the file's position; its result (bytes or
 * -errno). */
typedef int64_t (*t_read_fn)(void *arg, int fd, char *buf, size_t len, int parts);

/* The blocking call of the same request: read(2), or readv(2) of parts. */
int64_t t_blocking_read(int fd, char *buf, size_t len, int parts);
/* path read rounds times at 16 MiB and six times as often at 1 MiB, by fn
 * and by read(2) in turn, with hog threads spinning: both give the full
 * count, and the same bytes (same_bytes) or new ones each. Every other
 * round is vectored when max_parts > 1. */
void t_short_memory_device(const char *path, bool same_bytes, int rounds, int max_parts,
			   t_read_fn fn, void *arg);
/* Two pipes (domain < 0) or stream socketpairs of domain, with 3000 bytes
 * ready in each: a read of 64 KiB by fn from one and by the blocking call
 * from the other give the same count and bytes. */
void t_short_twin_streams(int domain, int max_parts, t_read_fn fn, void *arg);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * A context's counters (fsaio_stats): relaxed atomics, each bumped where
 * its event happens. A part that counts is given a pointer to them (or
 * keeps its own and stats.c adds them up), never the whole context.
 */
#ifndef FSAIO_COUNTERS_H
#define FSAIO_COUNTERS_H

#include <stdatomic.h>
#include <stdint.h>

struct fsaio__counters {
	_Atomic uint64_t requests, completed_inline, partial_inline, retries;
	_Atomic uint64_t bytes_inline, bytes_worker, probe_calls, probe_cold, cancelled;
	/* readahead.c, uring.c */
	_Atomic uint64_t ra_calls, ra_bytes, stream_hits, uring_sqes, bytes_uring;
	/* uring.c, uring_doorbell.c: submitting enters; submit calls that
	 * left their SQEs for a later enter (not in fsaio_stats) */
	_Atomic uint64_t uring_enters, uring_held;
	/* getevents.c, cq.c, method_file.c, uring_reap.c */
	_Atomic uint64_t reaper_sleeps, reaper_wakeups, straight_to_ring;
	_Atomic uint64_t ring_reaped_caller, ring_reaped_thread;
	_Atomic uint64_t blocking_inline;       /* rw.c */
	/* rw_batch.c: io_submit calls that attempted several reads, the
	 * reads they attempted, batches done one by one for want of a
	 * kernel AIO context */
	_Atomic uint64_t batch_calls, batch_requests, batch_refused;
	_Atomic uint64_t pool_collected;
};

#define FSAIO__COUNT(st, field, n) \
	atomic_fetch_add_explicit(&(st)->field, (n), memory_order_relaxed)

#endif /* FSAIO_COUNTERS_H */

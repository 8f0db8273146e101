/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: the counters. Each is a relaxed atomic bumped where the event
 * happens; a snapshot is not atomic across counters (a request may be
 * counted as queued and not yet as retried), which is what callers of a
 * live statistics call expect.
 */
#include <errno.h>
#include <string.h>

#include "ctx.h"
#include "pool.h"
#include "req.h"
#include "usercopy.h"

/* The public struct keeps its size when counters take reserved room. */
_Static_assert(sizeof(struct fsaio_stats) == 32 * sizeof(uint64_t), "fsaio_stats size is ABI");

#define LOAD(f) atomic_load_explicit(&ctx->st.f, memory_order_relaxed)

/* Filled here, then copied to the caller's: -EFAULT where it cannot be
 * written. */
FSAIO__API int fsaio_get_stats(fsaio_ctx_t *ctx, struct fsaio_stats *out)
{
	struct fsaio_stats mine, *st = &mine;
	unsigned threads;
	uint64_t accepted;

	if (!fsaio__ctx_ok(ctx))
		return -EINVAL;
	if (!out)
		return -EFAULT;
	memset(st, 0, sizeof(*st));
	st->requests = LOAD(requests);
	st->completed_inline = LOAD(completed_inline);
	st->partial_inline = LOAD(partial_inline);
	st->retries = LOAD(retries);
	st->bytes_inline = LOAD(bytes_inline);
	st->bytes_worker = LOAD(bytes_worker);
	st->probe_calls = LOAD(probe_calls);
	st->probe_cold = LOAD(probe_cold);
	st->cancelled = LOAD(cancelled);
	st->readahead_calls = LOAD(ra_calls);
	st->prefetched_bytes = LOAD(ra_bytes);
	st->stream_hits = LOAD(stream_hits);
	st->uring_submissions = LOAD(uring_sqes);
	st->bytes_uring = LOAD(bytes_uring);
	st->reaper_sleeps = LOAD(reaper_sleeps);
	st->reaper_wakeups = LOAD(reaper_wakeups);
	st->straight_to_ring = LOAD(straight_to_ring);
	st->ring_reaped_caller = LOAD(ring_reaped_caller);
	st->ring_reaped_thread = LOAD(ring_reaped_thread);
	st->blocking_inline = LOAD(blocking_inline);
	st->batch_calls = LOAD(batch_calls);
	st->batch_requests = LOAD(batch_requests);
	st->batch_refused = LOAD(batch_refused);
	st->pool_collected = LOAD(pool_collected);
	st->pool_queue_len = fsaio__pool_snapshot(&ctx->pool, &threads, &accepted);
	st->queued = accepted;
	st->pool_threads = threads;
	return fsaio__copy_user(out, st, sizeof(*st));
}

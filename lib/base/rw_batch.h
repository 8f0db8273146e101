/* SPDX-License-Identifier: MIT */
/*
 * The first attempt of several reads in one system call (rw_batch.c): a
 * kernel AIO context of the engine's own, whose RWF_NOWAIT reads copy what
 * the page cache holds and answer -EAGAIN for the rest without waiting.
 */
#ifndef FSAIO_RW_BATCH_H
#define FSAIO_RW_BATCH_H

#include <pthread.h>
#include <stdint.h>

#include "counters.h"
#include "req.h"

/* The most reads one batch attempts, and the events its context holds. */
#define FSAIO__RW_BATCH_MAX 64
/* The largest remaining range a start reads (its scratch buffer's size). */
#define FSAIO__RW_BATCH_START_MAX (64u * 1024)

struct fsaio__rw_batch {
	/* One batch at a time: taken with trylock, so a submitter that finds
	 * it busy attempts its reads one by one and never waits. */
	pthread_mutex_t lock;
	/* lock: 0 until the first batch makes the context, then its
	 * aio_context_t, or RW_BATCH_NONE where the kernel refused one. */
	uint64_t id;
	/* lock: made at the first start, FSAIO__RW_BATCH_START_MAX bytes that
	 * starts read into and nobody reads. */
	void *scratch;
	struct fsaio__counters *st;     /* immutable after init */
};

void fsaio__rw_batch_init(struct fsaio__rw_batch *k, struct fsaio__counters *st);
void fsaio__rw_batch_fini(struct fsaio__rw_batch *k);   /* io_destroy */
void fsaio__rw_batch_forget(struct fsaio__rw_batch *k); /* forked child: not ours */
/*
 * Whether r's first attempt may be made in a batch: a read or write of a
 * file at a position, of bytes, nothing done yet, with no flag of the
 * caller's but a read's RWF_NOWAIT and RWF_DONTCACHE. What the method's own rules allow (the
 * fd's history, whether writes are done in the call) is the method's to
 * say.
 */
bool fsaio__rw_batchable(const struct fsaio_req *r);
/*
 * Attempt r[0..n) (each fsaio__rw_batchable) in one io_submit, in order:
 * for a read res[i] is what one preadv2(RWF_NOWAIT) of it would have
 * answered (bytes, 0 at EOF, -EAGAIN, -errno), for a write what one
 * blocking pwritev2 would have. Returns how many of the first ones have
 * their answer; 0 when none was made (busy, no context to be had, the
 * kernel refused the first): the caller attempts the rest one by one.
 */
unsigned fsaio__rw_batch_run(struct fsaio__rw_batch *k, struct fsaio_req *const *r, unsigned n,
			       int64_t *res);
/* The same for reads whose disk reads were started and may have landed
 * (the pool's collect): not counted as a call's first attempts. */
unsigned fsaio__rw_batch_again(struct fsaio__rw_batch *k, struct fsaio_req *const *r,
			       unsigned n, int64_t *res);

/*
 * Start the disk reads of r[0..n) (reads of a file at a position, each with
 * at most FSAIO__RW_BATCH_START_MAX bytes left) in one io_submit of
 * RWF_NOWAIT reads of their remaining ranges into the scratch buffer: a
 * miss starts the kernel's readahead of its range and answers without
 * waiting. The requests themselves are neither read nor changed beyond
 * their descriptors and ranges. Returns how many of the first ones were
 * submitted; 0 when none (busy, no context, the kernel refused the first):
 * the caller starts the rest another way.
 */
unsigned fsaio__rw_batch_start(struct fsaio__rw_batch *k, const struct fsaio_req *const *r,
			       unsigned n);

#endif /* FSAIO_RW_BATCH_H */

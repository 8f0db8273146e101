/* SPDX-License-Identifier: MIT */
/* The engine's own readahead (readahead.c). */
#ifndef FSAIO_READAHEAD_H
#define FSAIO_READAHEAD_H

#include <stdbool.h>

#include "counters.h"
#include "fdtable.h"
#include "req.h"

struct fsaio__job;
struct fsaio__ra;
struct fsaio__rw_batch;

/*
 * A context's readahead, embedded in it: the table, made on first use, and
 * what it is given: its counters and two hooks to the pool that runs its
 * prefetch jobs (wired by ctx.c, with arg).
 */
struct fsaio__readahead {
	/* NULL until the first read needs it, then set once by CAS (release;
	 * read with acquire) and kept until destroy; its own locks */
	struct fsaio__ra *_Atomic table;
	bool disabled;          /* immutable: FSAIO_CTX_NO_READAHEAD */
	struct fsaio__counters *st; /* immutable */
	struct fsaio__fdtable *fdt; /* immutable: the context's fd facts */
	/* immutable: queue a side job (fsaio__pool_job); whether every worker
	 * is busy, so a queued request waits */
	void (*queue_job)(void *arg, struct fsaio__job *job);
	bool (*pool_full)(void *arg);
	void *arg;              /* immutable */
};

void fsaio__ra_init(struct fsaio__readahead *ra, bool disabled, struct fsaio__counters *st,
		    struct fsaio__fdtable *fdt, void (*queue_job)(void *arg, struct fsaio__job *job),
		    bool (*pool_full)(void *arg), void *arg);
void fsaio__ra_fini(struct fsaio__readahead *ra);
/* In the submitter, before a buffered read's inline attempt: stream detection. */
void fsaio__stream_enter(struct fsaio__readahead *ra, struct fsaio_req *r, struct fsaio__fdinfo fi);
/* A stream read missed (before it is handed on): start or widen prefetch. */
void fsaio__stream_miss(struct fsaio__readahead *ra, struct fsaio_req *r);
/* A stream request completed inline (a hit): grows an existing window. */
void fsaio__stream_hit(struct fsaio__readahead *ra, struct fsaio_req *r);
/* A missed read the kernel has not seen waits for a busy pool: have a
 * worker start its readahead (in the submitter: records and queues). */
void fsaio__ra_upfront(struct fsaio__readahead *ra, struct fsaio_req *r);
/* Whether the disk reads of read miss r can be started up front (it is a
 * read with a remainder, and readahead is on): cheap, for the submitter. */
bool fsaio__ra_startable(struct fsaio__readahead *ra, const struct fsaio_req *r);
/* Start the disk reads of r's whole remainder now, on r's bound descriptor
 * (the pool's starter thread: it may wait for the device's queue). Whether
 * they are under way. */
bool fsaio__ra_start(struct fsaio__readahead *ra, const struct fsaio_req *r);
/* The same for r[0..n) at once, started[i] set for each: those whose range
 * fits a start batch (rw_batch.c) with one io_submit of k, the others (and
 * all where k cannot) one by one as fsaio__ra_start. */
void fsaio__ra_start_many(struct fsaio__readahead *ra, struct fsaio__rw_batch *k,
			  const struct fsaio_req *r, unsigned n, bool *started);

#endif /* FSAIO_READAHEAD_H */

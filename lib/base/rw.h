/* SPDX-License-Identifier: MIT */
/* One request's I/O (rw.c). */
#ifndef FSAIO_RW_H
#define FSAIO_RW_H

#include <sys/uio.h>

#include "counters.h"
#include "req.h"

/* The iovecs of what remains after req->done_; returns the count,
 * fills *out (pointing into tmp when a copy was needed); at most cap entries. */
int fsaio__iov_rest(const struct fsaio_req *r, struct iovec *tmp, int cap,
		    const struct iovec **out);
/* One preadv2/pwritev2 of the remainder; returns bytes or -errno. */
ssize_t fsaio__rw_once(const struct fsaio_req *r, struct iovec *tmp, int cap, int flags);
/* Blocking: run the remainder to completion, EOF or error; returns the event
 * res. here: called outside the worker pool (counted as blocking_inline,
 * not as a worker's retries). */
int64_t fsaio__rw_blocking(struct fsaio__counters *st, struct fsaio_req *r, bool here);
/* Whatever the kind of file, with ordinary blocking calls: fsync/fdatasync,
 * poll(2), or fsaio__rw_blocking. */
int64_t fsaio__retry_blocking(struct fsaio__counters *st, struct fsaio_req *r, bool here);
/* Bind r to its file before it leaves the submitter: 0, or -errno (no
 * descriptor left) and r is unchanged. Idempotent. */
int fsaio__bind(struct fsaio_req *r);
/* Undo fsaio__bind for a request refused at submit. */
void fsaio__unbind(struct fsaio_req *r);

#endif /* FSAIO_RW_H */

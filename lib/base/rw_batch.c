/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: several reads' first attempt in one system call.
 *
 * Each read's first attempt is a preadv2(RWF_NOWAIT); a submit call that
 * brings many pays one system call each. The kernel's AIO does the same
 * attempt for a whole array in one io_submit: with RWF_NOWAIT a buffered
 * read copies what the page cache holds and completes at once, in the
 * call, with the count a preadv2 would return, or -EAGAIN without waiting
 * for the disk. Its events are then read from the context's completion
 * ring in memory, with no further system call. A write that its context
 * does inside the submit call anyway (FSAIO_CTX_INLINE_WRITES) goes in the
 * same array without RWF_NOWAIT: a buffered write is done inside
 * io_submit, blocking where it must, as one pwritev2 would be, and the
 * array keeps the call's order. Kernel AIO is allowed where
 * io_uring is refused (container seccomp profiles allow io_*), so this one
 * way serves every backend; io_uring's batch was measured no cheaper
 * (docs/design-notes.md).
 *
 * The context is made on the first batch, one per engine context, with
 * FSAIO__RW_BATCH_MAX events: it takes that many (the kernel rounds up) of
 * the system's aio-max-nr. Where io_setup is refused (seccomp, aio-max-nr
 * used up), every batch is attempted one by one and counted
 * (batch_refused).
 *
 * The same call starts disk reads (fsaio__rw_batch_start): a buffered
 * read's RWF_NOWAIT miss starts the kernel's readahead of the missed range
 * before it answers -EAGAIN, as io_uring's first attempt does, so one
 * io_submit starts a whole list of misses where readahead(2) takes one
 * call each, and the block layer sends them to the device as one plugged
 * batch. Those reads go to a scratch buffer of the context's: what a read
 * copies is thrown away, the requests' own buffers are never touched.
 */
#include <errno.h>
#include <linux/aio_abi.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

#include "rawsys.h"
#include "rw_batch.h"

#define RW_BATCH_NONE UINT64_MAX
/* Whether events are read from the ring in memory. Not under the thread
 * sanitizer, which sees neither the kernel's writes there nor the unmapping
 * of a destroyed context's ring, whose address a later one may reuse:
 * io_getevents brings the same events. */
#if defined(__SANITIZE_THREAD__)
#define READ_RING 0
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define READ_RING 0
#endif
#endif
#ifndef READ_RING
#define READ_RING 1
#endif

/* res[] of a request whose event has not come (yet). */
#define NO_ANSWER INT64_MIN

/* The head of the completion ring the kernel maps at the context's id
 * (fs/aio.c's struct aio_ring); its events follow the header. */
struct kaio_ring {
	unsigned id, nr, head, tail;
	unsigned magic, compat_features, incompat_features, header_length;
	struct io_event events[];
};
#define KAIO_RING_MAGIC 0xa10a10a1u

void fsaio__rw_batch_init(struct fsaio__rw_batch *k, struct fsaio__counters *st)
{
	pthread_mutex_init(&k->lock, NULL);
	k->id = 0;
	k->scratch = NULL;
	k->st = st;
}

void fsaio__rw_batch_fini(struct fsaio__rw_batch *k)
{
	if (k->id && k->id != RW_BATCH_NONE)
		(void)fsaio__raw6(SYS_io_destroy, (long)k->id, 0, 0, 0, 0, 0);
	free(k->scratch);
	pthread_mutex_destroy(&k->lock);
}

void fsaio__rw_batch_forget(struct fsaio__rw_batch *k)
{
	/* A child does not inherit its parent's AIO contexts. */
	k->id = 0;
	free(k->scratch);
	k->scratch = NULL;
}

/* A read may carry RWF_DONTCACHE, which fill() passes on with its
 * RWF_NOWAIT, and an I/O priority, which it need not: a NOWAIT attempt
 * copies from the page cache and waits for no device. A write carries no
 * flag: fill() makes it without. */
bool fsaio__rw_batchable(const struct fsaio_req *r)
{
	return fsaio__is_rw(r) && !fsaio__is_stream(r) && r->offset >= 0 && fsaio__total(r) &&
	       !r->done_ &&
	       !(r->rw_flags & ~(fsaio__is_write(r) ? 0 : RWF_NOWAIT | RWF_DONTCACHE));
}

/* The context, made on first use: false where the kernel refuses one.
 * Under lock. */
static bool have_context(struct fsaio__rw_batch *k)
{
	aio_context_t id = 0;

	if (k->id == RW_BATCH_NONE)
		return false;
	if (k->id)
		return true;
	if (fsaio__raw6(SYS_io_setup, FSAIO__RW_BATCH_MAX, (long)&id, 0, 0, 0, 0) < 0) {
		k->id = RW_BATCH_NONE;
		return false;
	}
	k->id = (uint64_t)id;
	return true;
}

/* A start's read of r: its remaining range into the scratch buffer. */
static void fill_start(struct iocb *cb, const struct fsaio_req *r, unsigned i, void *scratch)
{
	memset(cb, 0, sizeof(*cb));
	cb->aio_data = i;
	cb->aio_fildes = (uint32_t)fsaio__fd(r);
	cb->aio_offset = r->offset + (int64_t)r->done_;
	cb->aio_nbytes = fsaio__total(r) - r->done_;
	cb->aio_buf = (uint64_t)(uintptr_t)scratch;
	cb->aio_lio_opcode = IOCB_CMD_PREAD;
	cb->aio_rw_flags = RWF_NOWAIT;
}

static void fill(struct iocb *cb, const struct fsaio_req *r, unsigned i)
{
	memset(cb, 0, sizeof(*cb));
	cb->aio_data = i;
	cb->aio_fildes = (uint32_t)fsaio__fd(r);
	cb->aio_offset = r->offset;
	cb->aio_nbytes = r->len;
	cb->aio_buf = (uint64_t)(uintptr_t)(fsaio__is_vectored(r) ? (const void *)r->iov : r->buf);
	switch (r->opcode) {
	case FSAIO_OP_PREAD:
		cb->aio_lio_opcode = IOCB_CMD_PREAD;
		break;
	case FSAIO_OP_PREADV:
		cb->aio_lio_opcode = IOCB_CMD_PREADV;
		break;
	case FSAIO_OP_PWRITE:
		cb->aio_lio_opcode = IOCB_CMD_PWRITE;
		break;
	default:
		cb->aio_lio_opcode = IOCB_CMD_PWRITEV;
		break;
	}
	/* A read's first attempt never waits (with the caller's RWF_DONTCACHE,
	 * so a hit does not keep pages a miss would drop); a write is done
	 * whole. */
	cb->aio_rw_flags = fsaio__is_write(r) ? 0 : (int)(r->rw_flags | RWF_NOWAIT);
}

/* Take the events there are from the ring in memory: how many. */
static unsigned take_ring(struct kaio_ring *ring, int64_t *res, unsigned n)
{
	unsigned head = ring->head, got = 0;
	unsigned tail = __atomic_load_n(&ring->tail, __ATOMIC_ACQUIRE);

	while (head != tail) {
		const struct io_event *ev = &ring->events[head];

		if (ev->data < n) {
			res[ev->data] = ev->res;
			got++;
		}
		head = (head + 1) % ring->nr;
	}
	__atomic_store_n(&ring->head, head, __ATOMIC_RELEASE);
	return got;
}

/* Wait for the events the ring did not have yet (a file whose NOWAIT
 * read the kernel queues instead of answering in the call): how many. */
static unsigned take_waited(uint64_t id, int64_t *res, unsigned n, unsigned want)
{
	struct io_event evs[FSAIO__RW_BATCH_MAX];
	unsigned got = 0;

	while (got < want) {
		long m = fsaio__raw6(SYS_io_getevents, (long)id, (long)(want - got), (long)(want - got),
				     (long)evs, 0, 0);

		if (m == -EINTR)
			continue;
		if (m <= 0)
			break;
		for (long i = 0; i < m; i++) {
			if (evs[i].data < n)
				res[evs[i].data] = evs[i].res;
		}
		got += (unsigned)m;
	}
	return got;
}

/* One io_submit of r[0..n): how many answered; *refused (if given) when
 * the kernel gives no AIO context. A start (start true) reads each one's remaining
 * range into the scratch buffer with RWF_NOWAIT, and may be of one. */
static unsigned batch(struct fsaio__rw_batch *k, const struct fsaio_req *const *r, unsigned n,
		      int64_t *res, bool *refused, bool start)
{
	struct iocb cbs[FSAIO__RW_BATCH_MAX], *ptrs[FSAIO__RW_BATCH_MAX];
	struct kaio_ring *ring;
	unsigned got;
	long m;

	if (n > FSAIO__RW_BATCH_MAX)
		n = FSAIO__RW_BATCH_MAX;
	if (n < (start ? 1u : 2u) || pthread_mutex_trylock(&k->lock))
		return 0;
	if (!have_context(k)) {
		pthread_mutex_unlock(&k->lock);
		if (refused)
			*refused = true;
		return 0;
	}
	if (start && !k->scratch && !(k->scratch = malloc(FSAIO__RW_BATCH_START_MAX))) {
		pthread_mutex_unlock(&k->lock);
		return 0;
	}
	for (unsigned i = 0; i < n; i++) {
		if (start)
			fill_start(&cbs[i], r[i], i, k->scratch);
		else
			fill(&cbs[i], r[i], i);
		ptrs[i] = &cbs[i];
	}
	do
		m = fsaio__raw6(SYS_io_submit, (long)k->id, (long)n, (long)ptrs, 0, 0, 0);
	while (m == -EINTR);
	if (m <= 0) {
		pthread_mutex_unlock(&k->lock);
		return 0;
	}
	ring = (struct kaio_ring *)(uintptr_t)k->id;
	got = 0;
	for (long i = 0; i < m; i++)
		res[i] = NO_ANSWER;
	if (READ_RING && ring->magic == KAIO_RING_MAGIC && !ring->incompat_features)
		got = take_ring(ring, res, (unsigned)m);
	if (got < (unsigned)m)
		got += take_waited(k->id, res, (unsigned)m, (unsigned)m - got);
	if (got < (unsigned)m) {
		/* Not every answer came (the wait failed), and the context
		 * goes, its stray events with it (io_destroy waits for them);
		 * the next batch makes another. A read without its answer is
		 * a miss: the miss path reads it again, bound to its file. A
		 * write may have been done: it is never done twice, and ends
		 * -EIO. */
		for (long i = 0; i < m; i++)
			if (res[i] == NO_ANSWER)
				res[i] = fsaio__is_write(r[i]) ? -EIO : -EAGAIN;
		(void)fsaio__raw6(SYS_io_destroy, (long)k->id, 0, 0, 0, 0, 0);
		k->id = 0;
	}
	pthread_mutex_unlock(&k->lock);
	return (unsigned)m;
}

unsigned fsaio__rw_batch_run(struct fsaio__rw_batch *k, struct fsaio_req *const *r, unsigned n,
			       int64_t *res)
{
	bool refused = false;
	unsigned m = batch(k, (const struct fsaio_req *const *)r, n, res, &refused, false);

	if (refused)
		FSAIO__COUNT(k->st, batch_refused, 1);
	if (m) {
		FSAIO__COUNT(k->st, batch_calls, 1);
		FSAIO__COUNT(k->st, batch_requests, (uint64_t)m);
	}
	return m;
}

unsigned fsaio__rw_batch_again(struct fsaio__rw_batch *k, struct fsaio_req *const *r,
			       unsigned n, int64_t *res)
{
	return batch(k, (const struct fsaio_req *const *)r, n, res, NULL, false);
}

unsigned fsaio__rw_batch_start(struct fsaio__rw_batch *k, const struct fsaio_req *const *r,
			       unsigned n)
{
	int64_t res[FSAIO__RW_BATCH_MAX];

	return batch(k, r, n, res, NULL, true);
}

/* SPDX-License-Identifier: MIT */
/*
 * libfsaio-libaio-floor.so: the least a libaio can do for reads the page
 * cache holds, as the floor of the libaio drop-in's hot path under a libaio
 * program such as fio's libaio engine. io_submit reads each IOCB_CMD_PREAD
 * inline with pread(2) and keeps its event; io_getevents hands the kept
 * events back without a system call. Nothing else: no other opcode, no
 * RESFD, no waiting (a call that would wait returns what there is), no
 * checks. A measuring stick for cached reads (bench/README.md), not a
 * libaio:
 *
 *   LD_PRELOAD=build/bench/libfsaio-libaio-floor.so fio ... --ioengine=libaio
 *
 * Built with FLOOR_CONTRACT (libfsaio-libaio-contract-floor.so), it also
 * pays what any libaio that keeps the kernel's contract for a cached read
 * must: the read may not block (preadv2 with RWF_NOWAIT, as a raw system
 * call: io_submit is no cancellation point), and threads share a context
 * (a slot taken with an atomic before the read, as the kernel takes it;
 * events kept and taken under the context's lock; a publish moves a futex
 * word and looks for reapers asleep on it). Still no other opcode,
 * no miss carried anywhere (a miss is read there and then), no reaper
 * that sleeps, no context lookup.
 */
#include <errno.h>
#include <libaio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>
#ifdef FLOOR_CONTRACT
#include <linux/futex.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#endif

/* A context: the events of completed requests not yet taken, in order. */
struct floor_ctx {
#ifdef FLOOR_CONTRACT
	int avail;              /* atomic: slots free for requests (taken before the read) */
	pthread_mutex_t lock;   /* guards what follows */
	unsigned seq, sleepers; /* a futex word bumped per publish; reapers asleep on it */
#endif
	unsigned cap, head, count;
	struct io_event ev[];
};

#ifdef FLOOR_CONTRACT
#define LOCK(c) pthread_mutex_lock(&(c)->lock)
#define UNLOCK(c) pthread_mutex_unlock(&(c)->lock)

static ssize_t read_nowait(int fd, void *buf, size_t len, long long off)
{
	struct iovec iov = { buf, len };
	long n = syscall(SYS_preadv2, fd, &iov, 1, (long)off, 0L, RWF_NOWAIT);

	/* A page the machine took back meanwhile: a floor for cached reads
	 * has nowhere to send a miss, so it reads it the blocking way. */
	if (n < 0 && errno == EAGAIN)
		n = syscall(SYS_pread64, fd, buf, len, (long)off);
	return n < 0 ? -errno : n;
}

/* A slot for one request, taken before its read as the kernel takes it:
 * false when the context is full. Reapers give slots back. */
static bool take_slot(struct floor_ctx *c)
{
	int v = __atomic_load_n(&c->avail, __ATOMIC_RELAXED);

	do {
		if (!v)
			return false;
	} while (!__atomic_compare_exchange_n(&c->avail, &v, v - 1, true, __ATOMIC_ACQUIRE,
					      __ATOMIC_RELAXED));
	return true;
}

static void give_slots(struct floor_ctx *c, long n)
{
	if (n)
		__atomic_fetch_add(&c->avail, (int)n, __ATOMIC_RELEASE);
}

/* An event was kept, lock held: move the futex word; true when reapers
 * sleep on it. */
static bool published(struct floor_ctx *c)
{
	bool wake = c->sleepers;

	__atomic_store_n(&c->seq, c->seq + 1, __ATOMIC_RELAXED);
	c->sleepers = 0;
	return wake;
}

static void wake_reapers(struct floor_ctx *c)
{
	syscall(SYS_futex, &c->seq, FUTEX_WAKE_PRIVATE, 1 << 30, NULL, NULL, 0);
}
#else
#define LOCK(c) ((void)0)
#define UNLOCK(c) ((void)0)

static ssize_t read_nowait(int fd, void *buf, size_t len, long long off)
{
	ssize_t n = pread(fd, buf, len, off);

	return n < 0 ? -errno : n;
}

/* One thread per context: what is kept is all that is taken. */
static bool take_slot(struct floor_ctx *c)
{
	return c->count < c->cap;
}

static void give_slots(struct floor_ctx *c, long n)
{
	(void)c;
	(void)n;
}

/* No one sleeps on a context here. */
static bool published(struct floor_ctx *c)
{
	(void)c;
	return false;
}

static void wake_reapers(struct floor_ctx *c)
{
	(void)c;
}
#endif

int io_setup(int nr, io_context_t *ctxp)
{
	struct floor_ctx *c;

	if (nr <= 0 || !ctxp)
		return -EINVAL;
	c = calloc(1, sizeof(*c) + (size_t)nr * sizeof(c->ev[0]));
	if (!c)
		return -ENOMEM;
	c->cap = (unsigned)nr;
#ifdef FLOOR_CONTRACT
	c->avail = nr;
	pthread_mutex_init(&c->lock, NULL);
#endif
	*ctxp = (io_context_t)c;
	return 0;
}

int io_queue_init(int maxevents, io_context_t *ctxp)
{
	return io_setup(maxevents, ctxp);
}

int io_destroy(io_context_t ctx)
{
	free(ctx);
	return 0;
}

int io_queue_release(io_context_t ctx)
{
	return io_destroy(ctx);
}

int io_submit(io_context_t ctx, long nr, struct iocb **iocbs)
{
	struct floor_ctx *c = (struct floor_ctx *)ctx;
	long i;

	for (i = 0; i < nr; i++) {
		struct iocb *cb = iocbs[i];
		struct io_event *ev;
		bool wake;
		ssize_t n;

		if (cb->aio_lio_opcode != IO_CMD_PREAD)
			return i ? (int)i : -EINVAL;
		if (!take_slot(c))
			return i ? (int)i : -EAGAIN;
		n = read_nowait(cb->aio_fildes, cb->u.c.buf, cb->u.c.nbytes, cb->u.c.offset);
		LOCK(c);
		ev = &c->ev[(c->head + c->count++) % c->cap];
		ev->data = cb->data;
		ev->obj = cb;
		ev->res = (unsigned long)n;
		ev->res2 = 0;
		wake = published(c);
		UNLOCK(c);
		if (wake)
			wake_reapers(c);
	}
	return (int)i;
}

int io_getevents(io_context_t ctx, long min_nr, long nr, struct io_event *events,
		 struct timespec *timeout)
{
	struct floor_ctx *c = (struct floor_ctx *)ctx;
	long n = 0;

	(void)min_nr;
	(void)timeout;
	LOCK(c);
	while (n < nr && c->count) {
		events[n++] = c->ev[c->head];
		c->head = (c->head + 1) % c->cap;
		c->count--;
	}
	UNLOCK(c);
	give_slots(c, n);
	return (int)n;
}

int io_cancel(io_context_t ctx, struct iocb *iocb, struct io_event *evt)
{
	(void)ctx;
	(void)iocb;
	(void)evt;
	return -EINVAL;
}

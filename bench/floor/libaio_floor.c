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
 */
#include <errno.h>
#include <libaio.h>
#include <stdlib.h>
#include <unistd.h>

/* A context: the events of completed requests not yet taken, in order. */
struct floor_ctx {
	unsigned cap, head, count;
	struct io_event ev[];
};

int io_setup(int nr, io_context_t *ctxp)
{
	struct floor_ctx *c;

	if (nr <= 0 || !ctxp)
		return -EINVAL;
	c = calloc(1, sizeof(*c) + (size_t)nr * sizeof(c->ev[0]));
	if (!c)
		return -ENOMEM;
	c->cap = (unsigned)nr;
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
		ssize_t n;

		if (cb->aio_lio_opcode != IO_CMD_PREAD)
			return i ? (int)i : -EINVAL;
		if (c->count == c->cap)
			return i ? (int)i : -EAGAIN;
		n = pread(cb->aio_fildes, cb->u.c.buf, cb->u.c.nbytes, cb->u.c.offset);
		ev = &c->ev[(c->head + c->count++) % c->cap];
		ev->data = cb->data;
		ev->obj = cb;
		ev->res = n < 0 ? (unsigned long)-errno : (unsigned long)n;
		ev->res2 = 0;
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
	while (n < nr && c->count) {
		events[n++] = c->ev[c->head];
		c->head = (c->head + 1) % c->cap;
		c->count--;
	}
	return (int)n;
}

int io_cancel(io_context_t ctx, struct iocb *iocb, struct io_event *evt)
{
	(void)ctx;
	(void)iocb;
	(void)evt;
	return -EINVAL;
}

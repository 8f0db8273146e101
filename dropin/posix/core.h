/* SPDX-License-Identifier: MIT */
/* core.c: requests in flight, their order on an fd, completion. */
#ifndef FSAIO_PX_CORE_H
#define FSAIO_PX_CORE_H

#include "px.h"

void px__queues_init(void);
void px__queues_fork_prepare(void);             /* fork handlers of the request queues */
void px__queues_fork_parent(void);
void px__queues_fork_child(void);
struct px_req *px__alloc(struct aiocb *cb, int kind, struct px_group *g, bool notify);
/* Accept r: link it on its fd and hand it to the engine (or hold it).
 * 0, or -EAGAIN when it could not be taken (status set in the aiocb). */
int px__submit(struct px_req *r);
/* Around the submits of one list (lio_listio): what its requests send to
 * the io_uring ring goes in at px__batch_end, in one system call; a list
 * of one entry (alone) may leave it held for a later call. */
void px__batch_begin(bool alone);
void px__batch_end(void);
/* Reads (aio_read's, or a list's) done at once, before a request is made,
 * when the page cache has them all, their attempts in one system call: bit
 * i set when cbs[i] is done, its status stored and notified; the others
 * are to be submitted. At most PX_NOW_MAX are looked at. */
#define PX_NOW_MAX 64
uint64_t px__reads_now(struct aiocb *const *cbs, unsigned n);
/* The engine contexts' completion callback. */
void px__complete(void *arg, const struct fsaio_event *ev);
void px__group_put(struct px_group *g);
/* Is cb a request in flight (submitted, not yet complete)? */
bool px__in_flight(const struct aiocb *cb);
/* aio_cancel's work on one fd (cb NULL: all): AIO_CANCELED, _NOTCANCELED,
 * _ALLDONE, or -EINVAL for an aiocb in progress that is no request. */
int px__cancel(int fd, struct aiocb *cb);

#endif /* FSAIO_PX_CORE_H */

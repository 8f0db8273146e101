/* SPDX-License-Identifier: MIT */
/* ring.c: the slots, the completion ring and waiting for it. */
#ifndef FSAIO_SHIM_RING_H
#define FSAIO_SHIM_RING_H

#include "shim.h"

/* The engine's delivery hook and completion callback (context.c gives
 * them to the engine). */
void shim__complete(void *arg, const struct fsaio_event *ev);
void shim__deliver(void *arg, const struct fsaio_event *ev, unsigned n);
long shim__getevents(struct shim_ctx *c, long min_nr, long nr, struct io_event *events,
		     const struct timespec *timeout, const sigset_t *sigmask);
/* Reserve up to n slots; how many. */
unsigned shim__take_slots(struct shim_ctx *c, unsigned n, struct shim_slot **out);
/* Give back n slots the engine never accepted, once what their decode
 * took is given back (submit.c). */
void shim__slots_release(struct shim_ctx *c, struct shim_slot **slots, unsigned n);

#endif /* FSAIO_SHIM_RING_H */

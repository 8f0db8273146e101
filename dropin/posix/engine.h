/* SPDX-License-Identifier: MIT */
/* engine.c: the drop-in's engine contexts. */
#ifndef FSAIO_PX_ENGINE_H
#define FSAIO_PX_ENGINE_H

#include "px.h"

enum { PX_PLAIN, PX_SIGNALLED, PX_NCTX };
/* Once, before any context is made: the completion callback every
 * context is made with (core.c's px__complete, given by start.c). */
void px__engine_init(void (*complete)(void *arg, const struct fsaio_event *ev));
void px__set_workers(unsigned n);               /* aio_init's aio_threads, before first use */
int px__ctx_kind(const struct px_req *r);       /* which context carries r (at its making) */
fsaio_ctx_t *px__engine(int kind);              /* made on first use; NULL if it cannot be */
fsaio_ctx_t *px__engine_now(int kind);          /* NULL until made */
void *px__engine_tag(int kind);                 /* the complete_arg of kind's context */
void px__engine_print_stats(void);              /* FSAIO_STATS at exit */
/* Fork handlers (start.c): ctx_lock is taken before the request queues'. */
void px__engine_fork_prepare(void);
void px__engine_fork_parent(void);
void px__engine_fork_child(void);

#endif /* FSAIO_PX_ENGINE_H */

/* SPDX-License-Identifier: MIT */
/* context.c: context lifetime, the registry of live contexts, and fork. */
#ifndef FSAIO_SHIM_CONTEXT_H
#define FSAIO_SHIM_CONTEXT_H

#include "hazard.h"
#include "shim.h"

/* shim__get finds a live context and holds it for the call (NULL:
 * unknown): in the thread's hazard record (*held) or, when *held is NULL,
 * counted in the entry; shim__put ends that. */
struct shim_ctx *shim__get(io_context_t id, struct shim_hazard **held);
void shim__put(struct shim_ctx *c, struct shim_hazard *held);
int shim__io_setup(int nr_events, io_context_t *ctxp);
int shim__io_destroy(io_context_t ctx);

#endif /* FSAIO_SHIM_CONTEXT_H */

/* SPDX-License-Identifier: MIT */
/* The process's fork generation (fork.c). */
#ifndef FSAIO_FORK_H
#define FSAIO_FORK_H

#include <stdatomic.h>
#include <stdbool.h>

#include "parts.h"

/* Bumped by the pthread_atfork child handler (registered by ctx.c). */
extern _Atomic unsigned fsaio__fork_gen;

/* Whether ctx belongs to this process (not a forked parent's). */
static inline bool fsaio__ctx_ok(const struct fsaio_ctx *ctx)
{
	return ctx && fsaio__parts_c(ctx)->fork_gen ==
		atomic_load_explicit(&fsaio__fork_gen, memory_order_relaxed);
}

#endif /* FSAIO_FORK_H */

/* SPDX-License-Identifier: MIT */
/* The process's fork generation (fork.c). */
#ifndef FSAIO_FORK_H
#define FSAIO_FORK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "parts.h"
#include "usercopy.h"

/* Bumped by the pthread_atfork child handler (registered by ctx.c). */
extern _Atomic unsigned fsaio__fork_gen;

/* parts.magic of a context from its creation until its destroy. */
#define FSAIO__CTX_MAGIC 0x6f696173u

/* Whether the caller's handle ctx is a context (of this process or, after
 * fork, of a parent's): its first words are read with the fault-safe copy,
 * so a handle that is not a context's memory is refused, never a crash
 * (freed memory that still holds a context's words is not told apart: a
 * handle must be live). *gen gets the context's fork generation. */
static inline bool fsaio__ctx_is(const struct fsaio_ctx *ctx, unsigned *gen)
{
	struct { unsigned gen; uint32_t magic; } w;

	_Static_assert(offsetof(struct fsaio__parts, magic) == sizeof(unsigned), "fork_gen, magic first");
	if (!ctx || fsaio__copy_user(&w, ctx, sizeof(w)) || w.magic != FSAIO__CTX_MAGIC)
		return false;
	*gen = w.gen;
	return true;
}

/* Whether ctx is a context of this process (not a forked parent's). */
static inline bool fsaio__ctx_ok(const struct fsaio_ctx *ctx)
{
	unsigned gen;

	return fsaio__ctx_is(ctx, &gen) &&
	       gen == atomic_load_explicit(&fsaio__fork_gen, memory_order_relaxed);
}

#endif /* FSAIO_FORK_H */

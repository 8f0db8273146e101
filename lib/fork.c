/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: the process's fork generation. A pthread_atfork child handler
 * (registered by ctx.c) bumps it; a context made in another generation is
 * the parent's, and every call on it but destroy answers -EINVAL.
 */
#include "ctx.h"

_Atomic unsigned fsaio__fork_gen;

bool fsaio__ctx_ok(const struct fsaio_ctx *ctx)
{
	return ctx && ctx->fork_gen ==
		atomic_load_explicit(&fsaio__fork_gen, memory_order_relaxed);
}

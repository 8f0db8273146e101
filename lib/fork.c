/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: the process's fork generation. A pthread_atfork child handler
 * (registered by ctx.c) bumps it; a context made in another generation is
 * the parent's, and every call on it but destroy answers -EINVAL
 * (fsaio__ctx_ok, fork.h).
 */
#include "fork.h"

_Atomic unsigned fsaio__fork_gen;

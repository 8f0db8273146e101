/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: the drop-in's process-wide start, once, at the first call that
 * needs it (api.c): the request queues' locks, the engine contexts'
 * completion callback (core.c's px__complete, handed down to engine.c),
 * the fork handlers and FSAIO_STATS at exit.
 *
 * fork(): the handlers take engine.c's ctx_lock, then the request queues'
 * locks (core.c), and give them back in the other order; the child
 * forgets the parent's requests, waiters and engine contexts.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "engine.h"
#include "start.h"
#include "wait.h"

static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static void fork_prepare(void)
{
	px__engine_fork_prepare();
	px__queues_fork_prepare();
}

static void fork_parent(void)
{
	px__queues_fork_parent();
	px__engine_fork_parent();
}

static void fork_child(void)
{
	px__queues_fork_child();
	px__wait_fork_child();
	px__engine_fork_child();
}

static void init_once_body(void)
{
	const char *s = getenv("FSAIO_STATS");

	px__queues_init();
	px__engine_init(px__complete);
	pthread_atfork(fork_prepare, fork_parent, fork_child);
	if (s && *s && strcmp(s, "0") != 0)
		atexit(px__engine_print_stats);
}

void px__init(void)
{
	pthread_once(&init_once, init_once_body);
}

/* SPDX-License-Identifier: MIT */
/* hazard.c: what a call holds while it runs, without a locked instruction. */
#ifndef FSAIO_SHIM_HAZARD_H
#define FSAIO_SHIM_HAZARD_H

#include <stdatomic.h>
#include <stdbool.h>

/* A thread's record of the registry entry its call uses. */
struct shim_hazard {
	_Atomic(const void *) held; /* the owner's: relaxed store, then a compiler
				     * barrier; cleared with release. Read by io_destroy */
	_Atomic bool taken;     /* claimed by CAS, given back at the thread's exit */
	struct shim_hazard *next; /* immutable once on the list */
} __attribute__((aligned(64)));

/* The calling thread's record, free for this call; NULL: count in refs. */
struct shim_hazard *shim__hazard_mine(void);
static inline void shim__hazard_set(struct shim_hazard *h, const void *p)
{
	atomic_store_explicit(&h->held, p, memory_order_relaxed);
	atomic_signal_fence(memory_order_seq_cst);
}
static inline void shim__hazard_clear(struct shim_hazard *h)
{
	atomic_store_explicit(&h->held, NULL, memory_order_release);
}
void shim__hazard_sync(void);           /* io_destroy, after clearing a key */
bool shim__hazard_names(const void *p); /* some call still holds p */
void shim__hazard_fork_child(void);

#endif /* FSAIO_SHIM_HAZARD_H */

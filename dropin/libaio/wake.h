/* SPDX-License-Identifier: MIT */
/* wake.c: waking a context's sleepers. */
#ifndef FSAIO_SHIM_WAKE_H
#define FSAIO_SHIM_WAKE_H

#include <stdbool.h>
#include "shim.h"

/* Wake every sleeper of c: after a publish, and when the context dies. */
void shim__wake(struct shim_ctx *c);
/* A sleeper that saw seq at seen marks the word before it sleeps: whether
 * to sleep (the count has not moved since), and the value to sleep on. */
bool shim__sleep_mark(struct shim_ctx *c, uint32_t seen, uint32_t *val);
/* Add 1 to an eventfd's counter, with cancellation disabled. */
void shim__efd_signal(int fd);

#endif /* FSAIO_SHIM_WAKE_H */

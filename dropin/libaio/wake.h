/* SPDX-License-Identifier: MIT */
/* wake.c: waking a context's sleepers. */
#ifndef FSAIO_SHIM_WAKE_H
#define FSAIO_SHIM_WAKE_H

#include "shim.h"

/* Wake every sleeper of c: after a publish, and when the context dies. */
void shim__wake(struct shim_ctx *c);
/* Add 1 to an eventfd's counter, with cancellation disabled. */
void shim__efd_signal(int fd);

#endif /* FSAIO_SHIM_WAKE_H */

/* SPDX-License-Identifier: MIT */
/* libaio.c: the entry points' bodies, for the compat forms and syscall.c
 * without going through the PLT. */
#ifndef FSAIO_SHIM_LIBAIO_H
#define FSAIO_SHIM_LIBAIO_H

#include "shim.h"

int shim__libaio_setup(int nr_events, io_context_t *ctxp);
int shim__libaio_destroy(io_context_t ctx);
int shim__libaio_submit(io_context_t ctx, long nr, struct iocb *ios[]);
int shim__libaio_pgetevents(io_context_t ctx, long min_nr, long nr, struct io_event *events,
			    struct timespec *timeout, const sigset_t *sigmask);
int shim__io_getevents(io_context_t ctx, long min_nr, long nr, struct io_event *events,
		       struct timespec *timeout);
int shim__io_cancel(io_context_t ctx, struct iocb *iocb, struct io_event *evt);

#endif /* FSAIO_SHIM_LIBAIO_H */

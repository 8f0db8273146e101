/* SPDX-License-Identifier: MIT */
/* submit.c: io_submit and io_cancel on a context the caller holds. */
#ifndef FSAIO_SHIM_SUBMIT_H
#define FSAIO_SHIM_SUBMIT_H

#include "shim.h"

long shim__submit(struct shim_ctx *c, long nr, struct iocb **ios);
int shim__cancel(struct shim_ctx *c, struct iocb *iocb);

#endif /* FSAIO_SHIM_SUBMIT_H */

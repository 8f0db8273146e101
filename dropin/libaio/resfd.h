/* SPDX-License-Identifier: MIT */
/* resfd.c: IOCB_FLAG_RESFD eventfds, held and signalled. */
#ifndef FSAIO_SHIM_RESFD_H
#define FSAIO_SHIM_RESFD_H

#include "shim.h"

int shim__resfd_take(struct shim_ctx *c, uint32_t fd, int *dup, struct shim_efd **entry);
void shim__resfd_drop(int dup, struct shim_efd *e);
void shim__resfd_signal(struct shim_ctx *c, int dup, struct shim_efd *e);
void shim__resfd_flush(void);           /* at the end of an engine batch */
void shim__resfd_init(struct shim_ctx *c);
void shim__resfd_fini(struct shim_ctx *c);

#endif /* FSAIO_SHIM_RESFD_H */

/* SPDX-License-Identifier: MIT */
/* start.c: the drop-in's process-wide start. */
#ifndef FSAIO_PX_START_H
#define FSAIO_PX_START_H

void px__init(void);                            /* once per process, idempotent */

#endif /* FSAIO_PX_START_H */

/* SPDX-License-Identifier: MIT */
/* A request's I/O priority worn by the thread doing its blocking I/O
 * (ioprio_thread.c). */
#ifndef FSAIO_IOPRIO_THREAD_H
#define FSAIO_IOPRIO_THREAD_H

#include <stdint.h>

/* Before a blocking call for a request of priority prio (fsaio_req.ioprio):
 * this thread takes it; 0 (none) leaves the thread as it is. */
void fsaio__ioprio_enter(uint16_t prio);
/* After it: this thread is back at its own priority. */
void fsaio__ioprio_leave(void);

#endif /* FSAIO_IOPRIO_THREAD_H */

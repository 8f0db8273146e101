/* SPDX-License-Identifier: MIT */
/* notify.c: a request's or a list's notification. */
#ifndef FSAIO_PX_NOTIFY_H
#define FSAIO_PX_NOTIFY_H

#include <signal.h>
#include <sys/types.h>

void px__notify(const struct sigevent *sev, pid_t pid);
/* Around a call into the engine: this thread's notifications are held
 * and sent by px__hold_end. */
void px__hold_begin(void);
void px__hold_end(void);

#endif /* FSAIO_PX_NOTIFY_H */

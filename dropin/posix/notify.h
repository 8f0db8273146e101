/* SPDX-License-Identifier: MIT */
/* notify.c: a request's or a list's notification. */
#ifndef FSAIO_PX_NOTIFY_H
#define FSAIO_PX_NOTIFY_H

#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>

/* Whether sev asks for a signal that is sent. A zeroed sigevent asks for
 * SIGEV_SIGNAL with signal 0, which delivers nothing (it only checks that
 * the process exists): such requests are plain ones, on the io_uring
 * context, with no system call at completion. */
static inline bool px__sev_signals(const struct sigevent *sev)
{
	return sev->sigev_notify == SIGEV_SIGNAL && sev->sigev_signo != 0;
}

void px__notify(const struct sigevent *sev, pid_t pid);
/* Around a call into the engine: this thread's notifications are held
 * and sent by px__hold_end. */
void px__hold_begin(void);
void px__hold_end(void);

#endif /* FSAIO_PX_NOTIFY_H */

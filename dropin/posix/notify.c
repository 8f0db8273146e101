/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: the notifications a completion sends (SIGEV_SIGNAL, SIGEV_THREAD),
 * and holding back those of requests completed inside a call into the
 * engine until it has returned. A leaf: it calls nothing of the drop-in's.
 * The held list is the calling thread's own.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "notify.h"

/* SIGEV_THREAD: the program's function, on a thread of its own. */
struct notify_call {
	void (*fn)(union sigval);
	union sigval value;
};

static void *notify_thread(void *arg)
{
	struct notify_call c = *(struct notify_call *)arg;
	sigset_t none;

	free(arg);
	/* Created from a thread that may block every signal (an engine
	 * worker): the function runs with none blocked, as glibc's does. */
	sigemptyset(&none);
	pthread_sigmask(SIG_SETMASK, &none, NULL);
	c.fn(c.value);
	return NULL;
}

/*
 * Notifications of requests completed inside the submitting call wait
 * until the engine has returned: a signal handler that runs at once in
 * this thread (and may siglongjmp away) must not find the engine midway.
 * held[] is this thread's; more than PX_HOLD at once are sent directly.
 */
#define PX_HOLD 8
static __thread struct held_note {
	struct sigevent sev;
	pid_t pid;
} held[PX_HOLD];
static __thread unsigned nheld;
static __thread bool holding;

void px__hold_begin(void)
{
	holding = true;
}

void px__hold_end(void)
{
	unsigned n = nheld;

	holding = false;
	nheld = 0;
	for (unsigned i = 0; i < n; i++)
		px__notify(&held[i].sev, held[i].pid);
}

void px__notify(const struct sigevent *sev, pid_t pid)
{
	int saved;

	/* Nothing to send: SIGEV_NONE, or a signal 0 (px__sev_signals). */
	if (sev->sigev_notify == SIGEV_NONE ||
	    (sev->sigev_notify == SIGEV_SIGNAL && !px__sev_signals(sev)))
		return;
	saved = errno;
	if (holding && nheld < PX_HOLD) {
		held[nheld].sev = *sev;
		held[nheld].pid = pid;
		nheld++;
		return;
	}

	if (px__sev_signals(sev)) {
		siginfo_t si;

		memset(&si, 0, sizeof(si));
		si.si_signo = sev->sigev_signo;
		si.si_code = SI_ASYNCIO;
		si.si_pid = pid;
		si.si_uid = getuid();
		si.si_value = sev->sigev_value;
		syscall(SYS_rt_sigqueueinfo, pid, sev->sigev_signo, &si);
	} else if (sev->sigev_notify == SIGEV_THREAD && sev->sigev_notify_function) {
		struct notify_call *c = malloc(sizeof(*c));
		pthread_attr_t dflt, *attr = sev->sigev_notify_attributes;
		pthread_t t;

		if (c) {
			c->fn = sev->sigev_notify_function;
			c->value = sev->sigev_value;
			if (!attr) {
				pthread_attr_init(&dflt);
				pthread_attr_setdetachstate(&dflt, PTHREAD_CREATE_DETACHED);
				attr = &dflt;
			}
			if (pthread_create(&t, attr, notify_thread, c) != 0)
				free(c);
			if (attr == &dflt)
				pthread_attr_destroy(&dflt);
		}
	}
	errno = saved;
}

/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: a request's I/O priority given to the thread that does its
 * blocking I/O.
 *
 * The kernel gives a buffered read's or write's device I/O the priority of
 * the thread that issues it (the bio takes its task's io_context ioprio),
 * so a thread that carries a prioritised request with blocking calls (a
 * pool worker, the pool's starter starting its readahead, a submitter that
 * runs a request itself) takes the request's priority with
 * ioprio_set(IOPRIO_WHO_PROCESS, 0: this thread alone) around the call and
 * goes back to its own after. Owns one thread-local record per thread: the
 * priority it runs at while it carries such a request, and its own to go
 * back to (read just before it moves, so a caller's thread that changed
 * its own meanwhile gets that back). A request without a priority, on a
 * thread at its own, costs no system call.
 *
 * Best effort: where ioprio_set is refused (a seccomp filter, the
 * real-time class after its capability was dropped), the I/O runs at the
 * thread's own priority, as it would without one.
 */
#include <errno.h>
#include <stdbool.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ioprio.h"
#include "ioprio_thread.h"

#define WHO_PROCESS 1   /* IOPRIO_WHO_PROCESS: with who 0, the calling thread */

static __thread struct {
	bool moved;             /* at a request's priority, not its own */
	uint16_t now;           /* that priority, while moved */
	int own;                /* its own, to go back to */
} me;

void fsaio__ioprio_enter(uint16_t prio)
{
	int saved = errno;
	long own;

	if (!prio || (me.moved && me.now == prio))
		return;
	if (!me.moved) {
		own = syscall(SYS_ioprio_get, WHO_PROCESS, 0);
		if (own < 0)
			goto out;
		/* Class NONE is "the default": older kernels report it with
		 * a level that ioprio_set refuses. */
		me.own = FSAIO__IOPRIO_CLASS(own) == FSAIO__IOPRIO_NONE ? 0 : (int)own;
	}
	if (syscall(SYS_ioprio_set, WHO_PROCESS, 0, (int)prio) == 0) {
		me.moved = true;
		me.now = prio;
	}
out:
	errno = saved;
}

void fsaio__ioprio_leave(void)
{
	int saved = errno;

	if (!me.moved)
		return;
	(void)syscall(SYS_ioprio_set, WHO_PROCESS, 0, me.own);
	me.moved = false;
	errno = saved;
}

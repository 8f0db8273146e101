/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: the wake primitive of a context. Sleepers wait for ctx->seq to
 * move (a futex, ring.c), or, in io_pgetevents with a signal mask, in
 * ppoll on ctx->efd. A wake bumps seq, then makes the futex call only when
 * a sleeper armed it since the last call (armed is taken after the bump;
 * sleepers arm before they look at seq: both seq_cst), and signals the
 * eventfd only when someone sleeps in ppoll (pwaiters, the same rule).
 * Called by whoever published events (ring.c, resfd.c) and by io_destroy;
 * takes no lock.
 */
#include <limits.h>
#include <linux/futex.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "wake.h"

void shim__efd_signal(int fd)
{
	uint64_t one = 1;

	/* An eventfd write of 1 fails only when the counter is about to
	 * overflow, and then the reader is already awake. Callers may run
	 * with cancellation enabled (io_submit): write is a cancellation
	 * point. */
	if (FSAIO__NOCANCEL(write(fd, &one, sizeof(one))) < 0)
		return;
}

void shim__wake(struct shim_ctx *c)
{
	int efd;

	atomic_fetch_add(&c->seq, 1);
	if (atomic_load(&c->armed) && atomic_exchange(&c->armed, 0))
		syscall(SYS_futex, &c->seq, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
	if (atomic_load(&c->pwaiters) && (efd = atomic_load(&c->efd)) >= 0)
		shim__efd_signal(efd);
}

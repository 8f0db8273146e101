/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: the wake primitive of a context. Sleepers wait for ctx->seq to
 * move (a futex), or, in io_pgetevents with a signal mask, in ppoll on
 * ctx->efd. A sleeper marks the word (SHIM_SEQ_SLEEPER) and sleeps on the
 * marked value, unless the count moved since it looked; a wake counts and
 * unmarks in one compare-and-swap, and makes the futex call only when the
 * mark was there. A sleeper that marked the word after a wake sleeps
 * until the next one; one that a wake unmarked before it reached the
 * kernel finds the word changed there and looks again. The eventfd is
 * signalled only when someone sleeps in ppoll (pwaiters, seq_cst, read
 * after the count). Called by whoever published events (ring.c, resfd.c)
 * and by io_destroy; takes no lock.
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

bool shim__sleep_mark(struct shim_ctx *c, uint32_t seen, uint32_t *val)
{
	uint32_t old = atomic_load(&c->seq);

	do {
		if ((old & ~SHIM_SEQ_SLEEPER) != (seen & ~SHIM_SEQ_SLEEPER))
			return false;
	} while (!(old & SHIM_SEQ_SLEEPER) &&
		 !atomic_compare_exchange_weak(&c->seq, &old, old | SHIM_SEQ_SLEEPER));
	*val = old | SHIM_SEQ_SLEEPER;
	return true;
}

void shim__wake(struct shim_ctx *c)
{
	uint32_t old = atomic_load(&c->seq);
	int efd;

	while (!atomic_compare_exchange_weak(&c->seq, &old, (old + SHIM_SEQ_STEP) & ~SHIM_SEQ_SLEEPER))
		;
	if (old & SHIM_SEQ_SLEEPER)
		syscall(SYS_futex, &c->seq, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
	if (atomic_load(&c->pwaiters) && (efd = atomic_load(&c->efd)) >= 0)
		shim__efd_signal(efd);
}

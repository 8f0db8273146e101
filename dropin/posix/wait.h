/* SPDX-License-Identifier: MIT */
/* wait.c: one futex word bumped by every completion, and waiting on it. */
#ifndef FSAIO_PX_WAIT_H
#define FSAIO_PX_WAIT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

extern _Atomic uint32_t px__seq;
void px__wake(bool kick_ring);
/* Sleep until px__seq moves from seen or the absolute CLOCK_MONOTONIC
 * deadline (NULL: none) passes: 0, -ETIMEDOUT or -EINTR. cancellable: a
 * pthread_cancel ends the sleep (the thread unwinds from it). */
int px__wait(uint32_t seen, const struct timespec *deadline, bool cancellable);
/* Between them the caller counts as a sleeper (aio_cancel's wait). */
void px__wait_begin(void);
void px__wait_end(void);
void px__wait_fork_child(void);                 /* no thread of the child waits */
/* The cancellable wait of aio_suspend and lio_listio: until done(arg),
 * looked at after every completion; 0, -ETIMEDOUT or -EINTR. */
int px__wait_until(bool (*done)(void *), void *arg, const struct timespec *deadline);

#endif /* FSAIO_PX_WAIT_H */

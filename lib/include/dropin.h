/* SPDX-License-Identifier: MIT */
/*
 * What the engine offers its own getevents and the drop-ins beyond the
 * public API.
 *
 * Waiting for events by carrying the context's io_uring ring in the
 * waiting thread (getevents.c hands these to the ring, uring_reap.c). The pattern: read the word that moves
 * after each delivery you wait for (a delivery hook's own,
 * fsaio__set_deliver), look for events, and if there are too few,
 * fsaio__drive() with that word and what it read; on -EAGAIN sleep your
 * own way, counted by fsaio__drive_need(+1/-1) around the sleep.
 */
#ifndef FSAIO_DROPIN_H
#define FSAIO_DROPIN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "fsaio.h"

/*
 * Harvest the ring's completions in this thread and, when none came and
 * *word still reads seen, wait in io_uring_enter once, until
 * deadline (CLOCK_MONOTONIC ns; INT64_MAX: none; 0: do not wait). 0 (look
 * again), -EINTR (a signal), or -EAGAIN: the ring is not this caller's to
 * carry now (none, idle, another caller carries it, or the thread stays
 * for a waiter); sleep another way.
 */
int fsaio__drive(fsaio_ctx_t *ctx, const _Atomic uint32_t *word, uint32_t seen,
		 int64_t deadline);

/* fsaio__drive whose wait in io_uring_enter is a cancellation point, for
 * callers that are one (the POSIX drop-in's aio_suspend). Called with
 * cancellation disabled; it is enabled, asynchronous, around that system
 * call alone, so that a cancel pending or sent then unwinds the caller
 * from it at once, leaving the ring to the others. */
int fsaio__drive_cancellable(fsaio_ctx_t *ctx, const _Atomic uint32_t *word, uint32_t seen,
			     int64_t deadline);

/* A drop-in's reap call begins (io_getevents): how soon the caller came
 * back after its last submit call decides whether the next ones may hold
 * their requests for a while (the engine's doorbell policy). */
void fsaio__drive_back(fsaio_ctx_t *ctx);

/* A waiter that relies on the completion thread (it sleeps elsewhere, or
 * reads an eventfd) comes (+1) or goes (-1). */
void fsaio__drive_need(fsaio_ctx_t *ctx, int delta);

/* Wake a caller waiting in the ring (a completion arrived another way, or
 * the context is going away). */
void fsaio__drive_kick(fsaio_ctx_t *ctx);

/* A callback context's batch form of its callback: each batch of
 * completions is handed to fn in one call, in the thread that has them,
 * instead of one callback per event (a drop-in publishes and signals once
 * per batch). Set once, before the first request. Such a caller keeps
 * what it has in flight within the context's depth itself (a drop-in's
 * ring is smaller), so the engine does not count its requests; and fn,
 * once the events are where its waiters look, moves the word they pass to
 * fsaio__drive with a sequentially consistent read-modify-write (the
 * engine reads whether one waits in the ring after fn returns). */
void fsaio__set_deliver(fsaio_ctx_t *ctx,
			void (*fn)(void *complete_arg, const struct fsaio_event *ev, unsigned n));

/*
 * The drop-ins' submit: reqs as fsaio_submit takes them (in order, the
 * cached reads' first attempts made in one system call, the hits' events
 * posted by the time it returns; how many were accepted, or the first
 * one's -errno), with two differences.
 * - Cancellation: the caller's state is kept, and disabled for the rest of
 *   the call only before a step that may reach a cancellation point (every
 *   request but a buffered read or write on a regular file, and on those
 *   every path but the attempt that completes inline), put back before it
 *   returns. The completion callback is called with the caller's state.
 * - What it sent to the io_uring ring waits for fsaio__submit_end, which
 *   the caller makes once at the end of its own call, so that the call's
 *   misses reach the ring in one system call (or with a later call's, while
 *   the caller keeps coming back soon and the ring is busy), when alone
 *   says the caller's call brings one request; a call of several enters at
 *   its end.
 */
int fsaio__submit_batch(fsaio_ctx_t *ctx, struct fsaio_req **reqs, unsigned nr, bool alone);
void fsaio__submit_end(fsaio_ctx_t *ctx);

/* Reads the page cache has, done in the caller before the drop-in makes
 * anything for them: each of reqs[0..nr) (each a prepped FSAIO_OP_PREAD, never
 * submitted; at most 64 looked at) is read as fsaio_submit's inline
 * attempt would read it, when its fd's last attempt hit and it is small,
 * their first attempts made in one system call. Bit i of the answer is set
 * when reqs[i] is done, its result in res[i] (no event is posted; it
 * counts in fsaio_stats as a request completed inline); a read not done
 * keeps nothing: submit it then. No cancellation point is reached; errno
 * may change. */
uint64_t fsaio__reads_now(fsaio_ctx_t *ctx, struct fsaio_req **reqs, unsigned nr, int64_t *res);

#endif /* FSAIO_DROPIN_H */

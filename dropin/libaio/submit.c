/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: io_submit and io_cancel, with the kernel's rules.
 *
 * Each iocb is read once (the kernel copies it: a program may reuse or free
 * its iocb after io_submit) and judged in the kernel's order (decode.c), so
 * a bad iocb gets the same -errno at submit, and what the kernel only
 * learns by doing the I/O comes in the event. A pointer outside the user
 * address range (the iocbpp array, an iocb) is -EFAULT as the kernel's
 * copy_from_user gives it, judged by its value alone.
 *
 * io_submit runs with the caller's cancellation state, as none of its
 * usual steps is a cancellation point: the few that may be (closing a
 * RESFD dup, signalling an eventfd, the engine's hand-offs) disable it
 * around themselves (fsaio__submit_batch, FSAIO__NOCANCEL).
 *
 * The iocbs of one call are prepared up to the first bad one and handed to
 * the engine in batches; the engine attempts each inline in this thread
 * (a batch's cached reads in one system call), so a request whose data is
 * cached, and every buffered write to a regular file
 * (FSAIO_CTX_INLINE_WRITES, context.c), has its event in the ring when
 * io_submit returns, as with the kernel.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "decode.h"
#include "dropin.h"
#include "ring.h"
#include "self.h"
#include "submit.h"
#include "usercopy.h"
#include "usermem.h"

/* As many as the engine attempts in one system call (rw_batch.h). */
#define BATCH 64

/* Write an iocb's aio_key in the caller's memory: 0 or -EFAULT. */
static int put_key(struct iocb *ucb, uint32_t key)
{
	return shim__user_copy(FSAIO__USER_AT(ucb, offsetof(struct iocb, aio_key)), &key, sizeof(key), true);
}

/* Judge iocb cb (the copy of ucb, its head already judged) and fill slot s
 * for it (taken by the caller, who gives it back if this fails). */
static int prepare(struct shim_ctx *c, struct iocb *ucb, struct iocb cb, struct shim_slot *s)
{
	bool fd_bad;
	int ret;

	ret = shim__decode_fd(c, s, &cb);
	/* Its eventfd is read without io_getevents: the engine's thread must
	 * bring its completion (undone by give_back or at the
	 * event). */
	if (s->resfd >= 0)
		fsaio__drive_need(c->engine, 1);
	if (ret) {
		/* Before aio_key is written: it stays as it was. */
		shim__decode_fail(&cb, ret, &fd_bad);
		return fd_bad ? -EBADF : ret;
	}
	/* put_user() of aio_key: a read-only iocb is EFAULT here. */
	if (put_key(ucb, 0))
		return -EFAULT;
	ret = shim__decode_op(s, &cb);
	if (ret) {
		ret = shim__decode_fail(&cb, ret, &fd_bad);
		if (fd_bad)
			put_key(ucb, cb.aio_key);
		return ret;
	}
	s->old_key = cb.aio_key;
	s->req.user_data = s;
	s->data = cb.aio_data;
	__atomic_store_n(&s->obj, (uint64_t)(uintptr_t)ucb, __ATOMIC_RELAXED);
	s->opcode = cb.aio_lio_opcode;
	return 0;
}

/* Give back n slots the engine did not accept: first what prepare took
 * (the engine's ring carried for an eventfd, the decode's dup and
 * vector), then the slots. */
static void give_back(struct shim_ctx *c, struct shim_slot **slots, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		if (slots[i]->resfd >= 0)
			fsaio__drive_need(c->engine, -1);
		shim__decode_undo(slots[i]);
	}
	shim__slots_release(c, slots, n);
}

/* The iocbs of one batch: slots are taken for the whole batch in one round
 * of ctx->lock (more only if it runs short), the engine publishes the
 * inline completions in one more (shim__deliver), and the slots left
 * unused or refused go back in a third only when there are any. */
long shim__submit(struct shim_ctx *c, long nr, struct iocb **ios)
{
	struct fsaio_req *reqs[BATCH];
	struct shim_slot *slots[BATCH];
	long done = 0;
	int ret = 0;

	if (nr < 0)
		return -EINVAL;
	if (nr > (long)c->ring->nr)
		nr = c->ring->nr;
	while (done < nr && !ret) {
		struct iocb *failed = NULL;     /* the iocb prepare refused, if readable */
		uint32_t failed_key = 0;        /* its aio_key before prepare */
		unsigned want = nr - done < BATCH ? (unsigned)(nr - done) : BATCH;
		unsigned k = 0, off, have;
		int n;

		have = shim__take_slots(c, want, slots);
		while (k < want) {
			struct iocb *ucb, cb;

			/* get_user() of each entry, as the kernel reads them,
			 * then copy_from_user() of the iocb. */
			if (shim__user_copy(&ucb, FSAIO__USER_AT(ios, (done + k) * sizeof(*ios)), sizeof(ucb), false) ||
			    shim__user_copy(&cb, ucb, sizeof(cb), false)) {
				ret = -EFAULT;
				break;
			}
			failed = ucb;
			failed_key = cb.aio_key;
			ret = shim__decode_head(&cb);
			if (ret)
				break;
			if (k == have) {
				have += shim__take_slots(c, want - k, slots + k);
				if (k == have) {
					ret = -EAGAIN;
					break;
				}
			}
			ret = prepare(c, ucb, cb, slots[k]);
			if (ret)
				break;
			failed = NULL;
			reqs[k] = &slots[k]->req;
			/* A request that signals an eventfd ends the batch: the
			 * kernel signals it before it reads the next iocb, which
			 * may read that eventfd. */
			if (slots[k++]->resfd >= 0)
				break;
		}
		if (!k) {
			give_back(c, slots, have);
			continue;
		}
		/* The engine stops at a request it refuses and returns how many
		 * it took; asked again, it answers the refused one's error. */
		for (off = 0; off < k; off += (unsigned)n) {
			n = fsaio__submit_batch(c->engine, reqs + off, k - off, nr == 1);
			if (n <= 0) {
				ret = n ? n : -EAGAIN;
				break;
			}
		}
		/* The kernel stops at the refused iocb: it never looked at the
		 * ones after it (nor at the one prepare refused), and for a
		 * closed or O_PATH fd answers EBADF and leaves the key alone. */
		for (unsigned i = off; i < k; i++) {
			struct iocb *ucb = (struct iocb *)(uintptr_t)slots[i]->obj;

			bool fd_bad = i == off && shim__fd_unusable(slots[i]->req.fd);

			if (fd_bad)
				ret = -EBADF;
			if (i > off || fd_bad)
				put_key(ucb, slots[i]->old_key);
		}
		if (off < k && failed)
			put_key(failed, failed_key);
		/* The refused requests' slots and those never used. */
		give_back(c, slots + off, have - off);
		done += off;
	}
	/* The call's misses, in one io_uring_enter. */
	fsaio__submit_end(c->engine);
	return done ? done : ret;
}

/*
 * io_cancel: only a request that has not started can be taken back. The
 * kernel can cancel only polls (its buffered reads and writes are done by
 * the time io_submit returns); here a read or write still waiting in the
 * engine's queue can be cancelled too. -EINPROGRESS when cancelled (the
 * event follows through the ring), -EINVAL otherwise.
 */
int shim__cancel(struct shim_ctx *c, struct iocb *iocb)
{
	struct shim_slot *s = NULL;
	int ret;

	pthread_mutex_lock(&c->cancel_lock);
	pthread_mutex_lock(&c->lock);
	for (uint32_t i = 0; i < c->used; i++) {
		if (c->slots[i].busy &&
		    __atomic_load_n(&c->slots[i].obj, __ATOMIC_RELAXED) == (uint64_t)(uintptr_t)iocb) {
			s = &c->slots[i];
			s->pinned = true;
			break;
		}
	}
	pthread_mutex_unlock(&c->lock);
	if (!s) {
		pthread_mutex_unlock(&c->cancel_lock);
		return -EINVAL;
	}
	/* Pinned: the slot may complete meanwhile, but not be reused, so the
	 * engine is never asked to cancel some later request. */
	ret = fsaio_cancel(c->engine, &s->req) == 0 ? -EINPROGRESS : -EINVAL;
	pthread_mutex_lock(&c->lock);
	s->pinned = false;
	if (s->free_on_unpin) {
		s->free_on_unpin = false;
		s->next_free = c->free;
		c->free = s;
	}
	pthread_mutex_unlock(&c->lock);
	pthread_mutex_unlock(&c->cancel_lock);
	return ret;
}

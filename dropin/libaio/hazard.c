/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: what a call holds while it runs, without a locked instruction.
 *
 * A call keeps io_destroy from freeing its context until it leaves (context.c).
 * Counting the call in the registry entry costs two atomic read-modify-
 * writes per call, on a line every thread of the context shares. Instead
 * each thread owns a hazard record: a call names the entry it uses there
 * with a plain store and then reads the entry's key again; io_destroy
 * clears the key, has every running thread of the process pass a full
 * memory barrier (membarrier(2), MEMBARRIER_CMD_PRIVATE_EXPEDITED), and
 * then waits until no record names the entry. The barrier pairs with the
 * call's compiler barrier: either the call sees the cleared key, or
 * io_destroy sees the record.
 *
 * Records are cache lines in mmap'd chunks, never freed, on a push-only
 * list. A thread takes a free one at its first call (mmap and a CAS, both
 * usable from a signal handler) and gives it back when it exits (a
 * thread-specific key's destructor). Where membarrier is refused (an old
 * kernel, a seccomp filter) or no record can be had, and for a call made
 * while the thread's record is in use (from a signal handler that
 * interrupted a call), shim__hazard_mine() answers NULL and the call
 * counts itself in the entry instead.
 */
#include <linux/membarrier.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hazard.h"

#define CHUNK_BYTES 4096

static _Atomic(struct shim_hazard *) records;   /* push-only, with release */
static __thread struct shim_hazard *mine __attribute__((tls_model("initial-exec")));
/* membarrier: 1 registered for this process, -1 refused, 0 not tried. */
static _Atomic int barrier_state;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static pthread_key_t exit_key;
static bool exit_key_ok;        /* written once by key_once */

/* A thread that ends inside a call (pthread_exit from a signal handler)
 * holds nothing any more either. */
static void on_thread_exit(void *rec)
{
	struct shim_hazard *h = rec;

	atomic_store_explicit(&h->held, NULL, memory_order_release);
	atomic_store_explicit(&h->taken, false, memory_order_release);
}

static void make_key(void)
{
	exit_key_ok = pthread_key_create(&exit_key, on_thread_exit) == 0;
}

static bool barrier_usable(void)
{
	int s = atomic_load_explicit(&barrier_state, memory_order_relaxed);

	if (!s) {
		s = syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0 ? 1 : -1;
		atomic_store_explicit(&barrier_state, s, memory_order_relaxed);
	}
	return s > 0;
}

static void push(struct shim_hazard *h)
{
	struct shim_hazard *head = atomic_load_explicit(&records, memory_order_relaxed);

	do {
		h->next = head;
	} while (!atomic_compare_exchange_weak_explicit(&records, &head, h, memory_order_release,
							memory_order_relaxed));
}

/* A free record taken for this thread, or a new chunk's first. */
static struct shim_hazard *take(void)
{
	struct shim_hazard *h, *chunk;

	for (h = atomic_load_explicit(&records, memory_order_acquire); h; h = h->next) {
		bool free = false;

		if (atomic_compare_exchange_strong_explicit(&h->taken, &free, true,
							    memory_order_acquire,
							    memory_order_relaxed))
			return h;
	}
	chunk = mmap(NULL, CHUNK_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (chunk == MAP_FAILED)
		return NULL;
	/* mmap'd memory is zero: every record free, holding nothing. */
	atomic_store_explicit(&chunk[0].taken, true, memory_order_relaxed);
	for (unsigned i = CHUNK_BYTES / sizeof(*chunk); i-- > 0;)
		push(&chunk[i]);
	return chunk;
}

struct shim_hazard *shim__hazard_mine(void)
{
	struct shim_hazard *h = mine;

	if (!barrier_usable())
		return NULL;
	if (h)
		return atomic_load_explicit(&h->held, memory_order_relaxed) ? NULL : h;
	pthread_once(&key_once, make_key);
	h = take();
	if (!h)
		return NULL;
	/* Without the key the record stays taken after the thread: lost,
	 * not shared. */
	if (exit_key_ok)
		pthread_setspecific(exit_key, h);
	mine = h;
	return h;
}

void shim__hazard_sync(void)
{
	if (atomic_load_explicit(&barrier_state, memory_order_relaxed) > 0)
		syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
}

bool shim__hazard_names(const void *p)
{
	for (struct shim_hazard *h = atomic_load_explicit(&records, memory_order_acquire); h;
	     h = h->next)
		if (atomic_load_explicit(&h->held, memory_order_acquire) == p)
			return true;
	return false;
}

void shim__hazard_fork_child(void)
{
	/* The other threads are not in the child, nor their calls; this
	 * thread keeps its record. The child registers for membarrier
	 * again: 6.18 carries the parent's registration over, and a second
	 * one costs a system call, once. */
	for (struct shim_hazard *h = atomic_load_explicit(&records, memory_order_relaxed); h;
	     h = h->next) {
		atomic_store_explicit(&h->held, NULL, memory_order_relaxed);
		if (h != mine)
			atomic_store_explicit(&h->taken, false, memory_order_relaxed);
	}
	if (atomic_load_explicit(&barrier_state, memory_order_relaxed) > 0)
		atomic_store_explicit(&barrier_state, 0, memory_order_relaxed);
	(void)barrier_usable();
}

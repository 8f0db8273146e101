/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: context lifetime, the registry of live contexts, and fork.
 *
 * io_setup maps a ring sized as the kernel sizes its own (nr_events raised
 * to 4 per possible CPU, doubled, rounded up to whole pages), so a program
 * sees the same ring->nr and may keep as many requests in flight as it
 * could on the kernel (ring->nr - 1). The io_context_t is the ring's
 * address.
 *
 * Every call looks its context up in a registry and holds it while it
 * runs, so an unknown, destroyed or forked-away context is -EINVAL
 * without any memory of it being touched. The lookup takes no lock: the
 * registry is a fixed array of hash chains of entries (struct reg_node)
 * that are never freed and never leave their chain; a destroyed context's
 * entry is reused by a later context of the same bucket. A call finds the
 * entry whose key is its io_context_t, names the entry in its thread's
 * hazard record (hazard.c) or else counts itself in the entry's refs, and
 * then reads the key again: still its own, the context is live and stays
 * so until the call leaves; changed, it leaves again. io_destroy clears
 * the key before it waits until no record names the entry and refs is 0;
 * the counted side uses sequentially consistent atomics and the hazard
 * side membarrier, so either the call sees the cleared key or io_destroy
 * sees the call. Setup, destroy and the choice of an entry are serialised
 * by reg_lock, which no call takes.
 *
 * io_destroy then wakes the context's sleepers (they return -EINVAL),
 * waits for the calls still running, cancels pending polls as the kernel
 * does, waits for every request still in flight to complete (reads fill
 * their buffers, writes reach the file), and only then destroys the engine
 * context and unmaps the ring.
 *
 * fork(): the kernel does not copy aio contexts into the child. The ring is
 * MADV_DONTFORK (the child has no mapping there, as with the kernel's ring),
 * and a pthread_atfork child handler clears every entry, so the child's
 * calls on the parent's contexts return -EINVAL. Their memory is left as
 * it is in the child: the engine state belongs to threads that the child
 * does not have.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "context.h"
#include "dropin.h"
#include "hazard.h"
#include "resfd.h"
#include "ring.h"
#include "self.h"
#include "usermem.h"
#include "wake.h"

/* Enough chains that 10,000 live contexts make chains of two or three:
 * every call walks its context's chain, and io_setup walks one for a free
 * entry. 32 KiB of chain heads, touched only where entries are. */
#define REG_BUCKETS 4096
#define RING_PAGE 4096u

/* One registry entry; see DESIGN. Aligned to a cache line, so that calls on
 * different contexts do not share the line their refs live on. */
struct reg_node {
	_Atomic uintptr_t key;          /* seq_cst: the live context's ring address, 0 when none;
					 * written under reg_lock */
	struct shim_ctx *ctx;           /* reg_lock; read by a call once it has seen key */
	_Atomic uint32_t refs;          /* seq_cst: calls holding ctx through this entry */
	bool used;                      /* reg_lock: taken by a context not yet fully destroyed */
	struct reg_node *next;          /* immutable once the entry is published */
} __attribute__((aligned(64)));

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
/* Chain heads: a new entry is pushed with release under reg_lock, read with
 * acquire by any call. */
static struct reg_node *_Atomic reg_table[REG_BUCKETS];
static uint64_t reg_events;     /* reg_lock: nr_events of live contexts, against aio-max-nr */
static uint32_t reg_next_id;    /* reg_lock: ring->id of the next context */

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static uint32_t possible_cpus = 1;      /* written once by init_once */
static uint64_t aio_max_nr = 65536;     /* written once by init_once */
static uint32_t engine_flags;           /* written once by init_once */

static unsigned bucket(const void *ring)
{
	uintptr_t a = (uintptr_t)ring >> 12;

	return (unsigned)((a ^ (a >> 12) ^ (a >> 24)) % REG_BUCKETS);
}

static void on_fork_prepare(void)
{
	pthread_mutex_lock(&reg_lock);
}

static void on_fork_parent(void)
{
	pthread_mutex_unlock(&reg_lock);
}

static void on_fork_child(void)
{
	shim__self_pid_reset();
	/* The child owns none of the parent's contexts, and none of the calls
	 * that the parent's other threads were making. */
	for (unsigned b = 0; b < REG_BUCKETS; b++) {
		for (struct reg_node *n = atomic_load(&reg_table[b]); n; n = n->next) {
			atomic_store(&n->key, 0);
			atomic_store(&n->refs, 0);
			n->ctx = NULL;
			n->used = false;
		}
	}
	reg_events = 0;
	shim__hazard_fork_child();
	pthread_mutex_unlock(&reg_lock);
}

/* /sys/devices/system/cpu/possible: "0-3" or "0,2-5"; the kernel sizes the
 * ring with num_possible_cpus(). */
static uint32_t count_possible_cpus(void)
{
	char buf[256], *p = buf;
	uint32_t n = 0;
	ssize_t len;
	int fd = open("/sys/devices/system/cpu/possible", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		goto fallback;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		goto fallback;
	buf[len] = 0;
	while (*p >= '0' && *p <= '9') {
		unsigned long a = strtoul(p, &p, 10), b = a;

		if (*p == '-')
			b = strtoul(p + 1, &p, 10);
		if (b >= a)
			n += (uint32_t)(b - a + 1);
		if (*p != ',')
			break;
		p++;
	}
	if (n)
		return n;
fallback:
	len = sysconf(_SC_NPROCESSORS_CONF);
	return len > 0 ? (uint32_t)len : 1;
}

static void init(void)
{
	const char *env;
	char buf[32];
	ssize_t len;
	int fd;

	possible_cpus = count_possible_cpus();
	fd = open("/proc/sys/fs/aio-max-nr", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		len = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (len > 0) {
			buf[len] = 0;
			aio_max_nr = strtoull(buf, NULL, 10);
		}
	}
	/* Buffered writes complete inside io_submit, as the kernel's do,
	 * unless FSAIO_ASYNC_WRITES=1 hands them to the workers. */
	engine_flags = FSAIO_CTX_KERNEL_RULES;
	env = getenv("FSAIO_ASYNC_WRITES");
	if (!env || strcmp(env, "1") != 0)
		engine_flags |= FSAIO_CTX_INLINE_WRITES;
	pthread_atfork(on_fork_prepare, on_fork_parent, on_fork_child);
}

/* Leave an entry a call counted itself in (key: the id it looked up). The
 * last call out of a dying context lets io_destroy go on; the entry outlives
 * the context, so reading it after the decrement is safe, and a wake that
 * reaches a later user of the entry is only a spurious one. */
static void node_put(struct reg_node *n, uintptr_t key)
{
	if (atomic_fetch_sub(&n->refs, 1) == 1 && atomic_load(&n->key) != key)
		syscall(SYS_futex, &n->refs, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

struct shim_ctx *shim__get(io_context_t id, struct shim_hazard **held)
{
	uintptr_t key = (uintptr_t)id;
	struct shim_hazard *h;
	struct reg_node *n;

	*held = NULL;
	if (!key)
		return NULL;
	h = shim__hazard_mine();
	n = atomic_load_explicit(&reg_table[bucket(id)], memory_order_acquire);
	for (; n; n = n->next) {
		if (atomic_load_explicit(&n->key, memory_order_relaxed) != key)
			continue;
		if (h) {
			shim__hazard_set(h, n);
			if (atomic_load_explicit(&n->key, memory_order_acquire) == key) {
				*held = h;
				return n->ctx;
			}
			shim__hazard_clear(h);
			continue;
		}
		atomic_fetch_add(&n->refs, 1);
		if (atomic_load(&n->key) == key)
			return n->ctx;
		/* Destroyed meanwhile (and the entry perhaps reused). */
		node_put(n, key);
	}
	return NULL;
}

void shim__put(struct shim_ctx *c, struct shim_hazard *held)
{
	if (held)
		shim__hazard_clear(held);
	else
		node_put(c->node, (uintptr_t)c->ring);
}

static void ctx_free(struct shim_ctx *c)
{
	int efd = atomic_load(&c->efd);

	if (efd >= 0)
		close(efd);
	if (c->ring)
		munmap(c->ring, c->map_bytes);
	pthread_mutex_destroy(&c->lock);
	pthread_mutex_destroy(&c->reap_lock);
	pthread_mutex_destroy(&c->cancel_lock);
	free(c);
}

/* A free entry in ring's chain, or a new one pushed onto it; reg_lock held. */
static struct reg_node *node_take(const void *ring)
{
	_Atomic(struct reg_node *) *head = &reg_table[bucket(ring)];
	struct reg_node *n;

	for (n = atomic_load_explicit(head, memory_order_relaxed); n; n = n->next)
		if (!n->used)
			break;
	if (!n) {
		n = aligned_alloc(64, sizeof(*n));
		if (!n)
			return NULL;
		memset(n, 0, sizeof(*n));
		atomic_init(&n->key, 0);
		atomic_init(&n->refs, 0);
		n->next = atomic_load_explicit(head, memory_order_relaxed);
		atomic_store_explicit(head, n, memory_order_release);
	}
	n->used = true;
	return n;
}

/* The sizes of a context's mapping, as the kernel sizes its ring. */
struct ring_size {
	uint32_t nr;            /* ring->nr: io_events the ring holds */
	size_t bytes;           /* the ring, whole pages */
	size_t map_bytes;       /* the ring and the slots that follow it */
};

/* Size nr_events' ring with the kernel's arithmetic, in its own unsigned
 * 32 bits (ioctx_alloc): 0, or -EINVAL or -EAGAIN as the kernel answers. */
static int size_ring(int nr_events, struct ring_size *sz)
{
	uint32_t n = (uint32_t)nr_events;
	size_t slot_bytes;

	if (n == 0)
		return -EINVAL;
	if (n < possible_cpus * 4)
		n = possible_cpus * 4;
	n *= 2;
	if (n > 0x10000000u / sizeof(struct io_event))
		return -EINVAL;
	if (!n || (uint32_t)nr_events > aio_max_nr)
		return -EAGAIN;
	sz->bytes = sizeof(struct shim_ring) + (size_t)n * sizeof(struct io_event);
	sz->bytes = (sz->bytes + RING_PAGE - 1) / RING_PAGE * RING_PAGE;
	sz->nr = (uint32_t)((sz->bytes - sizeof(struct shim_ring)) / sizeof(struct io_event));
	/* The slots follow the ring in the same mapping: zero pages that are
	 * touched only as slots are first handed out (slot_pop), so io_setup
	 * writes one page, whatever nr_events. */
	slot_bytes = (size_t)sz->nr * sizeof(struct shim_slot); /* capacity + 1 */
	sz->map_bytes = sz->bytes + (slot_bytes + RING_PAGE - 1) / RING_PAGE * RING_PAGE;
	return 0;
}

/* A new context with its locks and its mapping (ring, then slots), not yet
 * known to anyone: 0 and *cp, or -ENOMEM. */
static int ctx_alloc(int nr_events, const struct ring_size *sz, struct shim_ctx **cp)
{
	struct shim_ctx *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->nr_events = (uint32_t)nr_events;
	c->capacity = sz->nr - 1;
	c->avail = c->capacity;
	atomic_init(&c->efd, -1);
	pthread_mutex_init(&c->lock, NULL);
	pthread_mutex_init(&c->reap_lock, NULL);
	pthread_mutex_init(&c->cancel_lock, NULL);
	c->ring = mmap(NULL, sz->map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);
	if (c->ring == MAP_FAILED) {
		c->ring = NULL;
		ctx_free(c);
		return -ENOMEM;
	}
	c->ring_bytes = sz->bytes;
	c->map_bytes = sz->map_bytes;
	c->slots = (struct shim_slot *)((char *)c->ring + sz->bytes);
	madvise(c->ring, sz->map_bytes, MADV_DONTFORK);
	shim__resfd_init(c);
	*cp = c;
	return 0;
}

/* c's engine context, whose events our delivery hook publishes in c's
 * ring. Our slots bound what is in flight (the engine does not count a
 * context with a delivery hook); the engine sizes its io_uring ring by the
 * depth, and a request leaves it a little after its event is ours, hence
 * the margin. 0 or -errno. */
static int engine_start(struct shim_ctx *c)
{
	struct fsaio_params p = { 0 };
	int ret;

	p.queue_depth = c->capacity * 2 + 64;
	p.flags = engine_flags;
	p.complete = shim__complete;
	p.complete_arg = c;
	ret = fsaio_ctx_create(&p, &c->engine);
	if (ret)
		return ret;
	fsaio__set_deliver(c->engine, shim__deliver);
	return 0;
}

/* The ring's header, in the kernel's struct aio_ring layout. */
static void ring_header_init(struct shim_ring *ring, uint32_t nr)
{
	ring->nr = nr;
	ring->magic = SHIM_RING_MAGIC;
	ring->compat_features = SHIM_RING_COMPAT_FEATURES;
	ring->incompat_features = 0;
	ring->header_length = sizeof(struct shim_ring);
}

/* Under reg_lock: count c against aio-max-nr (-EAGAIN), give it an entry
 * (-ENOMEM), its ring an id, and the program its io_context_t at ctxp (the
 * copy's fault); then publish c under its ring's address. 0 or -errno,
 * with nothing of c left in the registry. */
static int ctx_register(struct shim_ctx *c, io_context_t *ctxp)
{
	io_context_t id;
	int ret;

	pthread_mutex_lock(&reg_lock);
	if (reg_events + c->nr_events > aio_max_nr) {
		pthread_mutex_unlock(&reg_lock);
		return -EAGAIN;
	}
	c->node = node_take(c->ring);
	if (!c->node) {
		pthread_mutex_unlock(&reg_lock);
		return -ENOMEM;
	}
	reg_events += c->nr_events;
	c->ring->id = reg_next_id++;
	id = (io_context_t)c->ring;
	ret = shim__user_copy(ctxp, &id, sizeof(id), true);
	if (ret) {
		reg_events -= c->nr_events;
		c->node->used = false;
		pthread_mutex_unlock(&reg_lock);
		return ret;
	}
	c->node->ctx = c;
	/* Publishes c: a call that reads this key reads c whole. */
	atomic_store(&c->node->key, (uintptr_t)c->ring);
	pthread_mutex_unlock(&reg_lock);
	return 0;
}

int shim__io_setup(int nr_events, io_context_t *ctxp)
{
	struct ring_size sz;
	struct shim_ctx *c;
	io_context_t old;
	int ret;

	pthread_once(&init_once, init);
	ret = shim__user_copy(&old, ctxp, sizeof(old), false);
	if (ret)
		return ret;
	if (old)
		return -EINVAL;
	ret = size_ring(nr_events, &sz);
	if (ret)
		return ret;
	ret = ctx_alloc(nr_events, &sz, &c);
	if (ret)
		return ret;
	ret = engine_start(c);
	if (ret)
		goto fail;
	ring_header_init(c->ring, sz.nr);
	ret = ctx_register(c, ctxp);
	if (ret)
		goto fail;
	return 0;

fail:
	if (c->engine)
		fsaio_ctx_destroy(c->engine);
	ctx_free(c);
	return ret;
}

static bool stats_wanted(void)
{
	const char *stats = getenv("FSAIO_STATS");

	return stats && *stats && strcmp(stats, "0") != 0;
}

/* when: "" at io_destroy, " (open at exit)" for a context never destroyed. */
static void print_stats(struct shim_ctx *c, const char *when)
{
	struct fsaio_stats st;

	if (fsaio_get_stats(c->engine, &st))
		return;
	dprintf(STDERR_FILENO,
		"fsaio: io_context %p%s: requests %llu, inline %llu, partial inline %llu, "
		"queued %llu, worker retries %llu, blocking calls inline %llu, bytes inline %llu, "
		"bytes by workers %llu, "
		"probes %llu (cold %llu), cancelled %llu, io_uring SQEs %llu "
		"(straight to the ring %llu), bytes by io_uring %llu, ring completions "
		"taken by the waiting caller %llu, by the ring thread %llu, reaper sleeps "
		"%llu, wake-ups %llu, stream hits %llu, readahead calls %llu, batched attempts "
		"%llu (reads %llu), batches refused %llu, pool reads collected %llu\n",
		(void *)c->ring, when, (unsigned long long)st.requests,
		(unsigned long long)st.completed_inline, (unsigned long long)st.partial_inline,
		(unsigned long long)st.queued, (unsigned long long)st.retries,
		(unsigned long long)st.blocking_inline,
		(unsigned long long)st.bytes_inline, (unsigned long long)st.bytes_worker,
		(unsigned long long)st.probe_calls, (unsigned long long)st.probe_cold,
		(unsigned long long)st.cancelled, (unsigned long long)st.uring_submissions,
		(unsigned long long)st.straight_to_ring, (unsigned long long)st.bytes_uring,
		(unsigned long long)st.ring_reaped_caller, (unsigned long long)st.ring_reaped_thread,
		(unsigned long long)st.reaper_sleeps, (unsigned long long)st.reaper_wakeups,
		(unsigned long long)st.stream_hits, (unsigned long long)st.readahead_calls,
		(unsigned long long)st.batch_calls, (unsigned long long)st.batch_requests,
		(unsigned long long)st.batch_refused, (unsigned long long)st.pool_collected);
}

/* FSAIO_STATS at exit: the counters of the contexts still open, as a
 * program may exit without io_destroy (the kernel then tears its contexts
 * down). Skipped if another thread is in io_setup or io_destroy now. */
__attribute__((destructor)) static void stats_at_exit(void)
{
	if (!stats_wanted() || pthread_mutex_trylock(&reg_lock))
		return;
	for (unsigned b = 0; b < REG_BUCKETS; b++)
		for (struct reg_node *n = atomic_load(&reg_table[b]); n; n = n->next)
			if (atomic_load(&n->key) && n->ctx)
				print_stats(n->ctx, " (open at exit)");
	pthread_mutex_unlock(&reg_lock);
}

/* Sleep until the context's state changes (a completion or a call ends). */
static void wait_change(struct shim_ctx *c, _Atomic uint32_t *word, uint32_t seen)
{
	uint32_t val;

	if (shim__sleep_mark(c, seen, &val))
		syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}

int shim__io_destroy(io_context_t id)
{
	struct shim_ctx *c = NULL;
	struct reg_node *n;
	uint32_t v;

	if (!id)
		return -EINVAL;
	pthread_mutex_lock(&reg_lock);
	for (n = atomic_load_explicit(&reg_table[bucket(id)], memory_order_relaxed); n;
	     n = n->next)
		if (atomic_load_explicit(&n->key, memory_order_relaxed) == (uintptr_t)id)
			break;
	if (n) {
		c = n->ctx;
		atomic_store(&n->key, 0);
		reg_events -= c->nr_events;
	}
	pthread_mutex_unlock(&reg_lock);
	if (!n)
		return -EINVAL;

	/* Nobody finds it any more; wake those who sleep on it and wait for
	 * every call in progress to leave. The barrier shows every call that
	 * did not see the cleared key in its hazard record (hazard.c). */
	shim__hazard_sync();
	atomic_store(&c->dead, 1);
	shim__wake(c);
	while ((v = atomic_load(&n->refs)) != 0 || shim__hazard_names(n)) {
		/* Bounded: the last counted call out wakes us, a call in a
		 * hazard record is looked for again each millisecond, and one
		 * waiting in the engine's ring is kicked out of it each time
		 * round. */
		struct timespec ms = { 0, 1000000 };

		fsaio__drive_kick(c->engine);
		syscall(SYS_futex, &n->refs, FUTEX_WAIT_PRIVATE, v, &ms, NULL, 0);
	}

	/* The kernel cancels what can be cancelled (polls) and waits for the
	 * rest: a read submitted before io_destroy has filled its buffer, a
	 * write has reached the file, when io_destroy returns. */
	pthread_mutex_lock(&c->lock);
	for (uint32_t i = 0; i < c->used; i++) {
		struct shim_slot *s = &c->slots[i];

		if (s->busy && s->opcode == IOCB_CMD_POLL) {
			pthread_mutex_unlock(&c->lock);
			/* No other thread is in the context: the slot cannot be
			 * reused under us, only complete. */
			fsaio_cancel(c->engine, &s->req);
			pthread_mutex_lock(&c->lock);
		}
	}
	/* Nobody drives the engine's ring now: its thread does. */
	fsaio__drive_need(c->engine, 1);
	for (;;) {
		uint32_t seen = atomic_load(&c->seq);

		if (!c->in_flight)
			break;
		pthread_mutex_unlock(&c->lock);
		wait_change(c, &c->seq, seen);
		pthread_mutex_lock(&c->lock);
	}
	pthread_mutex_unlock(&c->lock);
	fsaio__drive_need(c->engine, -1);

	if (stats_wanted())
		print_stats(c, "");
	fsaio_ctx_destroy(c->engine);
	shim__resfd_fini(c);
	ctx_free(c);
	/* Only now may a new context take the entry. */
	pthread_mutex_lock(&reg_lock);
	n->ctx = NULL;
	n->used = false;
	pthread_mutex_unlock(&reg_lock);
	return 0;
}

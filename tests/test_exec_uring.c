/* SPDX-License-Identifier: MIT */
/*
 * The io_uring executor alone (lib/exec/uring.c, uring_reap.c, uring_setup.c
 * and rw.c compiled into this test, no context): reads of a cold file on
 * disk are carried by the ring, harvested by its thread or by a caller
 * driving it, each reported exactly once through done with the file's
 * bytes; reads queued from several threads; a read waiting on an empty
 * pipe cancels; stop with reads in flight reports each once; a read a
 * submit call held back enters without the caller, one of 64 KiB or of a
 * call of several is never held, and a batch enters once it carries
 * 64 KiB. Skipped where io_uring is refused (io_uring_disabled, ENOSYS,
 * EPERM).
 */
#ifdef T_NO_CRITERION
#include "t_runner.h"
#else
#include <criterion/criterion.h>
#endif
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "counters.h"
#include "monoclock.h"
#include "t_files.h"
#include "uring.h"
#include "uring_ring.h"

#define FILE_SIZE (8u << 20)
#define NREQ 256u
#define NTHREADS 4u
#define SEED 7u

/* A ring, its file and its requests; what the ops record (the harvester
 * writes, the test asserts). */
struct rig {
	struct fsaio__uring_exec x;
	struct fsaio__counters st;
	struct fsaio_req *reqs;         /* [n] */
	unsigned n;
	char *bufs;                     /* [n] of len */
	size_t len;
	int fd;                         /* FILE_SIZE bytes of SEED's pattern, on disk */
	_Atomic unsigned *dones;        /* per request: done calls */
	int64_t *res;                   /* per request: done's res, before dones */
	_Atomic unsigned total;         /* done calls in all */
	_Atomic unsigned batched;       /* done calls given a batch */
	_Atomic unsigned flushed;       /* events flush took out of batches */
	_Atomic unsigned punts;
	_Atomic uint32_t word;          /* moves after each flush: what a driver waits on */
};

static void done(void *arg, struct fsaio_req *r, int64_t res, struct fsaio__batch *b)
{
	struct rig *g = arg;
	size_t i = (size_t)(r - g->reqs);

	cr_assert_lt(i, g->n, "done of a request the test never queued");
	g->res[i] = res;
	fsaio__state_set(r, FSAIO__IDLE);
	if (b) {
		/* As a context does: the event waits in b for flush. */
		cr_assert_lt(b->n, FSAIO__BATCH);
		b->ev[b->n].req = r;
		b->ev[b->n++].res = res;
		atomic_fetch_add(&g->batched, 1);
	}
	atomic_fetch_add(&g->dones[i], 1);
	atomic_fetch_add(&g->total, 1);
}

static void flush(void *arg, struct fsaio__batch *b)
{
	struct rig *g = arg;

	atomic_fetch_add(&g->flushed, b->n);
	b->n = 0;
	atomic_fetch_add(&g->word, 1);
}

static void punt(void *arg, struct fsaio_req *r)
{
	struct rig *g = arg;

	(void)r;
	atomic_fetch_add(&g->punts, 1);
}

static const struct fsaio__uring_ops ops = { .done = done, .flush = flush, .punt = punt };

/* Skip unless this process may set up a ring. */
static void need_uring(void)
{
	struct io_uring ring;
	char c = '0';
	int fd = open("/proc/sys/kernel/io_uring_disabled", O_RDONLY | O_CLOEXEC);
	int ret;

	if (fd >= 0) {
		if (read(fd, &c, 1) != 1)
			c = '0';
		close(fd);
	}
	if (c == '2')
		cr_skip_test("io_uring is disabled (kernel.io_uring_disabled = 2)\n");
	ret = io_uring_queue_init(4, &ring, 0);
	if (ret == -ENOSYS || ret == -EPERM || ret == -EACCES)
		cr_skip_test("io_uring_setup is refused here: %s\n", strerror(-ret));
	cr_assert_eq(ret, 0, "io_uring_queue_init: %s", strerror(-ret));
	io_uring_queue_exit(&ring);
}

/* n requests of len bytes and a ring sized for them; the file cold. */
static void rig_start(struct rig *g, unsigned n, size_t len)
{
	need_uring();
	memset(g, 0, sizeof(*g));
	g->n = n;
	g->len = len;
	g->reqs = calloc(n, sizeof(*g->reqs));
	g->dones = calloc(n, sizeof(*g->dones));
	g->res = calloc(n, sizeof(*g->res));
	g->bufs = calloc(n, len);
	cr_assert(g->reqs && g->dones && g->res && g->bufs);
	g->fd = t_file(FILE_SIZE, SEED);
	t_cold(g->fd);
	fsaio__uring_init(&g->x, n, &ops, g, &g->st);
}

static void rig_end(struct rig *g)
{
	free(g->reqs);
	free((void *)g->dones);
	free(g->res);
	free(g->bufs);
	close(g->fd);
}

/* Request i: a read into its buffer, run on fd (the file's unless another
 * is given) as the engine runs a request. */
static struct fsaio_req *prep_read(struct rig *g, unsigned i, int fd, size_t len, uint64_t off)
{
	struct fsaio_req *r = &g->reqs[i];

	fsaio_prep_pread(r, fd, g->bufs + (size_t)i * g->len, len, (int64_t)off);
	r->run_fd_ = (uint32_t)fd;
	r->total_ = len;
	r->done_ = 0;
	r->hints_ = 0;
	return r;
}

/* Request i: a whole read of the file at slot k of len bytes (spread). */
static struct fsaio_req *prep_file_read(struct rig *g, unsigned i, unsigned k)
{
	return prep_read(g, i, g->fd, g->len, (uint64_t)(k % (FILE_SIZE / g->len)) * g->len);
}

static bool wait_total(struct rig *g, unsigned n)
{
	for (unsigned i = 0; i < 30000 && atomic_load(&g->total) < n; i++)
		usleep(1000);
	return atomic_load(&g->total) >= n;
}

/* Every request reported once, whole, with the file's bytes at its offset;
 * every CQE counted once, as one harvester's. */
static void check_reads(struct rig *g)
{
	for (unsigned i = 0; i < g->n; i++) {
		cr_assert_eq(atomic_load(&g->dones[i]), 1, "read %u reported %u times", i,
			     atomic_load(&g->dones[i]));
		cr_assert_eq(g->res[i], (int64_t)g->len, "read %u: res %lld", i,
			     (long long)g->res[i]);
		t_check(g->bufs + (size_t)i * g->len, g->len, (uint64_t)g->reqs[i].offset, SEED);
	}
	cr_assert_eq(atomic_load(&g->flushed), atomic_load(&g->batched));
	cr_assert_eq(atomic_load(&g->punts), 0);
	cr_assert_geq(atomic_load(&g->st.uring_sqes), g->n);
	cr_assert_eq(atomic_load(&g->st.ring_reaped_caller) + atomic_load(&g->st.ring_reaped_thread),
		     atomic_load(&g->st.uring_sqes));
	cr_assert_eq(atomic_load(&g->st.bytes_uring), (uint64_t)g->n * g->len);
}

static void setup(void)
{
	t_files_setup("exec_uring");
}

TestSuite(exec_uring, .init = setup, .fini = t_files_teardown, .timeout = 120);

Test(exec_uring, cold_reads_carried_by_the_thread)
{
	struct rig g;

	rig_start(&g, NREQ, 16384);
	cr_assert(fsaio__uring_usable(&g.x));
	for (unsigned i = 0; i < NREQ; i++) {
		/* Out of order; every other one deferred, flushed in eights. */
		enum fsaio__enter when = i % 2 ? FSAIO__ENTER_BY_CALL : FSAIO__ENTER_NOW;

		cr_assert_eq(fsaio__uring_queue(&g.x, prep_file_read(&g, i, i * 97u), when), 0,
			     "queue %u", i);
		if (i % 8 == 7)
			fsaio__uring_flush(&g.x);
	}
	fsaio__uring_flush(&g.x);
	cr_assert(wait_total(&g, NREQ), "%u of %u reads reported", atomic_load(&g.total), NREQ);
	fsaio__uring_stop(&g.x);
	check_reads(&g);
	cr_assert_eq(atomic_load(&g.st.uring_sqes), NREQ);
	cr_assert_eq(atomic_load(&g.total), NREQ, "a request was reported after stop");
	rig_end(&g);
}

Test(exec_uring, a_caller_drives_the_ring)
{
	struct rig g;

	rig_start(&g, NREQ, 4096);
	for (unsigned i = 0; i < NREQ; i++)
		cr_assert_eq(fsaio__uring_queue(&g.x, prep_file_read(&g, i, i * 131u),
						FSAIO__ENTER_BY_CALL), 0);
	fsaio__uring_flush(&g.x);
	for (int64_t end = fsaio__mono_ns() + 30 * 1000000000LL;
	     atomic_load(&g.total) < NREQ && fsaio__mono_ns() < end;) {
		uint32_t seen = atomic_load(&g.word);
		int ret;

		if (atomic_load(&g.total) >= NREQ)
			break;
		ret = fsaio__uring_drive(&g.x, &g.word, seen, fsaio__mono_ns() + 100000000);
		cr_assert(ret == 0 || ret == -EAGAIN || ret == -EINTR, "drive: %d", ret);
		if (ret == -EAGAIN)
			usleep(1000);   /* the thread carries it for now */
	}
	cr_assert_eq(atomic_load(&g.total), NREQ, "%u of %u reads reported",
		     atomic_load(&g.total), NREQ);
	/* Nothing in flight: the ring is not the caller's to carry. */
	cr_assert_eq(fsaio__uring_drive(&g.x, &g.word, atomic_load(&g.word), 0), -EAGAIN);
	fsaio__uring_stop(&g.x);
	check_reads(&g);
	rig_end(&g);
}

struct queuer {
	struct rig *g;
	unsigned first, count;
	_Atomic unsigned *refused;
};

static void *queue_some(void *arg)
{
	struct queuer *q = arg;

	for (unsigned i = q->first; i < q->first + q->count; i++) {
		/* Deferred, then flushed in batches, as fsaio_submit does. */
		if (fsaio__uring_queue(&q->g->x, prep_file_read(q->g, i, i * 53u),
				       FSAIO__ENTER_BY_CALL) != 0)
			atomic_fetch_add(q->refused, 1);
		if (i % 4 == 3)
			fsaio__uring_flush(&q->g->x);
	}
	fsaio__uring_flush(&q->g->x);
	return NULL;
}

Test(exec_uring, reads_queued_from_threads)
{
	struct queuer q[NTHREADS];
	pthread_t t[NTHREADS];
	_Atomic unsigned refused = 0;
	struct rig g;

	rig_start(&g, NREQ + 1, 8192);
	/* The first read makes the ring (a queue that finds it being made is
	 * refused, and its caller carries the request another way). */
	cr_assert_eq(fsaio__uring_queue(&g.x, prep_file_read(&g, 0, 0), FSAIO__ENTER_NOW), 0);
	for (unsigned i = 0; i < NTHREADS; i++) {
		q[i] = (struct queuer){ .g = &g, .first = 1 + i * (NREQ / NTHREADS),
					.count = NREQ / NTHREADS, .refused = &refused };
		cr_assert_eq(pthread_create(&t[i], NULL, queue_some, &q[i]), 0);
	}
	for (unsigned i = 0; i < NTHREADS; i++)
		pthread_join(t[i], NULL);
	cr_assert_eq(atomic_load(&refused), 0, "the ring refused %u reads", atomic_load(&refused));
	cr_assert(wait_total(&g, NREQ + 1), "%u of %u reads reported", atomic_load(&g.total),
		  NREQ + 1);
	fsaio__uring_stop(&g.x);
	check_reads(&g);
	rig_end(&g);
}

Test(exec_uring, a_waiting_read_cancels)
{
	struct rig g;
	int p[2];

	rig_start(&g, 2, 64);
	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	/* An empty pipe: the read waits in the ring until cancelled. */
	cr_assert_eq(fsaio__uring_queue(&g.x, prep_read(&g, 0, p[0], g.len, 0), FSAIO__ENTER_NOW),
		     0);
	usleep(20000);
	cr_assert_eq(atomic_load(&g.total), 0, "a read of an empty pipe was reported");
	cr_assert_eq(fsaio__uring_cancel(&g.x, &g.reqs[0]), 0);
	cr_assert(wait_total(&g, 1), "the cancelled read was not reported");
	cr_assert_eq(g.res[0], -ECANCELED);
	/* Reported: a second cancel finds nothing to take back. */
	cr_assert_eq(fsaio__uring_cancel(&g.x, &g.reqs[0]), -EBUSY);
	/* The pipe's data reaches no one: the read is gone from the ring. */
	cr_assert_eq(write(p[1], "x", 1), 1);
	/* A file read still goes through after the cancel. */
	cr_assert_eq(fsaio__uring_queue(&g.x, prep_read(&g, 1, g.fd, g.len, 4096),
					FSAIO__ENTER_NOW), 0);
	cr_assert(wait_total(&g, 2));
	cr_assert_eq(g.res[1], (int64_t)g.len);
	t_check(g.bufs + g.len, g.len, 4096, SEED);
	usleep(20000);
	fsaio__uring_stop(&g.x);
	cr_assert_eq(atomic_load(&g.dones[0]), 1);
	cr_assert_eq(atomic_load(&g.dones[1]), 1);
	cr_assert_eq(atomic_load(&g.punts), 0);
	close(p[0]);
	close(p[1]);
	rig_end(&g);
}

Test(exec_uring, stop_reports_each_read_in_flight_once)
{
	enum { NPIPE = 8, NFILE = 64 };
	int pipes[NPIPE][2];
	struct rig g;

	rig_start(&g, NPIPE + NFILE, 65536);
	for (unsigned i = 0; i < NPIPE; i++) {
		cr_assert_eq(pipe2(pipes[i], O_CLOEXEC), 0);
		cr_assert_eq(fsaio__uring_queue(&g.x, prep_read(&g, i, pipes[i][0], 64, 0),
						FSAIO__ENTER_BY_CALL), 0);
	}
	for (unsigned i = NPIPE; i < NPIPE + NFILE; i++)
		cr_assert_eq(fsaio__uring_queue(&g.x, prep_file_read(&g, i, i - NPIPE),
						FSAIO__ENTER_BY_CALL), 0);
	fsaio__uring_flush(&g.x);
	/* At once: the file reads are still in flight, the pipe reads wait. */
	fsaio__uring_stop(&g.x);
	cr_assert_eq(atomic_load(&g.total), NPIPE + NFILE, "%u of %u reads reported by stop",
		     atomic_load(&g.total), NPIPE + NFILE);
	for (unsigned i = 0; i < NPIPE + NFILE; i++)
		cr_assert_eq(atomic_load(&g.dones[i]), 1, "read %u reported %u times", i,
			     atomic_load(&g.dones[i]));
	for (unsigned i = 0; i < NPIPE; i++)
		cr_assert_eq(g.res[i], -ECANCELED, "pipe read %u: res %lld", i,
			     (long long)g.res[i]);
	/* A file read stop took back ends -ECANCELED; one it waited for is whole. */
	for (unsigned i = NPIPE; i < NPIPE + NFILE; i++) {
		cr_assert(g.res[i] == (int64_t)g.len || g.res[i] == -ECANCELED,
			  "file read %u: res %lld", i, (long long)g.res[i]);
		if (g.res[i] == (int64_t)g.len)
			t_check(g.bufs + (size_t)i * g.len, g.len, (uint64_t)g.reqs[i].offset, SEED);
	}
	cr_assert_eq(atomic_load(&g.punts), 0);
	/* Stopped: nothing is reported after stop returned. */
	usleep(10000);
	cr_assert_eq(atomic_load(&g.total), NPIPE + NFILE);
	for (unsigned i = 0; i < NPIPE; i++) {
		close(pipes[i][0]);
		close(pipes[i][1]);
	}
	rig_end(&g);
}

/*
 * A submit call may leave its SQEs for a later enter (uring_doorbell.c).
 * Reads of empty pipes stay in the kernel, so no completion will bring a
 * harvest, and a poll sends the thread out of the ring: a file read held
 * now must still be reported, with the file's bytes, while the caller
 * never calls into the ring again. Whether the call holds depends on where
 * the thread is at that moment: tried until it does (or tries times), and
 * every file read queued meanwhile must be reported either way. File reads
 * of len bytes, queued as when says; returns the submit calls that held.
 */
static uint64_t hold_file_reads(size_t len, unsigned tries, enum fsaio__enter when)
{
	enum { NPIPE = 4 };
	int pipes[NPIPE][2];
	unsigned next = NPIPE, files = 0;
	uint64_t held = 0;
	struct rig g;

	rig_start(&g, NPIPE + 2 * tries, len);
	/* The pipe reads first, then per try one more pipe read and a file read. */
	for (unsigned i = 0; i < NPIPE; i++) {
		cr_assert_eq(pipe2(pipes[i], O_CLOEXEC), 0);
		cr_assert_eq(fsaio__uring_queue(&g.x, prep_read(&g, i, pipes[i][0], 64, 0),
						FSAIO__ENTER_NOW), 0);
	}
	for (unsigned t = 0; t < tries && !held; t++) {
		uint64_t before;

		/* The poll asks the thread to step back; it parks soon after. */
		(void)fsaio__uring_drive(&g.x, &g.word, atomic_load(&g.word), 0);
		usleep(2000);
		/* One submit call, and the caller back at once: the next may hold. */
		cr_assert_eq(fsaio__uring_queue(&g.x, prep_read(&g, next++, pipes[t % NPIPE][0], 64, 0),
						FSAIO__ENTER_MAY_HOLD), 0);
		fsaio__uring_flush_soon(&g.x);
		fsaio__uring_back(&g.x);
		/* Only the file read's call counts: the pipe read's may hold too. */
		before = atomic_load(&g.st.uring_held);
		cr_assert_eq(fsaio__uring_queue(&g.x, prep_file_read(&g, next++, t), when), 0);
		fsaio__uring_flush_soon(&g.x);
		held = atomic_load(&g.st.uring_held) - before;
		files++;
		/* Only the thread can bring these now. */
		cr_assert(wait_total(&g, files), "%u of %u file reads reported (held: %llu)",
			  atomic_load(&g.total), files, (unsigned long long)held);
	}
	for (unsigned i = NPIPE + 1; i < next; i += 2) {
		cr_assert_eq(atomic_load(&g.dones[i]), 1, "read %u reported %u times", i,
			     atomic_load(&g.dones[i]));
		cr_assert_eq(g.res[i], (int64_t)g.len, "read %u: res %lld", i, (long long)g.res[i]);
		t_check(g.bufs + (size_t)i * g.len, g.len, (uint64_t)g.reqs[i].offset, SEED);
	}
	fsaio__uring_stop(&g.x);
	for (unsigned i = 0; i < next; i++)
		if (i < NPIPE || (i - NPIPE) % 2 == 0)
			cr_assert_eq(g.res[i], -ECANCELED, "pipe read %u: res %lld", i,
				     (long long)g.res[i]);
	for (unsigned i = 0; i < NPIPE; i++) {
		close(pipes[i][0]);
		close(pipes[i][1]);
	}
	cr_assert_eq(atomic_load(&g.punts), 0);
	rig_end(&g);
	return held;
}

Test(exec_uring, a_held_read_enters_without_the_caller)
{
	enum { TRIES = 20 };

	if (!hold_file_reads(4096, TRIES, FSAIO__ENTER_MAY_HOLD))
		cr_skip_test("no submit call held its SQEs in %d tries (the thread was in the ring "
			     "each time); every read was reported\n", TRIES);
}

/* A held batch stays under 64 KiB (FSAIO__HOLD_BYTES): a read of 64 KiB
 * enters before its submit call returns, whatever the thread is doing, and
 * is reported as any other. */
Test(exec_uring, a_64k_read_is_never_held)
{
	cr_assert_eq(hold_file_reads(FSAIO__HOLD_BYTES, 20, FSAIO__ENTER_MAY_HOLD), 0,
		     "a submit call held a 64 KiB read");
}

/* A read of a call that brings several (ENTER_BY_CALL) binds its slot in
 * the enter and is never held: holding would cost a registration per
 * read. Shown where a call that brings one read alone does hold. */
Test(exec_uring, a_call_of_several_is_never_held)
{
	enum { TRIES = 20 };

	if (!hold_file_reads(4096, TRIES, FSAIO__ENTER_MAY_HOLD))
		cr_skip_test("no submit call held its SQEs in %d tries (the thread was in the ring "
			     "each time)\n", TRIES);
	cr_assert_eq(hold_file_reads(4096, TRIES, FSAIO__ENTER_BY_CALL), 0,
		     "a read of a call of several was held");
}

/* A batch a submit call builds enters once it carries 64 KiB
 * (FSAIO__HOLD_BYTES), before the call's end: the reads queued so far do
 * not wait in one plug for the rest. Deferred 64 KiB reads are therefore
 * in the kernel as soon as each is queued. */
Test(exec_uring, a_64k_batch_enters_before_the_call_ends)
{
	enum { N = 8 };
	struct rig g;

	rig_start(&g, N, FSAIO__HOLD_BYTES);
	for (unsigned i = 0; i < N; i++) {
		cr_assert_eq(fsaio__uring_queue(&g.x, prep_file_read(&g, i, i * 7u),
						FSAIO__ENTER_BY_CALL), 0);
		cr_assert(!atomic_load(&fsaio__ring_live(&g.x)->pending),
			  "deferred read %u of 64 KiB still waits in the SQ", i);
	}
	cr_assert(wait_total(&g, N), "%u of %u reads reported", atomic_load(&g.total), N);
	fsaio__uring_stop(&g.x);
	check_reads(&g);
	rig_end(&g);
}

/* The request's I/O priority reaches the kernel in its SQE: io_uring
 * checks sqe->ioprio as ioprio_check_cap does, so a class no kernel has
 * (which submit would have refused, and this test hands the ring
 * directly) comes back -EINVAL, while good ones read the file. */
Test(exec_uring, the_sqe_carries_the_priority)
{
	static const uint16_t prio[] = { 2 << 13 | 7, 7 << 13, 0, 3 << 13, 5 << 13 | 1 };
	static const int64_t want[] = { 4096, -EINVAL, 4096, 4096, -EINVAL };
	struct rig g;

	rig_start(&g, 5, 4096);
	for (unsigned i = 0; i < 5; i++) {
		struct fsaio_req *r = prep_file_read(&g, i, i * 7u);

		r->ioprio = prio[i];
		cr_assert_eq(fsaio__uring_queue(&g.x, r, FSAIO__ENTER_NOW), 0, "queue %u", i);
	}
	fsaio__uring_flush(&g.x);
	cr_assert(wait_total(&g, 5), "%u of 5 reads reported", atomic_load(&g.total));
	fsaio__uring_stop(&g.x);
	for (unsigned i = 0; i < 5; i++) {
		cr_assert_eq(atomic_load(&g.dones[i]), 1);
		cr_assert_eq(g.res[i], want[i], "read at priority %#x: res %lld, want %lld", prio[i],
			     (long long)g.res[i], (long long)want[i]);
		if (want[i] > 0)
			t_check(g.bufs + (size_t)i * g.len, g.len, (uint64_t)g.reqs[i].offset, SEED);
	}
	rig_end(&g);
}

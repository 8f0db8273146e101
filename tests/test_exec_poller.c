/* SPDX-License-Identifier: MIT */
/*
 * The readiness poller alone (lib/exec/poller.c and lib/exec/poller_table.c compiled
 * into this test, no context): a read of an empty pipe parks, is stepped
 * when the pipe is made ready later and is reported exactly once through
 * done, with the data; a parked request cancels through done; stop
 * cancels what still waits.
 */
#ifdef T_NO_CRITERION
#include "t_runner.h"
#else
#include <criterion/criterion.h>
#endif
#include <fcntl.h>
#include <stdatomic.h>
#include <unistd.h>

#include "counters.h"
#include "poller.h"

/* What the ops record; the poller's thread writes, the test asserts. */
struct sink {
	_Atomic unsigned steps, dones, flushes, punts;
	_Atomic int64_t res;            /* the last done's res */
	struct fsaio_req *last;         /* the last done's request, before dones */
};

/* A read on the descriptor the poller runs r on (its duplicate). */
static int64_t step(void *arg, struct fsaio_req *r)
{
	struct sink *s = arg;
	ssize_t n;

	atomic_fetch_add(&s->steps, 1);
	n = read(fsaio__fd(r), (char *)r->buf + r->done_, r->len - r->done_);
	if (n < 0)
		return errno == EAGAIN ? FSAIO__STEP_AGAIN : -errno;
	r->done_ += (uint64_t)n;
	return (int64_t)r->done_;
}

static void done(void *arg, struct fsaio_req *r, int64_t res, struct fsaio__batch *b)
{
	struct sink *s = arg;

	(void)b;
	s->last = r;
	atomic_store(&s->res, res);
	atomic_fetch_add(&s->dones, 1);
}

static void flush(void *arg, struct fsaio__batch *b)
{
	struct sink *s = arg;

	b->n = 0;
	atomic_fetch_add(&s->flushes, 1);
}

static void punt(void *arg, struct fsaio_req *r)
{
	struct sink *s = arg;

	(void)r;
	atomic_fetch_add(&s->punts, 1);
}

static const struct fsaio__poller_ops ops = {
	.step = step, .done = done, .flush = flush, .punt = punt,
};

static bool wait_dones(struct sink *s, unsigned n)
{
	for (unsigned i = 0; i < 30000 && atomic_load(&s->dones) < n; i++)
		usleep(1000);
	return atomic_load(&s->dones) >= n;
}

/* A read request on an empty non-blocking pipe (the step never blocks). */
static void prep_read(struct fsaio_req *r, int fds[2], char *buf, size_t len)
{
	cr_assert_eq(pipe2(fds, O_NONBLOCK | O_CLOEXEC), 0);
	fsaio_prep_pread(r, fds[0], buf, len, 0);
	r->run_fd_ = (uint32_t)fds[0];
}

Test(exec_poller, read_made_ready_later_completes_once)
{
	static const char msg[] = "ready later";
	struct fsaio__counters st = { 0 };
	struct fsaio__poller pl;
	struct fsaio_req r;
	struct sink s = { 0 };
	char buf[64] = { 0 };
	int fds[2];

	prep_read(&r, fds, buf, sizeof(msg) - 1);
	fsaio__poller_init(&pl, &ops, &s, &st);
	cr_assert_eq(fsaio__poller_park(&pl, &r), 0);
	cr_assert(fsaio__poller_queued(&pl, &r), "a later read must queue behind it");
	usleep(50000);
	cr_assert_eq(atomic_load(&s.dones), 0, "done before the pipe was ready");
	cr_assert_eq(atomic_load(&s.steps), 0, "stepped before the pipe was ready");

	cr_assert_eq(write(fds[1], msg, sizeof(msg) - 1), (ssize_t)sizeof(msg) - 1);
	cr_assert(wait_dones(&s, 1), "no done after the pipe became ready");
	cr_assert_eq(atomic_load(&s.res), (int64_t)sizeof(msg) - 1);
	cr_assert_eq(s.last, &r);
	cr_assert_eq(memcmp(buf, msg, sizeof(msg) - 1), 0, "read \"%s\"", buf);
	cr_assert_eq(atomic_load(&st.bytes_worker), sizeof(msg) - 1);
	cr_assert_geq(atomic_load(&s.flushes), 1);
	cr_assert_eq(atomic_load(&s.punts), 0);
	/* Done once: a cancel now finds nothing parked. */
	cr_assert_neq(fsaio__poller_cancel(&pl, &r), 0);
	usleep(20000);
	fsaio__poller_stop(&pl);
	fsaio__poller_fini(&pl);
	cr_assert_eq(atomic_load(&s.dones), 1, "done %u times", atomic_load(&s.dones));
	close(fds[0]);
	close(fds[1]);
}

Test(exec_poller, cancel_and_stop_end_parked_requests)
{
	struct fsaio__counters st = { 0 };
	struct fsaio__poller pl;
	struct fsaio_req a, b;
	struct sink s = { 0 };
	char buf[2][16];
	int pa[2], pb[2];

	prep_read(&a, pa, buf[0], sizeof(buf[0]));
	prep_read(&b, pb, buf[1], sizeof(buf[1]));
	fsaio__poller_init(&pl, &ops, &s, &st);
	cr_assert_eq(fsaio__poller_park(&pl, &a), 0);
	cr_assert_eq(fsaio__poller_park(&pl, &b), 0);

	cr_assert_eq(fsaio__poller_cancel(&pl, &a), 0);
	cr_assert_eq(atomic_load(&s.dones), 1);
	cr_assert_eq(s.last, &a);
	cr_assert_eq(atomic_load(&s.res), -ECANCELED);

	fsaio__poller_stop(&pl);
	cr_assert_eq(atomic_load(&s.dones), 2);
	cr_assert_eq(s.last, &b);
	cr_assert_eq(atomic_load(&s.res), -ECANCELED);
	cr_assert_eq(fsaio__poller_park(&pl, &a), -ESHUTDOWN);
	fsaio__poller_fini(&pl);
	cr_assert_eq(atomic_load(&s.steps), 0);
	for (int i = 0; i < 2; i++) {
		close(pa[i]);
		close(pb[i]);
	}
}

/* SPDX-License-Identifier: MIT */
/*
 * A request's I/O priority (fsaio_req.ioprio) on the native API: submit
 * answers each value as the kernel's AIO answers it in aio_reqprio with
 * IOCB_FLAG_IOPRIO (good ones, a bad class, a level with class NONE, the
 * real-time class without privilege, in a child that gave its root up);
 * prioritised reads read the right bytes, hot and cold, on every backend;
 * and the pool's worker that does a read's blocking I/O runs at the read's
 * priority while it is outstanding (the read is held in its copy by a
 * userfaultfd page, and ioprio_get asked of the worker meanwhile), and at
 * its own again once the event is out.
 */
#include "t_helpers.h"
#include "t_prio.h"

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define KiB 1024u
#define SEED 31u

TestSuite(ioprio, .init = t_setup, .fini = t_teardown, .timeout = 120);

/* What fsaio_submit answers for a read of prio: 0 when accepted (its event
 * reaped and checked), else the refusal. */
static int native_answer(fsaio_ctx_t *ctx, int fd, uint16_t prio)
{
	char buf[4096];
	struct fsaio_req req, *list[1] = { &req };
	struct fsaio_event ev;
	int ret;

	fsaio_prep_pread(&req, fd, buf, sizeof(buf), 4096);
	req.ioprio = prio;
	ret = T_CALL(fsaio_submit(ctx, list, 1));
	if (ret < 0)
		return ret;
	cr_assert_eq(ret, 1);
	t_reap_all(ctx, 1, &ev, T_EVENT_TIMEOUT_MS);
	cr_assert_eq(ev.res, 4096, "read at priority %#x: res %lld", prio, (long long)ev.res);
	t_check_pattern(buf, sizeof(buf), 4096, SEED);
	return 0;
}

static int kernel_answer(int fd, uint16_t prio)
{
	char buf[4096];
	long r = t_kaio(fd, IOCB_CMD_PREAD, buf, sizeof(buf), 4096, 0, true, prio);

	return r < 0 ? (int)r : 0;
}

static const uint16_t values[] = {
	T_IOPRIO(T_IOPRIO_BE, 0), T_IOPRIO(T_IOPRIO_BE, 7), T_IOPRIO(T_IOPRIO_IDLE, 0),
	T_IOPRIO(T_IOPRIO_IDLE, 5), T_IOPRIO(T_IOPRIO_BE, 4) | 0x8 /* a hint bit */,
	0x0008 /* class NONE with a hint bit, no level */,
	0x0001 /* class NONE with a level */, T_IOPRIO(4, 0), T_IOPRIO(7, 3),
	T_IOPRIO(T_IOPRIO_RT, 0), T_IOPRIO(T_IOPRIO_RT, 7),
};

/* Every value answered as the kernel answers it; returns how many differ
 * (a child cannot assert), printing each. */
static int compare_all(int fd, bool *saw_eperm)
{
	fsaio_ctx_t *ctx;
	int bad = 0;

	if (fsaio_ctx_create(NULL, &ctx))
		return 1;
	for (unsigned i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		int k = kernel_answer(fd, values[i]), n = native_answer(ctx, fd, values[i]);

		if (k != n) {
			fprintf(stderr, "priority %#x: kernel %d, fsaio_submit %d\n", values[i], k, n);
			bad++;
		}
		if (k == -EPERM)
			*saw_eperm = true;
	}
	fsaio_ctx_destroy(ctx);
	return bad;
}

Test(ioprio, submit_answers_as_the_kernel)
{
	int fd = t_tmpfile(64 * KiB, SEED);
	bool eperm = false;
	pid_t pid;
	int st;

	cr_assert_eq(compare_all(fd, &eperm), 0, "answers differ from the kernel's (stderr)");
	if (geteuid() != 0) {
		cr_assert(eperm, "unprivileged: the real-time class was not refused");
		return;
	}
	cr_assert_not(eperm, "as root the real-time class is allowed");
	/* The real-time class without privilege: a child that gave root up. */
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		bool saw = false;
		int bad;

		if (setgid(65534) || setuid(65534))
			_exit(3);
		bad = compare_all(fd, &saw);
		_exit(bad ? 1 : saw ? 0 : 2);
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st), "child ended by signal %d", WTERMSIG(st));
	cr_assert_neq(WEXITSTATUS(st), 3, "setuid(65534) failed in the child");
	cr_assert_neq(WEXITSTATUS(st), 2, "the kernel allowed the real-time class to uid 65534");
	cr_assert_eq(WEXITSTATUS(st), 0, "as uid 65534, answers differ from the kernel's (stderr)");
}

Test(ioprio, a_poll_takes_none)
{
	fsaio_ctx_t *ctx = t_ctx(NULL);
	int fd = t_tmpfile(4096, SEED);
	struct fsaio_req req, *list[1] = { &req };

	fsaio_prep_poll(&req, fd, POLLIN);
	req.ioprio = T_IOPRIO(T_IOPRIO_BE, 3);
	T_ASSERT_RET(fsaio_submit(ctx, list, 1), -EINVAL);
	fsaio_prep_pread(&req, fd, NULL, 0, 0);
	req.reserved = 1;
	req.ioprio = T_IOPRIO(T_IOPRIO_BE, 3);
	T_ASSERT_RET(fsaio_submit(ctx, list, 1), -EINVAL);
	t_ctx_destroy(ctx);
}

/* Reads and writes with a priority, hot and cold, on each backend: the
 * bytes are right, and the thread that carried them is back at its own. */
Test(ioprio, prioritised_io_reads_and_writes_right)
{
	static const uint32_t backends[] = { FSAIO_BACKEND_AUTO, FSAIO_BACKEND_THREADS,
					     FSAIO_BACKEND_URING };
	size_t len = 256 * KiB;
	uint8_t *buf = malloc(len);

	cr_assert_not_null(buf);
	for (unsigned b = 0; b < 3; b++) {
		fsaio_ctx_t *ctx = t_ctx_backend(backends[b]);
		int fd = t_coldfile(1024 * KiB, SEED);
		struct fsaio_req req;
		struct fsaio_event ev;

		for (unsigned round = 0; round < 2; round++) {  /* cold, then hot */
			fsaio_prep_pread(&req, fd, buf, len, 128 * KiB);
			req.ioprio = T_IOPRIO(T_IOPRIO_IDLE, 0);
			ev = t_run1(ctx, &req);
			cr_assert_eq(ev.res, (int64_t)len, "backend %u round %u: res %lld", b, round,
				     (long long)ev.res);
			t_check_pattern(buf, len, 128 * KiB, SEED);
		}
		t_fill_pattern(buf, 64 * KiB, 512 * KiB, SEED);
		fsaio_prep_pwrite(&req, fd, buf, 64 * KiB, 512 * KiB);
		req.ioprio = T_IOPRIO(T_IOPRIO_BE, 6);
		req.rw_flags = RWF_DSYNC;
		ev = t_run1(ctx, &req);
		cr_assert_eq(ev.res, (int64_t)(64 * KiB));
		t_check_file(fd, 0, 1024 * KiB, SEED);
		t_ctx_destroy(ctx);
	}
	free(buf);
}

/*
 * The pool's worker wears the read's priority while it carries the read:
 * the read's copy into a userfaultfd page waits for the test, which asks
 * the kernel (ioprio_get over /proc/self/task) which fsaio-* threads run at
 * the read's priority; the faulting one must. After the event, that
 * thread is back at the process's own priority. A round whose faulting
 * thread is not the engine's, or which ended before it was looked at
 * again, is made again.
 */
Test(ioprio, the_worker_runs_at_the_read_priority)
{
	const uint16_t prio = T_IOPRIO(T_IOPRIO_BE, 7);
	struct fsaio_params p = { .flags = FSAIO_CTX_NO_INLINE, .miss_backend = FSAIO_BACKEND_THREADS };
	int own = t_ioprio_of(0), fd, ret;
	struct t_held h;
	fsaio_ctx_t *ctx;
	unsigned good = 0;

	ret = t_held_init(&h);
	if (ret)
		cr_skip_test("userfaultfd is refused here (%s): the worker cannot be held\n",
			     strerror(-ret));
	cr_assert_geq(own, 0, "ioprio_get: %s", strerror(-own));
	cr_assert_neq(own, prio, "this test process runs at the priority under test");
	ctx = t_ctx(&p);
	fd = t_coldfile(64 * KiB, SEED);
	for (unsigned round = 0; round < 10 && good < 3; round++) {
		struct fsaio_req req, *list[1] = { &req };
		struct fsaio_event ev;
		bool seen;
		pid_t tid;
		int after;

		t_make_cold(fd);
		t_held_rearm(&h);
		cr_assert_eq(t_engine_threads_at(prio, 0, &seen), 0,
			     "an engine thread is at the priority before the read");
		fsaio_prep_pread(&req, fd, h.page, h.size, 8192);
		req.ioprio = prio;
		T_ASSERT_RET(fsaio_submit(ctx, list, 1), 1);
		tid = t_held_wait(&h, T_EVENT_TIMEOUT_MS);
		cr_assert_neq(tid, 0, "no thread came to copy the read");
		{
			char name[32];
			unsigned n = t_engine_threads_at(prio, tid, &seen);

			t_thread_name(tid, name, sizeof(name));
			cr_assert(!strncmp(name, "fsaio-w", 7), "the read was copied by %s, not a worker",
				  name);
			cr_assert(seen, "worker %d (%s) runs at %#x while it carries a read at %#x (%u "
				  "engine threads at it)", (int)tid, name, t_ioprio_of(tid), prio, n);
		}
		t_held_release(&h);
		t_reap_all(ctx, 1, &ev, T_EVENT_TIMEOUT_MS);
		cr_assert_eq(ev.res, (int64_t)h.size);
		t_check_pattern(h.page, h.size, 8192, SEED);
		after = t_ioprio_of(tid);
		if (after == -ESRCH)
			continue;       /* it retired meanwhile: nothing to look at */
		cr_assert_eq(after, own, "worker %d at %#x after the read, want its own %#x",
			     (int)tid, after, own);
		good++;
	}
	cr_assert_geq(good, 3, "only %u of the rounds could look at the worker after", good);
	t_ctx_destroy(ctx);
	t_held_fini(&h);
}

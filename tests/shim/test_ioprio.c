/* SPDX-License-Identifier: MIT */
/*
 * T_IOCB_FLAG_IOPRIO with aio_reqprio, on the kernel and on the drop-in: the
 * same answer for each value (good ones read the right bytes; a bad class
 * or a level with class NONE EINVAL; the real-time class EPERM without
 * privilege, in a child that gave root up). With the drop-in, the priority
 * is passed on: the pool's worker that carries a read runs at it while the
 * read is held in its copy (a userfaultfd page), and at its own after.
 */
#include "t_aio.h"
#define T_PRIO_NO_KAIO
#include "../t_prio.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define SEED 53u
#define T_IOCB_FLAG_IOPRIO 2u   /* libaio 0.3.113 has no name for it */

T_AIO_FIXTURE(65536, SEED)

TestSuite(ioprio, .init = setup, .fini = teardown, .timeout = 120);

struct want {
	uint16_t prio;
	int res;        /* 4096, or io_submit's -errno */
};

static const struct want root_wants[] = {
	{ T_IOPRIO(T_IOPRIO_BE, 0), 4096 }, { T_IOPRIO(T_IOPRIO_BE, 7), 4096 },
	{ T_IOPRIO(T_IOPRIO_IDLE, 0), 4096 }, { T_IOPRIO(T_IOPRIO_IDLE, 6), 4096 },
	{ T_IOPRIO(T_IOPRIO_BE, 3) | 0x10, 4096 }, { 0x0008, 4096 }, { 0, 4096 },
	{ 0x0001, -EINVAL }, { T_IOPRIO(4, 0), -EINVAL }, { T_IOPRIO(7, 7), -EINVAL },
	{ T_IOPRIO(T_IOPRIO_RT, 0), 4096 }, { T_IOPRIO(T_IOPRIO_RT, 7), 4096 },
};

/* A read of 4 KiB at 8 KiB with prio: its event's res, or the refusal;
 * the bytes checked. For the child too: no assertion, -9999 on a wrong
 * byte. */
static int read_at(io_context_t c, uint16_t prio)
{
	static char buf[4096];
	struct iocb cb, *list[1] = { &cb };
	struct io_event ev;
	struct timespec ts = { T_WAIT_SEC, 0 };
	int r;

	io_prep_pread(&cb, fd, buf, sizeof(buf), 8192);
	cb.u.c.flags |= T_IOCB_FLAG_IOPRIO;
	cb.aio_reqprio = (short)prio;
	r = io_submit(c, 1, list);
	if (r < 0)
		return r;
	if (io_getevents(c, 1, 1, &ev, &ts) != 1)
		return -ETIMEDOUT;
	for (size_t i = 0; i < sizeof(buf); i++)
		if ((uint8_t)buf[i] != t_byte(8192 + i, SEED))
			return -9999;
	return (int)ev.res;
}

Test(ioprio, answers_as_the_kernel_as_root)
{
	if (geteuid() != 0)
		cr_skip_test("not root: the real-time class would be refused\n");
	for (unsigned i = 0; i < sizeof(root_wants) / sizeof(root_wants[0]); i++)
		cr_assert_eq(read_at(ctx, root_wants[i].prio), root_wants[i].res,
			     "%s: priority %#x", t_mode(), root_wants[i].prio);
}

Test(ioprio, realtime_refused_without_privilege)
{
	pid_t pid;
	int st;

	if (geteuid() != 0) {
		cr_assert_eq(read_at(ctx, T_IOPRIO(T_IOPRIO_RT, 4)), -EPERM);
		cr_assert_eq(read_at(ctx, T_IOPRIO(T_IOPRIO_BE, 4)), 4096);
		return;
	}
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		io_context_t c = 0;
		int rt, rt_bad, be, idle;

		if (setgid(65534) || setuid(65534) || io_setup(8, &c))
			_exit(3);
		rt = read_at(c, T_IOPRIO(T_IOPRIO_RT, 4));
		rt_bad = read_at(c, T_IOPRIO(T_IOPRIO_RT, 0) | 0x0001);
		be = read_at(c, T_IOPRIO(T_IOPRIO_BE, 4));
		idle = read_at(c, T_IOPRIO(T_IOPRIO_IDLE, 0));
		io_destroy(c);
		if (rt != -EPERM || rt_bad != -EPERM || be != 4096 || idle != 4096) {
			fprintf(stderr, "uid 65534: RT %d, RT level 1 %d, BE %d, IDLE %d\n", rt,
				rt_bad, be, idle);
			_exit(1);
		}
		_exit(0);
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st), "child ended by signal %d", WTERMSIG(st));
	cr_assert_neq(WEXITSTATUS(st), 3, "setuid(65534) or io_setup failed in the child");
	cr_assert_eq(WEXITSTATUS(st), 0, "%s as uid 65534: answers on stderr", t_mode());
}

/* The drop-in's pool (FSAIO_BACKEND=threads, read at io_setup) carries a
 * cold read whose copy waits on a userfaultfd page: the worker doing it
 * runs at the iocb's priority meanwhile, and at its own after. */
Test(ioprio, the_worker_runs_at_the_iocb_priority)
{
	const uint16_t prio = T_IOPRIO(T_IOPRIO_IDLE, 0);
	int own = t_ioprio_of(0), ret;
	unsigned good = 0;
	struct t_held h;
	io_context_t c = 0;

	T_SHIM_ONLY("the kernel's AIO does a buffered read in io_submit, on no thread of its own");
	ret = t_held_init(&h);
	if (ret)
		cr_skip_test("userfaultfd is refused here (%s): the worker cannot be held\n",
			     strerror(-ret));
	cr_assert_neq(own, prio);
	setenv("FSAIO_BACKEND", "threads", 1);
	T_EXPECT(io_setup(8, &c), 0);
	for (unsigned round = 0; round < 10 && good < 3; round++) {
		struct iocb cb, *list[1] = { &cb };
		struct io_event ev;
		char name[32];
		bool seen;
		pid_t tid;
		int after;

		t_cold(fd);
		t_held_rearm(&h);
		io_prep_pread(&cb, fd, h.page, h.size, 16384);
		cb.u.c.flags |= T_IOCB_FLAG_IOPRIO;
		cb.aio_reqprio = (short)prio;
		T_EXPECT(io_submit(c, 1, list), 1);
		tid = t_held_wait(&h, T_WAIT_SEC * 1000);
		cr_assert_neq(tid, 0, "no thread came to copy the read");
		t_thread_name(tid, name, sizeof(name));
		if (tid == (pid_t)syscall(SYS_gettid)) {
			/* Its pages were cached by the time of the submit's own
			 * attempt: not the pool's; again. */
			t_held_release(&h);
			t_reap(c, 1, &ev);
			continue;
		}
		(void)t_engine_threads_at(prio, tid, &seen);
		cr_assert(!strncmp(name, "fsaio-", 6), "the read was copied by %s", name);
		cr_assert(seen, "%s %d runs at %#x while it carries a read at %#x", name, (int)tid,
			  t_ioprio_of(tid), prio);
		t_held_release(&h);
		t_reap(c, 1, &ev);
		cr_assert_eq((long)ev.res, (long)h.size);
		t_check(h.page, h.size, 16384, SEED);
		after = t_ioprio_of(tid);
		if (after == -ESRCH)
			continue;
		cr_assert_eq(after, own, "%s at %#x after the read, want %#x", name, after, own);
		good++;
	}
	cr_assert_geq(good, 3, "only %u rounds could look at the worker after", good);
	T_EXPECT(io_destroy(c), 0);
	t_held_fini(&h);
}

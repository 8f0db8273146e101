/* SPDX-License-Identifier: MIT */
/*
 * Notification: SIGEV_NONE sends nothing, SIGEV_SIGNAL queues the signal
 * with si_code SI_ASYNCIO and the aiocb's si_value, SIGEV_THREAD runs the
 * function on a new thread with the given attributes; the status is
 * complete when the notification arrives.
 */
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <unistd.h>

#include "t_px.h"

TestSuite(notify, .init = t_setup, .fini = t_teardown);

static char buf[4096];

Test(notify, sigev_signal_carries_si_asyncio_and_value)
{
	struct aiocb cbs[8];
	sigset_t set, old;
	siginfo_t si;
	struct timespec ts = { T_WAIT_SEC, 0 }, zero = { 0, 0 };
	unsigned seen = 0;
	int fd = t_file(65536, 60);

	sigemptyset(&set);
	sigaddset(&set, SIGRTMIN + 4);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	t_cold(fd);
	for (int i = 0; i < 8; i++) {
		t_cb(&cbs[i], fd, buf, 512, (off_t)i * 8192, LIO_READ);
		cbs[i].aio_sigevent.sigev_notify = SIGEV_SIGNAL;
		cbs[i].aio_sigevent.sigev_signo = SIGRTMIN + 4;
		cbs[i].aio_sigevent.sigev_value.sival_ptr = &cbs[i];
		cr_assert_eq(aio_read(&cbs[i]), 0);
	}
	for (int i = 0; i < 8; i++) {
		struct aiocb *cb;

		int got = sigtimedwait(&set, &si, &ts);
		cr_assert_eq(got, SIGRTMIN + 4, "got %d errno %d i %d", got, errno, i);
		cr_assert_eq(si.si_code, SI_ASYNCIO);
		cr_assert_eq(si.si_pid, getpid());
		cr_assert_eq(si.si_uid, getuid());
		cb = si.si_value.sival_ptr;
		cr_assert(cb >= cbs && cb < cbs + 8);
		/* The status is final by the time the signal comes. */
		cr_assert_eq(aio_error(cb), 0);
		cr_assert_eq(aio_return(cb), 512);
		seen |= 1u << (cb - cbs);
	}
	cr_assert_eq(seen, 0xff);
	cr_assert_eq(sigtimedwait(&set, &si, &zero), -1);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	close(fd);
}

Test(notify, sigev_none_sends_nothing)
{
	struct aiocb cb;
	sigset_t set, old;
	siginfo_t si;
	struct timespec zero = { 0, 0 };
	int fd = t_file(4096, 61);

	sigemptyset(&set);
	sigaddset(&set, SIGRTMIN + 5);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	t_cb(&cb, fd, buf, 100, 0, LIO_READ);
	cb.aio_sigevent.sigev_signo = SIGRTMIN + 5;   /* ignored with SIGEV_NONE */
	cr_assert_eq(aio_read(&cb), 0);
	cr_assert_eq(t_wait(&cb), 0);
	cr_assert_eq(sigtimedwait(&set, &si, &zero), -1);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	close(fd);
}

/* A handler that reads the result of the aiocb it is told about. */
static struct aiocb handler_cb;
static atomic_long handler_ret = -2;

static void on_done(int sig, siginfo_t *si, void *uc)
{
	struct aiocb *cb = si->si_value.sival_ptr;

	(void)sig; (void)uc;
	if (si->si_code == SI_ASYNCIO && aio_error(cb) == 0)
		atomic_store(&handler_ret, (long)aio_return(cb));
	else
		atomic_store(&handler_ret, -1);
}

Test(notify, signal_handler_sees_the_result)
{
	struct sigaction sa = { .sa_sigaction = on_done, .sa_flags = SA_SIGINFO | SA_RESTART };
	int fd = t_file(65536, 62);

	sigemptyset(&sa.sa_mask);
	cr_assert_eq(sigaction(SIGRTMIN + 6, &sa, NULL), 0);
	t_cb(&handler_cb, fd, buf, 1000, 3000, LIO_READ);
	handler_cb.aio_sigevent.sigev_notify = SIGEV_SIGNAL;
	handler_cb.aio_sigevent.sigev_signo = SIGRTMIN + 6;
	handler_cb.aio_sigevent.sigev_value.sival_ptr = &handler_cb;
	cr_assert_eq(aio_read(&handler_cb), 0);
	cr_assert_eq(t_wait(&handler_cb), 0);
	for (int i = 0; i < T_WAIT_SEC * 100 && atomic_load(&handler_ret) == -2; i++)
		usleep(10000);
	cr_assert_eq(atomic_load(&handler_ret), 1000);
	close(fd);
}

struct thread_note {
	sem_t done;
	struct aiocb *cb;
	size_t stack;
	int detached;
	int err;
	long ret;
	pthread_t self;
	sigset_t mask;
};

static void on_thread(union sigval v)
{
	struct thread_note *n = v.sival_ptr;
	pthread_attr_t a;

	n->self = pthread_self();
	n->err = aio_error(n->cb);
	n->ret = (long)aio_return(n->cb);
	pthread_sigmask(SIG_SETMASK, NULL, &n->mask);
	if (pthread_getattr_np(pthread_self(), &a) == 0) {
		pthread_attr_getstacksize(&a, &n->stack);
		pthread_attr_getdetachstate(&a, &n->detached);
		pthread_attr_destroy(&a);
	}
	sem_post(&n->done);
}

/* A read with SIGEV_THREAD: a miss, or (cached) a hit after a first read,
 * which the drop-in completes in the caller before it makes a request. */
static void thread_case(pthread_attr_t *attr, size_t want_stack, bool cached)
{
	static struct thread_note n;
	struct aiocb cb;
	struct timespec ts;
	int fd = t_file(65536, 63);

	memset(&n, 0, sizeof(n));
	sem_init(&n.done, 0, 0);
	n.cb = &cb;
	if (cached) {
		t_read_start(&cb, fd, buf, 2048, 4096);
		T_RETURNS(&cb, 2048);
		memset(buf, 0, 2048);
	} else {
		t_cold(fd);
	}
	t_cb(&cb, fd, buf, 2048, 4096, LIO_READ);
	cb.aio_sigevent.sigev_notify = SIGEV_THREAD;
	cb.aio_sigevent.sigev_notify_function = on_thread;
	cb.aio_sigevent.sigev_notify_attributes = attr;
	cb.aio_sigevent.sigev_value.sival_ptr = &n;
	cr_assert_eq(aio_read(&cb), 0);
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += T_WAIT_SEC;
	cr_assert_eq(sem_timedwait(&n.done, &ts), 0, "the notification function did not run");
	cr_assert_eq(n.err, 0);
	cr_assert_eq(n.ret, 2048);
	cr_assert(!pthread_equal(n.self, pthread_self()), "ran on the submitting thread");
	cr_assert_eq(n.detached, PTHREAD_CREATE_DETACHED);
	if (want_stack)
		cr_assert_eq(n.stack, want_stack, "stack %zu, want %zu", n.stack, want_stack);
	/* It runs with no signal blocked. */
	for (int s = 1; s < SIGRTMIN; s++)
		if (s != SIGKILL && s != SIGSTOP)
			cr_assert(!sigismember(&n.mask, s), "signal %d blocked in the function", s);
	t_check(buf, 2048, 4096, 63);
	sem_destroy(&n.done);
	close(fd);
}

Test(notify, sigev_thread_default_attributes)
{
	thread_case(NULL, 0, false);
}

Test(notify, sigev_thread_of_a_cache_hit)
{
	thread_case(NULL, 0, true);
}

Test(notify, sigev_thread_given_attributes)
{
	static pthread_attr_t attr;
	size_t want = 1 << 20;

	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, want);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	thread_case(&attr, want, false);
	pthread_attr_destroy(&attr);
}

/* lio_listio's GLIBC_2.2.5 form, which a program linked long ago binds:
 * it sends the elements' own notifications and the list's. */
extern int lio_listio_2_2_5(int, struct aiocb *const[], int, struct sigevent *);
__asm__(".symver lio_listio_2_2_5, lio_listio@GLIBC_2.2.5");

Test(notify, old_lio_listio_notifies_elements_and_list)
{
	struct aiocb cb;
	struct aiocb *list[1] = { &cb };
	struct sigevent sev = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGRTMIN + 8 };
	sigset_t set, old;
	siginfo_t si;
	struct timespec ts = { T_WAIT_SEC, 0 }, zero = { 0, 0 };
	int fd = t_file(4096, 64);

	sigemptyset(&set);
	sigaddset(&set, SIGRTMIN + 7);
	sigaddset(&set, SIGRTMIN + 8);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	t_cb(&cb, fd, buf, 64, 0, LIO_READ);
	cb.aio_sigevent.sigev_notify = SIGEV_SIGNAL;
	cb.aio_sigevent.sigev_signo = SIGRTMIN + 7;
	cr_assert_eq(lio_listio_2_2_5(LIO_NOWAIT, list, 1, &sev), 0);
	cr_assert_eq(t_wait(&cb), 0);
	/* The lower-numbered real-time signal is taken first. */
	cr_assert_eq(sigtimedwait(&set, &si, &ts), SIGRTMIN + 7);
	cr_assert_eq(sigtimedwait(&set, &si, &ts), SIGRTMIN + 8);
	cr_assert_eq(sigtimedwait(&set, &si, &zero), -1, "signal %d too", si.si_signo);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	close(fd);
}

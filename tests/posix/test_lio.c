/* SPDX-License-Identifier: MIT */
/*
 * lio_listio: LIO_WAIT and LIO_NOWAIT, LIO_NOP and NULL entries, the
 * list-wide notification, EIO when an element failed, bad modes and
 * opcodes, and the elements' own notifications.
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <unistd.h>

#include "t_px.h"

TestSuite(lio, .init = t_setup, .fini = t_teardown);

enum { N = 16 };
static char bufs[N][4096];
static struct aiocb cbs[N];
static struct aiocb *list[N];

static void reads(int fd)
{
	for (int i = 0; i < N; i++) {
		t_cb(&cbs[i], fd, bufs[i], 4096, (off_t)(N - i) * 4096, LIO_READ);
		list[i] = &cbs[i];
	}
}

static void check_reads(unsigned seed)
{
	for (int i = 0; i < N; i++) {
		cr_assert_eq(aio_error(&cbs[i]), 0);
		cr_assert_eq(aio_return(&cbs[i]), 4096);
		t_check(bufs[i], 4096, (uint64_t)(N - i) * 4096, seed);
	}
}

/* lio_listio(mode) of list[0..n) must fail: -1, errno err. */
static void listio_fails(int mode, int n, int err)
{
	errno = 0;
	cr_assert_eq(lio_listio(mode, list, n, NULL), -1, "lio_listio(%d) of %d", mode, n);
	cr_assert_eq(errno, err, "lio_listio(%d) of %d: errno %d, want %d", mode, n, errno, err);
}

/* Element i failed in its request: aio_error err, aio_return -1. */
static void element_failed(int i, int err)
{
	cr_assert_eq(aio_error(&cbs[i]), err, "element %d: error %d, want %d", i,
		     aio_error(&cbs[i]), err);
	cr_assert_eq(aio_return(&cbs[i]), -1, "element %d", i);
}

Test(lio, wait_returns_with_everything_complete)
{
	int fd = t_file((N + 1) * 4096, 20);

	t_cold(fd);
	reads(fd);
	cr_assert_eq(lio_listio(LIO_WAIT, list, N, NULL), 0);
	check_reads(20);
	close(fd);
}

Test(lio, nowait_then_suspend)
{
	int fd = t_file((N + 1) * 4096, 21);

	t_cold(fd);
	reads(fd);
	cr_assert_eq(lio_listio(LIO_NOWAIT, list, N, NULL), 0);
	for (int i = 0; i < N; i++)
		cr_assert_eq(t_wait(&cbs[i]), 0);
	check_reads(21);
	close(fd);
}

Test(lio, nop_and_null_entries_are_skipped)
{
	int fd = t_file((N + 1) * 4096, 22);

	reads(fd);
	cbs[3].aio_lio_opcode = LIO_NOP;
	cbs[3].__error_code = 4242;
	list[5] = NULL;
	cr_assert_eq(lio_listio(LIO_WAIT, list, N, NULL), 0);
	/* A NOP element is not touched. */
	cr_assert_eq(aio_error(&cbs[3]), 4242);
	for (int i = 0; i < N; i++)
		if (i != 3 && i != 5)
			cr_assert_eq(aio_return(&cbs[i]), 4096);
	/* Nothing to do at all: LIO_WAIT returns at once. */
	cr_assert_eq(lio_listio(LIO_WAIT, list, 0, NULL), 0);
	close(fd);
}

Test(lio, bad_mode_is_einval)
{
	int fd = t_file(4096, 23);

	reads(fd);
	listio_fails(7, 1, EINVAL);
	close(fd);
}

/* An element failing in its request (bad fd): LIO_WAIT says EIO; the
 * others complete normally. */
Test(lio, wait_with_a_failed_element_is_eio)
{
	int fd = t_file((N + 1) * 4096, 24);

	reads(fd);
	cbs[2].aio_fildes = -1;
	listio_fails(LIO_WAIT, N, EIO);
	element_failed(2, EBADF);
	for (int i = 0; i < N; i++)
		if (i != 2)
			cr_assert_eq(aio_return(&cbs[i]), 4096);
	close(fd);
}

/* A bad lio_opcode is the element's EINVAL, found in the request. */
Test(lio, bad_opcode_is_the_elements_einval)
{
	int fd = t_file((N + 1) * 4096, 25);

	reads(fd);
	cbs[1].aio_lio_opcode = 77;
	listio_fails(LIO_WAIT, 4, EIO);
	element_failed(1, EINVAL);
	cr_assert_eq(aio_return(&cbs[0]), 4096);
	cr_assert_eq(aio_return(&cbs[3]), 4096);
	close(fd);
}

/* A bad priority is refused at submit: LIO_NOWAIT returns -1 (with the
 * errno below), the other elements still run. */
Test(lio, nowait_with_a_refused_element)
{
	int fd = t_file((N + 1) * 4096, 26);

	reads(fd);
	cbs[0].aio_reqprio = -1;
	listio_fails(LIO_NOWAIT, 4, EINVAL);
	cr_assert_eq(aio_error(&cbs[0]), EINVAL);
	for (int i = 1; i < 4; i++)
		T_RETURNS(&cbs[i], 4096);
	close(fd);
}

static atomic_int sig_count, sig_code, sig_value;

static void on_sig(int sig, siginfo_t *si, void *uc)
{
	(void)sig; (void)uc;
	atomic_store(&sig_code, si->si_code);
	atomic_store(&sig_value, si->si_value.sival_int);
	atomic_fetch_add(&sig_count, 1);
}

/* The list's signal comes once, after every element is complete: of a
 * list of misses, or (cached) of reads the page cache holds, which the
 * drop-in completes inside lio_listio. */
static void list_signal_case(bool cached)
{
	struct sigaction sa = { .sa_sigaction = on_sig, .sa_flags = SA_SIGINFO };
	struct sigevent sev = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGRTMIN + 1 };
	sigset_t set, old;
	int fd = t_file((N + 1) * 4096, 27);

	sigemptyset(&sa.sa_mask);
	cr_assert_eq(sigaction(SIGRTMIN + 1, &sa, NULL), 0);
	sigemptyset(&set);
	sigaddset(&set, SIGRTMIN + 1);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	reads(fd);
	if (cached)
		cr_assert_eq(lio_listio(LIO_WAIT, list, N, NULL), 0);
	else
		t_cold(fd);
	reads(fd);
	sev.sigev_value.sival_int = 777;
	cr_assert_eq(lio_listio(LIO_NOWAIT, list, N, &sev), 0);
	for (int i = 0; i < N; i++)
		cr_assert_eq(t_wait(&cbs[i]), 0);
	/* Take it synchronously: exactly one, with the list's value. */
	siginfo_t si;
	struct timespec ts = { T_WAIT_SEC, 0 };
	cr_assert_eq(sigtimedwait(&set, &si, &ts), SIGRTMIN + 1);
	cr_assert_eq(si.si_code, SI_ASYNCIO);
	cr_assert_eq(si.si_value.sival_int, 777);
	cr_assert_eq(si.si_pid, getpid());
	struct timespec zero = { 0, 0 };
	cr_assert_eq(sigtimedwait(&set, &si, &zero), -1, "a second list signal");
	check_reads(27);
	/* An empty list still notifies. */
	list[0] = NULL;
	cr_assert_eq(lio_listio(LIO_NOWAIT, list, 1, &sev), 0);
	cr_assert_eq(sigtimedwait(&set, &si, &ts), SIGRTMIN + 1);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	close(fd);
}

Test(lio, nowait_list_signal)
{
	list_signal_case(false);
}

Test(lio, nowait_list_signal_of_cache_hits)
{
	list_signal_case(true);
}

/* A list of reads the page cache holds, after a first list: the drop-in
 * completes every element inside lio_listio (glibc's may be in progress).
 * A page evicted meanwhile (a loaded machine) makes its element a miss:
 * the list is warmed and made again. */
Test(lio, cache_hits_complete_in_the_call)
{
	int fd = t_file((N + 1) * 4096, 31);
	bool all_done = false;

	reads(fd);
	cr_assert_eq(lio_listio(LIO_WAIT, list, N, NULL), 0);
	for (int tries = 0; tries < 20 && !all_done; tries++) {
		for (int i = 0; i < N; i++)
			cr_assert_eq(pread(fd, bufs[i], 4096, (off_t)(N - i) * 4096), 4096);
		memset(bufs, 0, sizeof(bufs));
		reads(fd);
		cr_assert_eq(lio_listio(LIO_NOWAIT, list, N, NULL), 0);
		all_done = true;
		for (int i = 0; i < N; i++)
			if (aio_error(&cbs[i]) != 0)
				all_done = false;
		for (int i = 0; i < N; i++)
			cr_assert_eq(t_wait(&cbs[i]), 0);
		check_reads(31);
		all_done = all_done || !t_dropin();
	}
	cr_assert(all_done, "a list of cached reads was still in progress after lio_listio");
	close(fd);
}

/* The elements' own notifications are sent too (since GLIBC_2.4). */
Test(lio, element_signals)
{
	struct sigevent sev = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGRTMIN + 2 };
	sigset_t set, old;
	siginfo_t si;
	struct timespec ts = { T_WAIT_SEC, 0 };
	unsigned seen = 0;
	int fd = t_file((N + 1) * 4096, 28);

	sigemptyset(&set);
	sigaddset(&set, SIGRTMIN + 2);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	reads(fd);
	for (int i = 0; i < 4; i++) {
		cbs[i].aio_sigevent = sev;
		cbs[i].aio_sigevent.sigev_value.sival_int = i;
	}
	cr_assert_eq(lio_listio(LIO_WAIT, list, 4, NULL), 0);
	for (int i = 0; i < 4; i++) {
		cr_assert_eq(sigtimedwait(&set, &si, &ts), SIGRTMIN + 2);
		cr_assert_eq(si.si_code, SI_ASYNCIO);
		seen |= 1u << si.si_value.sival_int;
	}
	cr_assert_eq(seen, 0xf);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	close(fd);
}

/* Writes and reads in one list. */
Test(lio, mixed_list)
{
	int fd = t_file((N + 1) * 4096, 29);

	for (int i = 0; i < N; i++) {
		t_fill(bufs[i], 4096, (uint64_t)i * 4096, 30);
		t_cb(&cbs[i], fd, bufs[i], 4096, (off_t)i * 4096, i % 2 ? LIO_WRITE : LIO_READ);
		list[i] = &cbs[i];
	}
	cr_assert_eq(lio_listio(LIO_WAIT, list, N, NULL), 0);
	for (int i = 0; i < N; i++) {
		cr_assert_eq(aio_return(&cbs[i]), 4096);
		t_check(bufs[i], 4096, (uint64_t)i * 4096, i % 2 ? 30 : 29);
	}
	close(fd);
}

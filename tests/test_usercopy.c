/* SPDX-License-Identifier: MIT */
/*
 * The fault-safe copy alone (lib/base/usercopy.c, linked without the rest
 * of the engine): every kind of bad address is -EFAULT, good memory is
 * copied, and the fault handler leaves every other fault to whoever had it
 * before: the program's handler, a handler installed after it that passes
 * faults on, or the default action. Each test runs in its own process, so
 * each installs the handler afresh.
 */
#include "t_helpers.h"

#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "thread.h"
#include "usercopy.h"

#define PAGE 4096u

TestSuite(usercopy, .init = t_setup, .fini = t_teardown, .timeout = 60);

/* Two pages: the first read-write, the second with protection prot2 (or
 * unmapped when prot2 is -1). */
static char *two_pages(int prot2)
{
	char *p = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	cr_assert_neq(p, MAP_FAILED);
	memset(p, 'a', 2 * PAGE);
	if (prot2 < 0)
		cr_assert_eq(munmap(p + PAGE, PAGE), 0);
	else
		cr_assert_eq(mprotect(p + PAGE, PAGE, prot2), 0);
	return p;
}

static void *const bad[] = {
	NULL,
	(void *)(uintptr_t)8,
	(void *)(uintptr_t)0xffffffff81000000ull,       /* kernel text */
	(void *)(uintptr_t)0x0000800000000000ull,       /* past 4-level user space */
	(void *)(uintptr_t)0x8000000000000000ull,       /* non-canonical */
	(void *)(uintptr_t)-1,
};

Test(usercopy, good_memory_is_copied_at_any_alignment)
{
	char src[300], dst[300];

	for (unsigned i = 0; i < sizeof(src); i++)
		src[i] = (char)i;
	for (unsigned off = 0; off < 8; off++) {
		memset(dst, 0, sizeof(dst));
		cr_assert_eq(fsaio__copy_user(dst + off, src + 1, 250), 0);
		cr_assert_eq(memcmp(dst + off, src + 1, 250), 0);
	}
	cr_assert_eq(fsaio__copy_user(dst, bad[2], 0), 0, "nothing to copy is never a fault");
	cr_assert(fsaio__user_faults_armed());
}

Test(usercopy, bad_addresses_are_efault_either_way)
{
	char buf[64];

	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(fsaio__copy_user(buf, bad[i], 16), -EFAULT, "from bad[%u]", i);
		cr_assert_eq(fsaio__copy_user(bad[i], buf, 16), -EFAULT, "to bad[%u]", i);
	}
}

Test(usercopy, unmapped_none_and_read_only_pages)
{
	char buf[64] = { 0 };
	char *gone = two_pages(-1), *none = two_pages(PROT_NONE), *ro = two_pages(PROT_READ);

	cr_assert_eq(fsaio__copy_user(buf, gone + PAGE, 8), -EFAULT);
	cr_assert_eq(fsaio__copy_user(buf, none + PAGE, 8), -EFAULT);
	cr_assert_eq(fsaio__copy_user(none + PAGE, buf, 8), -EFAULT);
	/* A read-only page can be read and not written; it is left as it was. */
	cr_assert_eq(fsaio__copy_user(buf, ro + PAGE, 8), 0);
	cr_assert_eq(buf[0], 'a');
	memset(buf, 'z', sizeof(buf));
	cr_assert_eq(fsaio__copy_user(ro + PAGE, buf, 8), -EFAULT);
	cr_assert_eq(ro[PAGE], 'a');
	/* Straddling: good bytes, then the bad page. */
	cr_assert_eq(fsaio__copy_user(buf, gone + PAGE - 8, 16), -EFAULT);
	cr_assert_eq(fsaio__copy_user(buf, none + PAGE - 8, 16), -EFAULT);
	cr_assert_eq(fsaio__copy_user(ro + PAGE - 8, buf, 16), -EFAULT);
	cr_assert_eq(fsaio__copy_user(buf, ro + PAGE - 8, 16), 0);
	/* The same for a copy long enough to go another way (rep movsb). */
	char big[2 * PAGE];

	cr_assert_eq(fsaio__copy_user(big, gone, PAGE), 0);
	cr_assert_eq(fsaio__copy_user(big, gone + 3, PAGE), -EFAULT);
	cr_assert_eq(fsaio__copy_user(big, none + PAGE - 600, 1200), -EFAULT);
	cr_assert_eq(fsaio__copy_user(ro + PAGE - 600, big, 1200), -EFAULT);
	cr_assert_eq(fsaio__copy_user(big, ro + 5, PAGE + 100), 0);
}

Test(usercopy, rw_ok_touches_every_page)
{
	char *gone = two_pages(-1), *ro = two_pages(PROT_READ), *rw = two_pages(PROT_READ | PROT_WRITE);

	cr_assert_eq(fsaio__user_rw_ok(rw + PAGE - 8, 16), 0);
	cr_assert_eq(rw[PAGE - 8], 'a', "what it touched is as it was");
	cr_assert_eq(fsaio__user_rw_ok(rw, 2 * PAGE), 0);
	cr_assert_eq(fsaio__user_rw_ok(ro, 8), 0);
	cr_assert_eq(fsaio__user_rw_ok(ro + PAGE - 8, 16), -EFAULT);
	cr_assert_eq(fsaio__user_rw_ok(ro + PAGE, 1), -EFAULT);
	cr_assert_eq(fsaio__user_rw_ok(gone + PAGE - 1, 2), -EFAULT);
	cr_assert_eq(fsaio__user_rw_ok(bad[3], 8), -EFAULT);
	cr_assert_eq(fsaio__user_rw_ok((void *)(uintptr_t)-8, 16), -EFAULT, "wraps around");
}

/* A file mapping past the file's end: the kernel sends SIGBUS. */
Test(usercopy, sigbus_past_end_of_file)
{
	int fd = t_tmpfile(2 * PAGE, 1);
	char buf[16];
	char *m = mmap(NULL, 2 * PAGE, PROT_READ, MAP_SHARED, fd, 0);

	cr_assert_neq(m, MAP_FAILED);
	cr_assert_eq(ftruncate(fd, PAGE), 0);
	cr_assert_eq(fsaio__copy_user(buf, m, sizeof(buf)), 0);
	cr_assert_eq(fsaio__copy_user(buf, m + PAGE, sizeof(buf)), -EFAULT);
	munmap(m, 2 * PAGE);
	close(fd);
}

/* The engine's threads block every signal but the faults. */
static void *copy_on_thread(void *arg)
{
	char buf[8];

	*(int *)arg = fsaio__copy_user(buf, bad[3], sizeof(buf));
	return NULL;
}

Test(usercopy, on_an_engine_thread)
{
	pthread_t t;
	int ret = 1;

	cr_assert_eq(fsaio__thread_start(&t, 0, copy_on_thread, &ret), 0);
	pthread_join(t, NULL);
	cr_assert_eq(ret, -EFAULT);
}

/* A program's own handler, installed before or after the library's. */
static sigjmp_buf jump;
static volatile sig_atomic_t program_faults;
static struct sigaction library_action;

static void program_handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig, (void)si, (void)uc;
	program_faults++;
	siglongjmp(jump, 1);
}

/* A handler that passes on what it does not own, as sanitizers and
 * runtimes do: here it owns nothing. */
static void chaining_handler(int sig, siginfo_t *si, void *uc)
{
	program_faults++;
	library_action.sa_sigaction(sig, si, uc);
}

static void install(void (*fn)(int, siginfo_t *, void *), struct sigaction *old)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = fn;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	cr_assert_eq(sigaction(SIGSEGV, &sa, old), 0);
}

static void fault_in_program(void)
{
	if (!sigsetjmp(jump, 1))
		(void)*(volatile char *)bad[3];
}

Test(usercopy, program_handler_installed_before_still_gets_its_faults)
{
	char buf[8];

	install(program_handler, NULL);
	cr_assert_eq(fsaio__copy_user(buf, bad[3], sizeof(buf)), -EFAULT);
	cr_assert_eq(program_faults, 0, "the library's own fault is not passed on");
	fault_in_program();
	cr_assert_eq(program_faults, 1, "the program's fault reaches its handler");
	cr_assert_eq(fsaio__copy_user(buf, bad[3], sizeof(buf)), -EFAULT);
	cr_assert_eq(program_faults, 1);
}

Test(usercopy, handler_installed_after_that_passes_faults_on)
{
	char buf[8];

	cr_assert(fsaio__user_faults_armed());
	install(chaining_handler, &library_action);
	cr_assert(library_action.sa_flags & SA_SIGINFO);
	cr_assert_eq(fsaio__copy_user(buf, bad[3], sizeof(buf)), -EFAULT);
	cr_assert_eq(program_faults, 1, "the later handler saw the fault and passed it on");
}

/* In a child: status of its end. */
static int child_status(void (*fn)(void))
{
	int status;
	pid_t pid = fork();

	cr_assert_neq(pid, -1);
	if (!pid) {
		fn();
		_exit(0);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	return status;
}

static void armed_then_program_fault(void)
{
	struct rlimit none = { 0, 0 };

	setrlimit(RLIMIT_CORE, &none);
	if (!fsaio__user_faults_armed())
		_exit(3);
	(void)*(volatile char *)bad[3];
	_exit(4);
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define T_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define T_SANITIZER 1
#endif
#endif

Test(usercopy, default_action_still_kills_on_a_program_fault)
{
	int st = child_status(armed_then_program_fault);

#ifdef T_SANITIZER
	/* The sanitizer's handler had it before: it reports and ends the
	 * process its own way. */
	cr_assert(WIFSIGNALED(st) || (WIFEXITED(st) && WEXITSTATUS(st) != 0 &&
				     WEXITSTATUS(st) != 3 && WEXITSTATUS(st) != 4),
		  "status %#x", st);
#else
	cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV, "status %#x", st);
#endif
}

static void ignored_and_sent(void)
{
	char buf[8];

	signal(SIGSEGV, SIG_IGN);
	if (fsaio__copy_user(buf, bad[3], sizeof(buf)) != -EFAULT)
		_exit(3);
	kill(getpid(), SIGSEGV);
	if (fsaio__copy_user(buf, bad[3], sizeof(buf)) != -EFAULT)
		_exit(4);
}

Test(usercopy, a_sent_signal_the_program_ignores_stays_ignored)
{
	int st = child_status(ignored_and_sent);

	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %#x", st);
}

static void without_handler(void)
{
	char buf[8], src[8] = "1234567";
	struct sigaction before, after;

	sigaction(SIGSEGV, NULL, &before);
	setenv("FSAIO_FAULT_HANDLER", "0", 1);
	if (fsaio__user_faults_armed())
		_exit(3);
	if (fsaio__copy_user(buf, bad[3], sizeof(buf)) != -EFAULT ||
	    fsaio__copy_user(buf, src, sizeof(buf)) != 0 || memcmp(buf, src, 8))
		_exit(4);
	sigaction(SIGSEGV, NULL, &after);
	if (after.sa_sigaction != before.sa_sigaction)
		_exit(5);
}

Test(usercopy, fault_handler_0_copies_through_the_kernel)
{
	int st = child_status(without_handler);

	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %#x", st);
}

/* SPDX-License-Identifier: MIT */
/*
 * The runner behind t_runner.h (ThreadSanitizer builds only; see there).
 *
 * The runner process itself starts no thread, so forking a test from it is
 * what Criterion's sandbox gives: a fresh single-threaded process per test.
 * A test passes when its process exits 0; a failed assertion, a crash, a
 * sanitizer report (halt_on_error) or the timeout fails it. Usage:
 *   test_x [PATTERN]   run the tests whose "suite/name" matches PATTERN
 * A test process that exits T_SKIP_STATUS (77, meson's "skipped") was
 * skipped: it said why on stdout. A program whose every test skipped
 * exits 77 itself.
 */
#include "t_runner.h"

#include <fnmatch.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define T_DEFAULT_TIMEOUT 120.0

/* In definition order (constructors run in that order within a file). */
static struct t_case *t_cases, **t_cases_tail = &t_cases;
static struct t_suite *t_suites;
/* In the test process: the fini to run when an assertion fails, once. */
static void (*t_cur_fini)(void);
static bool t_in_fini;

void t_register_case(struct t_case *c)
{
	c->next = NULL;
	*t_cases_tail = c;
	t_cases_tail = &c->next;
}

void t_register_suite(struct t_suite *s)
{
	s->next = t_suites;
	t_suites = s;
}

/* The test's fini, once, as Criterion runs it after a failure or a skip. */
static void run_fini(void)
{
	if (t_cur_fini && !t_in_fini) {
		t_in_fini = true;
		t_cur_fini();
	}
}

_Noreturn void t_skip(void)
{
	fflush(stdout);
	run_fini();
	_exit(T_SKIP_STATUS);
}

_Noreturn void t_fail(const char *file, int line, const char *expr, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "[----] %s:%d: Assertion Failed: %s\n[----]  %s\n", file, line, expr, msg);
	fflush(stderr);
	run_fini();
	_exit(1);
}

static const struct t_suite *suite_of(const struct t_case *c)
{
	for (const struct t_suite *s = t_suites; s; s = s->next)
		if (!strcmp(s->name, c->suite))
			return s;
	return NULL;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int run_one(const struct t_case *c)
{
	const struct t_suite *s = suite_of(c);
	struct t_opts o = s ? s->opts : (struct t_opts){ 0 };

	if (c->opts.init)
		o.init = c->opts.init;
	if (c->opts.fini)
		o.fini = c->opts.fini;
	if (c->opts.timeout > 0)
		o.timeout = c->opts.timeout;
	if (o.timeout <= 0)
		o.timeout = T_DEFAULT_TIMEOUT;

	double t0 = now();
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		perror("fork");
		return 1;
	}
	if (pid == 0) {
		alarm((unsigned)o.timeout + 1);
		if (o.init)
			o.init();
		t_cur_fini = o.fini;
		c->fn();
		if (o.fini) {
			t_in_fini = true;
			o.fini();
		}
		fflush(NULL);
		_exit(0);
	}
	int status;
	while (waitpid(pid, &status, 0) < 0)
		;
	double dt = now() - t0;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		printf("[PASS] %s::%s: (%.2fs)\n", c->suite, c->name, dt);
		return 0;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == T_SKIP_STATUS) {
		printf("[SKIP] %s::%s: (%.2fs)\n", c->suite, c->name, dt);
		return T_SKIP_STATUS;
	}
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
		printf("[FAIL] %s::%s: Timed out. (%.2fs)\n", c->suite, c->name, dt);
	else if (WIFSIGNALED(status))
		printf("[FAIL] %s::%s: CRASH, signal %d (%.2fs)\n", c->suite, c->name, WTERMSIG(status), dt);
	else
		printf("[FAIL] %s::%s: exit status %d (%.2fs)\n", c->suite, c->name, WEXITSTATUS(status), dt);
	return 1;
}

int main(int argc, char **argv)
{
	const char *pattern = argc > 1 ? argv[1] : NULL;
	unsigned passed = 0, failed = 0, skipped = 0;

	for (const struct t_case *c = t_cases; c; c = c->next) {
		char full[256];
		snprintf(full, sizeof(full), "%s/%s", c->suite, c->name);
		if (c->opts.disabled || (pattern && fnmatch(pattern, full, 0) != 0))
			continue;
		int r = run_one(c);
		if (r == T_SKIP_STATUS)
			skipped++;
		else if (r)
			failed++;
		else
			passed++;
		fflush(stdout);
	}
	printf("%u passed, %u failed, %u skipped\n", passed, failed, skipped);
	if (failed)
		return 1;
	return skipped && !passed ? T_SKIP_STATUS : 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * A stand-in for the part of Criterion the core tests use, for the
 * ThreadSanitizer build only.
 *
 * Why: Criterion's sandbox (BoxFort) maps a shared arena at a random address
 * in [0x200000000000, 0x7f0000000000), which ThreadSanitizer has reserved
 * for its shadow memory, so every Criterion binary built with
 * -fsanitize=thread aborts at start ("Could not initialize inheritable
 * arena"). The tests themselves are unchanged: this header gives Test(),
 * TestSuite() and the cr_assert family the same meaning, and t_runner.c
 * runs each test in its own forked process with its suite's init, fini and
 * timeout, as Criterion does (sequentially, not in parallel).
 */
#ifndef T_RUNNER_H
#define T_RUNNER_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <stdbool.h>
#include <stddef.h>

struct t_opts {
	void (*init)(void);
	void (*fini)(void);
	double timeout;         /* seconds; 0 means the runner's default */
	bool disabled;
	const char *description;
};

struct t_case {
	const char *suite, *name;
	void (*fn)(void);
	struct t_opts opts;
	struct t_case *next;
};

struct t_suite {
	const char *name;
	struct t_opts opts;
	struct t_suite *next;
};

/* The exit status of a test process that skipped itself (meson's). */
#define T_SKIP_STATUS 77

void t_register_case(struct t_case *c);
void t_register_suite(struct t_suite *s);
/* End the test process as skipped, after the test's fini. */
_Noreturn void t_skip(void);
/* Report a failed assertion, run the test's fini, end the test process. */
_Noreturn void t_fail(const char *file, int line, const char *expr, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#define TestSuite(sname, ...)							\
	static struct t_suite t_suite_##sname = {				\
		.name = #sname, .opts = { __VA_ARGS__ } };			\
	__attribute__((constructor)) static void t_suite_reg_##sname(void)	\
	{									\
		t_register_suite(&t_suite_##sname);				\
	}

#define Test(sname, tname, ...)							\
	static void sname##_##tname##_impl(void);				\
	static struct t_case t_case_##sname##_##tname = {			\
		.suite = #sname, .name = #tname,				\
		.fn = sname##_##tname##_impl, .opts = { __VA_ARGS__ } };	\
	__attribute__((constructor)) static void				\
	t_case_reg_##sname##_##tname(void)					\
	{									\
		t_register_case(&t_case_##sname##_##tname);			\
	}									\
	static void sname##_##tname##_impl(void)

/* The message is optional, as in Criterion; the leading space keeps the
 * format string from being empty when it is left out. */
#define cr_assert(cond, ...) do {						\
	if (!(cond))								\
		t_fail(__FILE__, __LINE__, #cond, " " __VA_ARGS__);		\
} while (0)
#define cr_assert_not(cond, ...) cr_assert(!(cond), __VA_ARGS__)
#define cr_assert_eq(a, b, ...) cr_assert((a) == (b), __VA_ARGS__)
#define cr_assert_neq(a, b, ...) cr_assert((a) != (b), __VA_ARGS__)
#define cr_assert_lt(a, b, ...) cr_assert((a) < (b), __VA_ARGS__)
#define cr_assert_leq(a, b, ...) cr_assert((a) <= (b), __VA_ARGS__)
#define cr_assert_gt(a, b, ...) cr_assert((a) > (b), __VA_ARGS__)
#define cr_assert_geq(a, b, ...) cr_assert((a) >= (b), __VA_ARGS__)
#define cr_assert_str_eq(a, b, ...) cr_assert(strcmp((a), (b)) == 0, __VA_ARGS__)
#define cr_assert_null(p, ...) cr_assert((p) == NULL, __VA_ARGS__)
#define cr_assert_not_null(p, ...) cr_assert((p) != NULL, __VA_ARGS__)
/* End the test as skipped (exit T_SKIP_STATUS), saying why on stdout. */
#define cr_skip_test(...) do {							\
	printf("skipped: " __VA_ARGS__);					\
	printf("\n");								\
	t_skip();								\
} while (0)
#define cr_assert_fail(...) t_fail(__FILE__, __LINE__, "fail", " " __VA_ARGS__)

#endif /* T_RUNNER_H */

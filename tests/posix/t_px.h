/* SPDX-License-Identifier: MIT */
/*
 * Helpers of the POSIX AIO drop-in's tests.
 *
 * Every test here is a real POSIX AIO program: it includes <aio.h> and
 * calls aio_read, lio_listio, ... The same binary runs on glibc
 * (T_PX_MODE=glibc) and with libfsaio-posixaio.so preloaded
 * (T_PX_MODE=preload); a second binary of some is linked with
 * -lfsaio-posixaio (T_PX_MODE=linked). t_setup asserts that aio_read really
 * comes from where the mode says. A rule passing in every mode is the
 * proof that the drop-in and glibc agree; where they differ by design
 * (dropin/posix/README.md) the test asserts each side's outcome, and says so.
 *
 * Files live in a directory made under $FSAIO_TEST_BUILDDIR (the build
 * tree, on disk), removed at teardown.
 */
#ifndef T_PX_H
#define T_PX_H

#include "../t_files.h"

#include <aio.h>
#ifdef T_NO_CRITERION
#include "../t_runner.h"    /* ThreadSanitizer builds: see t_runner.h */
#else
#include <criterion/criterion.h>
#endif
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

/* A bound for a completion that must come; generous for a loaded machine. */
#define T_WAIT_SEC 30

const char *t_mode(void);
/* Running on the drop-in (preloaded or linked), not on glibc. */
bool t_dropin(void);

void t_setup(void);
void t_teardown(void);


/* Fill an aiocb (everything else zero, SIGEV_NONE). */
void t_cb(struct aiocb *cb, int fd, void *buf, size_t len, off_t off, int op);
/* t_cb of a read, then aio_read, which must take it. */
void t_read_start(struct aiocb *cb, int fd, void *buf, size_t len, off_t off);
/* t_cb of a write, then aio_write, which must take it. */
void t_write_start(struct aiocb *cb, int fd, void *buf, size_t len, off_t off);
/* Wait until cb is no longer EINPROGRESS (within T_WAIT_SEC); its error. */
int t_wait(struct aiocb *cb);
/* Assert that cb is still in progress after a 50 ms aio_suspend: it
 * returns -1 with EAGAIN and aio_error stays EINPROGRESS; what names the
 * case in failure messages. */
void t_still_waits(const struct aiocb *cb, const char *what);
/* Wait for cb (t_wait), then assert it ended without error and that its
 * aio_return is want; a macro, so that a failure names the test's line. */
#define T_RETURNS(cb, want) do {					\
	cr_assert_eq(t_wait(cb), 0);					\
	cr_assert_eq(aio_return(cb), (want));				\
} while (0)
/* cb reads from a pipe or socket whose other end is wfd: assert it is still
 * in progress, write data there, and assert it completes without error;
 * its aio_return. */
ssize_t t_feed(struct aiocb *cb, int wfd, const char *data);
/* Close both ends of a pipe or socket pair. */
void t_close_pair(const int p[2]);

#endif /* T_PX_H */

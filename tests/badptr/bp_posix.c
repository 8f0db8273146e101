/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: POSIX AIO's cases: the aiocb of aio_read, aio_write, aio_fsync,
 * aio_error, aio_return and aio_cancel, aio_read's buffer and its
 * SIGEV_THREAD attributes, aio_suspend's list, an entry of it and its
 * timeout, lio_listio's list, its elements and its sigevent. Without a
 * preload the answers are glibc's; with the drop-in preloaded, the
 * drop-in's.
 *
 * glibc reads and writes most of these in the caller's thread and crashes
 * on a bad one; the drop-in may answer EFAULT there instead, and the
 * table of allowed differences below says where. A request's result is
 * read with aio_error/aio_return once it is no longer in progress; a
 * request that waits is a read of an empty pipe, fed a byte after the
 * call under test.
 */
#include <aio.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/select.h>
#include <time.h>
#include <unistd.h>

#include "bp.h"

#define DATA 8192
#define DATA_GOOD 4196

/*
 * The calls under test, through pointers. glibc declares their pointer
 * arguments __nonnull: a NULL written in a direct call is undefined
 * behaviour to the compiler (and UBSan stops the program before the
 * call), where a program whose variable holds NULL makes the call. The
 * drop-in and glibc must be asked that call.
 */
static int (*const volatile call_read)(struct aiocb *) = aio_read;
static int (*const volatile call_write)(struct aiocb *) = aio_write;
static int (*const volatile call_fsync)(int, struct aiocb *) = aio_fsync;
static int (*const volatile call_error)(const struct aiocb *) = aio_error;
static ssize_t (*const volatile call_return)(struct aiocb *) = aio_return;
static int (*const volatile call_cancel)(int, struct aiocb *) = aio_cancel;
static int (*const volatile call_suspend)(const struct aiocb *const[], int,
					  const struct timespec *) = aio_suspend;
static int (*const volatile call_lio)(int, struct aiocb *const[], int,
				      struct sigevent *) = lio_listio;

static long r_ret;
static int r_err;
#define CALL(expr) do {						\
	errno = 0;						\
	r_ret = (long)(expr);					\
	r_err = errno;						\
} while (0)

/* "= 0", "= -1 EFAULT"; errno named if a call that worked changed it. */
static void say_call(void)
{
	if (r_ret == -1)
		bp_say("= -1 %s", bp_errname(r_err));
	else
		bp_say("= %ld", r_ret);
	if (r_ret != -1 && r_err)
		bp_say("errno=%s", bp_errname(r_err));
}

static void rd(struct aiocb *cb, int fd, void *buf, size_t n, off_t off)
{
	memset(cb, 0, sizeof(*cb));
	cb->aio_fildes = fd;
	cb->aio_buf = buf;
	cb->aio_nbytes = n;
	cb->aio_offset = off;
	cb->aio_lio_opcode = LIO_READ;
	cb->aio_sigevent.sigev_notify = SIGEV_NONE;
}

/* The requests a case reaps: name and aiocb. */
static struct {
	const char *label;
	struct aiocb *cb;
} req[4];
static int nreq;

static void follow(const char *label, struct aiocb *cb)
{
	if (nreq < 4)
		req[nreq++] = (__typeof__(req[0])){ label, cb };
}

/* Wait until cb is no longer in progress (within BP_WAIT_SEC); its
 * error, EINPROGRESS if it never ended. */
static int wait_done(struct aiocb *cb)
{
	const struct aiocb *list[1] = { cb };
	struct timespec end, now;
	int e;

	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += BP_WAIT_SEC;
	while ((e = aio_error(cb)) == EINPROGRESS) {
		struct timespec ts = { 0, 100 * 1000 * 1000 };

		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > end.tv_sec ||
		    (now.tv_sec == end.tv_sec && now.tv_nsec >= end.tv_nsec))
			break;
		aio_suspend(list, 1, &ts);
	}
	return e;
}

/* What the followed requests ended with: "| ev 2: p=1 r0=4096", a
 * request still in progress as -EINPROGRESS. */
static long long reap_res[4];

static void reap(void)
{
	struct bp_ev out[4];

	for (int i = 0; i < nreq; i++) {
		int e = wait_done(req[i].cb);

		out[i].label = req[i].label;
		out[i].res2 = 0;
		if (e == EINPROGRESS)
			out[i].res = -EINPROGRESS;
		else
			out[i].res = e ? -e : (long long)aio_return(req[i].cb);
		reap_res[i] = out[i].res;
	}
	bp_say("|");
	bp_say_events("ev", out, nreq);
}

/* A read that waits: one byte from an empty pipe; the write end. */
static struct aiocb pipe_cb;

static int pipe_read(void)
{
	static char b;
	int p[2];

	if (pipe2(p, O_CLOEXEC) < 0)
		bp_stop("fixture: pipe: %s", bp_errname(errno));
	rd(&pipe_cb, p[0], &b, 1, 0);
	if (aio_read(&pipe_cb) < 0)
		bp_stop("fixture: aio_read: %s", bp_errname(errno));
	return p[1];
}

static void feed(int wfd)
{
	if (write(wfd, "x", 1) != 1)
		bp_stop("fixture: write: %s", bp_errname(errno));
}

/* A read of 4096 bytes at 0, submitted and complete. */
static void done_read(struct aiocb *cb)
{
	rd(cb, bp_fd_read, bp_pages(4096), 4096, 0);
	if (aio_read(cb) < 0 || wait_done(cb) != 0)
		bp_stop("fixture: a read that completes did not");
}

/* -------------------------------------------------------------- cases */

/* aio_read, aio_write or aio_fsync with the aiocb of kind k (its fd and
 * opcode in the good page when it straddles). */
enum { OP_READ, OP_WRITE, OP_FSYNC };

static void submit_case(enum bp_kind k, int op)
{
	struct aiocb t;
	struct aiocb *cb;

	if (op == OP_READ)
		rd(&t, bp_fd_read, bp_pages(4096), 4096, 0);
	else
		rd(&t, bp_fd_write, memset(bp_pages(4096), 'w', 4096), 4096, 0);
	if (op == OP_WRITE)
		t.aio_lio_opcode = LIO_WRITE;
	cb = bp_place(k, &t, sizeof(t), 8);
	follow(op == OP_READ ? "r0" : op == OP_WRITE ? "w0" : "sync", cb);
	if (op == OP_READ)
		CALL(call_read(cb));
	else if (op == OP_WRITE)
		CALL(call_write(cb));
	else
		CALL(call_fsync(O_SYNC, cb));
	say_call();
	if (r_ret == 0)
		reap();
}

static void c_read_aiocb(unsigned w, enum bp_kind k) { (void)w; submit_case(k, OP_READ); }
static void c_write_aiocb(unsigned w, enum bp_kind k) { (void)w; submit_case(k, OP_WRITE); }
static void c_fsync_aiocb(unsigned w, enum bp_kind k) { (void)w; submit_case(k, OP_FSYNC); }

/* aio_read into a buffer of kind k (4196 good bytes when it straddles). */
static void c_read_buf(unsigned w, enum bp_kind k)
{
	struct aiocb cb;
	char *b = bp_place(k, NULL, DATA, DATA_GOOD);

	(void)w;
	rd(&cb, bp_fd_read, b, DATA, 0);
	follow("r0", &cb);
	CALL(call_read(&cb));
	say_call();
	if (r_ret != 0)
		return;
	reap();
	if (reap_res[0] > 0 && (k == BP_GOOD || k == BP_MISALIGNED || k == BP_STRADDLE)) {
		size_t n = (size_t)reap_res[0];

		if (k == BP_STRADDLE && n > DATA_GOOD)
			n = DATA_GOOD;
		bp_say(bp_data_ok(b, n, 0) ? "data ok" : "data BAD");
	}
}

/* SIGEV_THREAD with sigev_notify_attributes of kind k: glibc reads them
 * when it starts the notification thread, at completion. The request is
 * a read of an empty pipe, fed only once the call's answer is said, and
 * nothing more is said until the notification ran: a crash at completion
 * always comes after the answer and before the rest. */
static int notify_fd = -1;

static void notified(union sigval v)
{
	(void)v;
	if (write(notify_fd, "n", 1) != 1)
		_exit(5);
}

static void c_read_attrs(unsigned w, enum bp_kind k)
{
	static char b;
	struct aiocb cb;
	pthread_attr_t attr;
	struct timeval tv = { BP_WAIT_SEC, 0 };
	fd_set set;
	int p[2], data[2];
	bool ok;
	char c;

	(void)w;
	if (pipe2(p, O_CLOEXEC) < 0 || pipe2(data, O_CLOEXEC) < 0)
		bp_stop("fixture: pipe: %s", bp_errname(errno));
	notify_fd = p[1];
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	rd(&cb, data[0], &b, 1, 0);
	cb.aio_sigevent.sigev_notify = SIGEV_THREAD;
	cb.aio_sigevent.sigev_notify_function = notified;
	cb.aio_sigevent.sigev_notify_attributes = bp_place(k, &attr, sizeof(attr), 8);
	follow("p", &cb);
	CALL(call_read(&cb));
	say_call();
	if (r_ret != 0)
		return;
	feed(data[1]);
	/* Nothing said until the notification ran (or killed us). */
	FD_ZERO(&set);
	FD_SET(p[0], &set);
	ok = select(p[0] + 1, &set, NULL, NULL, &tv) == 1 && read(p[0], &c, 1) == 1;
	reap();
	bp_say(ok ? "notified" : "not notified");
}

/* aio_error, aio_return, aio_cancel on a complete request's aiocb, copied
 * to kind k (the original when good). */
enum { ST_ERROR, ST_RETURN, ST_CANCEL };

static void status_case(enum bp_kind k, int call)
{
	struct aiocb done;
	struct aiocb *cb;

	done_read(&done);
	cb = k == BP_GOOD ? &done : bp_place(k, &done, sizeof(done), 8);
	if (call == ST_ERROR)
		CALL(call_error(cb));
	else if (call == ST_RETURN)
		CALL(call_return(cb));
	else
		CALL(call_cancel(bp_fd_read, cb));
	say_call();
}

static void c_error_aiocb(unsigned w, enum bp_kind k) { (void)w; status_case(k, ST_ERROR); }
static void c_return_aiocb(unsigned w, enum bp_kind k) { (void)w; status_case(k, ST_RETURN); }
static void c_cancel_aiocb(unsigned w, enum bp_kind k) { (void)w; status_case(k, ST_CANCEL); }

/* aio_suspend: the list {waiting pipe read, complete read} of kind k. */
static void c_suspend_list(unsigned w, enum bp_kind k)
{
	struct aiocb done;
	const struct aiocb *list[2];
	struct timespec ts = { 5, 0 };
	int wfd;

	(void)w;
	wfd = pipe_read();
	done_read(&done);
	list[0] = &pipe_cb;
	list[1] = &done;
	follow("p", &pipe_cb);
	follow("r0", &done);
	CALL(call_suspend(bp_place(k, list, sizeof(list), sizeof(list[0])), 2, &ts));
	say_call();
	feed(wfd);
	reap();
}

/* aio_suspend: the list's first entry, a complete read's aiocb copied to
 * kind k, before the waiting pipe read (a NULL entry is skipped: the call
 * waits out its 10 ms for the pipe read). */
static void c_suspend_entry(unsigned w, enum bp_kind k)
{
	struct aiocb done;
	const struct aiocb *list[2];
	struct timespec ts = { 0, 10 * 1000 * 1000 };
	int wfd;

	(void)w;
	wfd = pipe_read();
	done_read(&done);
	list[0] = k == BP_GOOD ? &done : bp_place(k, &done, sizeof(done), 8);
	list[1] = &pipe_cb;
	follow("p", &pipe_cb);
	CALL(call_suspend(list, 2, &ts));
	say_call();
	feed(wfd);
	reap();
}

/* aio_suspend of the waiting pipe read with a 10 ms timeout of kind k.
 * Without one it waits: a thread feeds the pipe after 200 ms. */
static void *feed_later(void *arg)
{
	struct timespec ts = { 0, 200 * 1000 * 1000 };

	nanosleep(&ts, NULL);
	feed((int)(intptr_t)arg);
	return NULL;
}

static void c_suspend_timeout(unsigned w, enum bp_kind k)
{
	const struct aiocb *list[1] = { &pipe_cb };
	struct timespec ts = { 0, 10 * 1000 * 1000 };
	pthread_t th;
	int wfd;

	(void)w;
	wfd = pipe_read();
	follow("p", &pipe_cb);
	if (k == BP_NULL && pthread_create(&th, NULL, feed_later, (void *)(intptr_t)wfd))
		bp_stop("fixture: pthread_create");
	CALL(call_suspend(list, 1, bp_place(k, &ts, sizeof(ts), sizeof(ts.tv_sec))));
	say_call();
	if (k == BP_NULL)
		pthread_join(th, NULL);
	else
		feed(wfd);
	reap();
}

/* lio_listio(LIO_WAIT) of two reads: the list of kind k, or one of its
 * elements (`elem`, 0 or 1). Elements in memory the case can read are
 * reaped whatever the call said: one never submitted shows its zeroed
 * status (0 bytes). */
static void lio_case(enum bp_kind k, int elem)
{
	struct aiocb t[2];
	struct aiocb *list[2], *cb[2];

	for (int i = 0; i < 2; i++) {
		rd(&t[i], bp_fd_read, bp_pages(4096), 4096, i * 4096);
		cb[i] = bp_pages(sizeof(t[i]));
		*cb[i] = t[i];
	}
	if (elem >= 0)
		cb[elem] = bp_place(k, &t[elem], sizeof(t[elem]), 8);
	list[0] = cb[0];
	list[1] = cb[1];
	for (int i = 0; i < 2; i++)
		if (elem != i || bp_readable(k))
			follow(i ? "r1" : "r0", cb[i]);
	if (elem < 0)
		CALL(call_lio(LIO_WAIT, bp_place(k, list, sizeof(list), sizeof(list[0])), 2, NULL));
	else
		CALL(call_lio(LIO_WAIT, list, 2, NULL));
	say_call();
	reap();
}

static void c_lio_list(unsigned w, enum bp_kind k) { (void)w; lio_case(k, -1); }
static void c_lio_elem0(unsigned w, enum bp_kind k) { (void)w; lio_case(k, 0); }
static void c_lio_elem1(unsigned w, enum bp_kind k) { (void)w; lio_case(k, 1); }

/* lio_listio(LIO_NOWAIT) of one read with its sigevent (SIGEV_NONE) of
 * kind k. */
static void c_lio_sig(unsigned w, enum bp_kind k)
{
	struct aiocb cb;
	struct aiocb *list[1] = { &cb };
	struct sigevent sev;

	(void)w;
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_NONE;
	rd(&cb, bp_fd_read, bp_pages(4096), 4096, 0);
	follow("r0", &cb);
	CALL(call_lio(LIO_NOWAIT, list, 1, bp_place(k, &sev, sizeof(sev), 8)));
	say_call();
	reap();
}

/* --------------------------------------------------------------- table */

#define ONE BP_WAY_ONE

static const struct bp_case cases[] = {
	{ "aio_read", "aiocb", BP_WRITE, ONE, c_read_aiocb, NULL },
	{ "aio_read", "aio_buf", BP_WRITE, ONE, c_read_buf, NULL },
	{ "aio_read", "sigev_notify_attributes", BP_READ, ONE, c_read_attrs, NULL },
	{ "aio_write", "aiocb", BP_WRITE, ONE, c_write_aiocb, NULL },
	{ "aio_fsync", "aiocb", BP_WRITE, ONE, c_fsync_aiocb, NULL },
	{ "aio_error", "aiocb", BP_READ, ONE, c_error_aiocb, NULL },
	{ "aio_return", "aiocb", BP_READ, ONE, c_return_aiocb, NULL },
	{ "aio_cancel", "aiocb", BP_READ, ONE, c_cancel_aiocb, NULL },
	{ "aio_suspend", "list", BP_READ, ONE, c_suspend_list, NULL },
	{ "aio_suspend", "list[0]", BP_READ, ONE, c_suspend_entry, NULL },
	{ "aio_suspend", "timeout", BP_READ, ONE, c_suspend_timeout, NULL },
	{ "lio_listio", "list", BP_READ, ONE, c_lio_list, NULL },
	{ "lio_listio", "list[0]", BP_WRITE, ONE, c_lio_elem0, NULL },
	{ "lio_listio", "list[1]", BP_WRITE, ONE, c_lio_elem1, NULL },
	{ "lio_listio", "sig", BP_READ, ONE, c_lio_sig, NULL },
};

/* Every bad kind: glibc's crash there may become the drop-in's EFAULT. */
#define BAD (BP_WRITE & ~(BP_K(BP_GOOD) | BP_K(BP_MISALIGNED)))

static const struct bp_allow allow[] = {
	{ NULL, "aio_read", "aiocb", BAD, BP_EFAULT, NULL,
	  "glibc reads the aiocb and writes its status in the caller" },
	{ NULL, "aio_write", "aiocb", BAD, BP_EFAULT, NULL,
	  "glibc reads the aiocb and writes its status in the caller" },
	{ NULL, "aio_fsync", "aiocb", BAD, BP_EFAULT, NULL,
	  "glibc reads the aiocb's fd and writes its status in the caller" },
	{ NULL, "aio_read", "sigev_notify_attributes", BAD, BP_EFAULT, NULL,
	  "glibc's completion passes the attributes to pthread_create, which reads them" },
	{ NULL, "aio_error", "aiocb", BAD, BP_EFAULT, NULL,
	  "glibc reads the status from the aiocb in the caller" },
	{ NULL, "aio_return", "aiocb", BAD, BP_EFAULT, NULL,
	  "glibc reads the status from the aiocb in the caller" },
	{ NULL, "aio_cancel", "aiocb", BAD, BP_EFAULT, NULL,
	  "glibc reads the aiocb's fd and status in the caller" },
	{ NULL, "aio_suspend", "list", BAD, BP_EFAULT, NULL,
	  "glibc reads the list in the caller" },
	{ NULL, "aio_suspend", "list[0]", BAD, BP_EFAULT, NULL,
	  "glibc reads each entry's status in the caller" },
	{ NULL, "aio_suspend", "timeout", BAD, BP_EFAULT, NULL,
	  "glibc adds the timeout to the clock in the caller" },
	{ NULL, "lio_listio", "list", BAD, BP_EFAULT, NULL,
	  "glibc reads the list in the caller" },
	{ NULL, "lio_listio", "list[0]", BAD, BP_EFAULT, NULL,
	  "glibc reads each element and writes its status in the caller" },
	{ NULL, "lio_listio", "list[1]", BAD, BP_EFAULT, NULL,
	  "glibc reads each element and writes its status in the caller" },
	{ NULL, "lio_listio", "sig", BAD, BP_EFAULT, NULL,
	  "glibc reads the sigevent in the caller" },
#ifdef BP_UBSAN
	{ NULL, NULL, NULL, BP_K(BP_MISALIGNED), BP_UBSAN_REPORT, NULL,
	  "a misaligned struct aiocb (or list) is undefined behaviour in C; the drop-in's C reads "
	  "its fields, which x86 does and UBSan reports (glibc is not instrumented)" },
#endif
};

/* Where aio_read comes from: libc, or the drop-in. */
static const char *origin_error(bool dropin)
{
	static char msg[512];
	Dl_info info;
	void *sym = dlsym(RTLD_DEFAULT, "aio_read");

	if (!sym || !dladdr(sym, &info) || !info.dli_fname)
		return "cannot tell where aio_read comes from";
	if ((strstr(info.dli_fname, "fsaio-posixaio") != NULL) != dropin) {
		snprintf(msg, sizeof(msg), "aio_read comes from %s", info.dli_fname);
		return msg;
	}
	return NULL;
}

const struct bp_family bp_posix = {
	.name = "posix",
	.cases = cases,
	.ncases = sizeof(cases) / sizeof(cases[0]),
	.allow = allow,
	.nallow = sizeof(allow) / sizeof(allow[0]),
	.origin_error = origin_error,
	.ref_name = "glibc",
};

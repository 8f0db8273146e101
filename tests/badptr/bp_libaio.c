/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: the libaio ABI's cases. Every pointer argument of io_setup,
 * io_destroy, io_submit (the iocb array, each iocb, data buffers, iovec
 * arrays and what they point to), io_getevents, io_pgetevents (with the
 * kernel's struct __aio_sigset, through syscall(2)), io_cancel and
 * io_queue_init, each called two ways: through libaio's function ("lib")
 * and through syscall(SYS_io_*) ("sys"). Without a preload the answers are
 * libaio's and the kernel's; with the drop-in preloaded, the drop-in's for
 * both ways (it exports syscall too).
 *
 * A case makes its context with io_setup the same way, submits what it
 * needs with good arguments, makes the one call under test, then reaps
 * every event that must come (and waits a little for any that must not).
 * A buffered read of the (cached) test file completes inside io_submit on
 * the kernel; the drop-in may complete it later: only results are printed.
 */
#include <errno.h>
#include <fcntl.h>
#include <libaio.h>
#include <dlfcn.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "bp.h"

/* errno before a call under test: it must come back unchanged from
 * libaio's calls (they return -errno), and from a system call that works. */
#define SENTINEL 4243

static unsigned way;
static io_context_t ctx;
static int outstanding;     /* requests accepted and not yet reaped */

/* ------------------------------------------------- the calls, two ways */

static long raw_setup(unsigned nr, void *ctxp)
{
	if (way == BP_WAY_SYS)
		return syscall(SYS_io_setup, nr, ctxp);
	return io_setup((int)nr, ctxp);
}

static long raw_destroy(io_context_t c)
{
	if (way == BP_WAY_SYS)
		return syscall(SYS_io_destroy, c);
	return io_destroy(c);
}

static long raw_submit(io_context_t c, long nr, void *list)
{
	if (way == BP_WAY_SYS)
		return syscall(SYS_io_submit, c, nr, list);
	return io_submit(c, nr, list);
}

static long raw_getevents(io_context_t c, long min_nr, long nr, void *ev, void *ts)
{
	if (way == BP_WAY_SYS)
		return syscall(SYS_io_getevents, c, min_nr, nr, ev, ts);
	return io_getevents(c, min_nr, nr, ev, ts);
}

/* The kernel's struct __aio_sigset, which syscall(2) callers build. */
struct aio_sigset {
	const void *sigmask;
	size_t sigsetsize;
};

/* With the mask given as libaio takes it; through syscall(2) inside a
 * struct __aio_sigset of our own (usig NULL), or usig as given. */
static long raw_pgetevents(io_context_t c, long min_nr, long nr, void *ev, void *ts,
			   void *mask, void *usig)
{
	struct aio_sigset ss = { mask, _NSIG / 8 };

	if (way == BP_WAY_SYS)
		return syscall(SYS_io_pgetevents, c, min_nr, nr, ev, ts,
			       usig ? usig : mask ? &ss : NULL);
	return io_pgetevents(c, min_nr, nr, ev, ts, mask);
}

static long raw_cancel(io_context_t c, void *iocb, void *evt)
{
	if (way == BP_WAY_SYS)
		return syscall(SYS_io_cancel, c, iocb, evt);
	return io_cancel(c, iocb, evt);
}

/* A fixture's call: -errno whichever way it went. */
static long norm(long r)
{
	return way == BP_WAY_SYS && r == -1 ? -errno : r;
}

/* The call under test, its answer and errno as it left them. */
static long r_ret;
static int r_err;
#define CALL(expr) do {						\
	errno = SENTINEL;					\
	r_ret = (long)(expr);					\
	r_err = errno;						\
} while (0)

/* "= -1 EFAULT" through syscall(2), "= -EFAULT" through libaio; errno
 * named if a call left it changed where it must not. */
static void say_call(void)
{
	bool failed = way == BP_WAY_SYS ? r_ret == -1 : r_ret < 0;

	if (way == BP_WAY_SYS && failed)
		bp_say("= -1 %s", bp_errname(r_err));
	else if (failed)
		bp_say("= -%s", bp_errname((int)-r_ret));
	else
		bp_say("= %ld", r_ret);
	if (r_err != SENTINEL && !(way == BP_WAY_SYS && failed))
		bp_say("errno=%s", bp_errname(r_err));
}

static long accepted(void)
{
	return r_ret > 0 ? r_ret : 0;
}

/* ------------------------------------------------------------ fixture */

static void make_ctx(void)
{
	long r;

	ctx = 0;
	r = norm(raw_setup(64, &ctx));
	if (r)
		bp_stop("fixture: io_setup = %ld", r);
}

/* Reads of 4096 bytes at i * 4096, each into a page of its own. */
static void reads(struct iocb *cb, int n)
{
	for (int i = 0; i < n; i++) {
		io_prep_pread(&cb[i], bp_fd_read, bp_pages(4096), 4096, i * 4096);
		bp_track(i ? "r1" : "r0", &cb[i]);
	}
}

static void submit_good(struct iocb **list, long n)
{
	long r = norm(raw_submit(ctx, n, list));

	if (r != n)
		bp_stop("fixture: io_submit = %ld", r);
	outstanding += (int)n;
}

/* Name n events of ev into out (room for cap), after the *got there. The
 * array may be misaligned: each event is copied out, never read in place. */
static void get_events(const void *ev, long n, struct bp_ev *out, int cap, int *got)
{
	for (long i = 0; i < n && *got < cap; i++) {
		struct io_event e;
		const char *label;
		long long res;

		memcpy(&e, (const char *)ev + i * (long)sizeof(e), sizeof(e));
		label = bp_label(e.obj);
		res = (long)e.res;
		/* A poll's readiness, not its mask: the kernel reports its
		 * waker's whole mask (POLLIN|POLLRDNORM), the drop-in poll(2)'s
		 * revents, as dropin/libaio/README.md lists. */
		if (!strcmp(label, "poll") && res > 0)
			res &= POLLIN;
		out[(*got)++] = (struct bp_ev){ label, res, (long)e.res2 };
	}
}

/* What reap found, for a case to check the data of a read against. */
static struct bp_ev reaped[32];
static int nreaped;

/* Every event the accepted requests owe, each within BP_WAIT_SEC; then a
 * short look for any they do not owe. Says "| ev ..." and "left N" /
 * "extra N" where the count is wrong. */
static void reap(void)
{
	struct io_event ev[16];
	int extra = 0, left;

	while (nreaped < outstanding) {
		struct timespec ts = { BP_WAIT_SEC, 0 };
		long r = norm(raw_getevents(ctx, 1, 16, ev, &ts));

		if (r <= 0)
			break;
		get_events(ev, r, reaped, 32, &nreaped);
	}
	left = outstanding > nreaped ? outstanding - nreaped : 0;
	{
		struct timespec brief = { 0, 10 * 1000 * 1000 };
		long r = norm(raw_getevents(ctx, 1, 16, ev, &brief));

		if (r > 0) {
			extra = (int)r;
			get_events(ev, r, reaped, 32, &nreaped);
		}
	}
	bp_say("|");
	bp_say_events("ev", reaped, nreaped);
	if (left)
		bp_say("left %d", left);
	if (extra)
		bp_say("extra %d", extra);
}

/* The result of the event reaped for label; -1 when there was none. */
static long long res_of(const char *label)
{
	for (int i = 0; i < nreaped; i++)
		if (!strcmp(reaped[i].label, label))
			return reaped[i].res;
	return -1;
}

/* Events a getevents under test put in its array, when they can be read. */
static void say_returned(const void *ev, enum bp_kind k)
{
	struct bp_ev out[2];
	int got = 0;

	if (r_ret <= 0)
		return;
	if (!bp_readable(k)) {
		bp_say("got %ld: (unreadable)", (long)r_ret);
		return;
	}
	get_events(ev, r_ret, out, 2, &got);
	bp_say_events("got", out, got);
}

/* A context handle of kind k: the real one, or a copy of its ring's
 * header (what libaio and the drop-in may read through it) placed so. */
static io_context_t ctx_of_kind(enum bp_kind k)
{
	if (k == BP_GOOD)
		return ctx;
	return bp_place(k, ctx, 32, 8);
}

/* -------------------------------------------------------------- cases */

/* io_setup, or libaio's io_queue_init, with ctxp of kind k (holding 0,
 * as io_setup wants it); the context made, when it can be read back. */
static void ctxp_case(unsigned w, enum bp_kind k, bool queue_init)
{
	io_context_t zero = 0, made = 0;
	void *p;

	way = w;
	p = bp_place(k, &zero, sizeof(zero), 4);
	if (queue_init)
		CALL(io_queue_init(64, p));
	else
		CALL(raw_setup(64, p));
	say_call();
	if (!bp_readable(k))
		return;
	memcpy(&made, p, sizeof(made));
	if (!made) {
		bp_say("| ctx unset");
		return;
	}
	bp_say("| ctx set, destroy %ld", norm(raw_destroy(made)));
}

static void c_setup_ctxp(unsigned w, enum bp_kind k) { ctxp_case(w, k, false); }
static void c_queue_init_ctxp(unsigned w, enum bp_kind k) { ctxp_case(w, k, true); }

static void c_destroy_ctx(unsigned w, enum bp_kind k)
{
	way = w;
	make_ctx();
	CALL(raw_destroy(ctx_of_kind(k)));
	say_call();
}

static void c_submit_ctx(unsigned w, enum bp_kind k)
{
	struct iocb cb[1], *list[1] = { &cb[0] };

	way = w;
	make_ctx();
	reads(cb, 1);
	CALL(raw_submit(ctx_of_kind(k), 1, list));
	say_call();
	outstanding = (int)accepted();
	reap();
}

static void c_submit_iocbpp(unsigned w, enum bp_kind k)
{
	struct iocb cb[2], *list[2] = { &cb[0], &cb[1] };

	way = w;
	make_ctx();
	reads(cb, 2);
	CALL(raw_submit(ctx, 2, bp_place(k, list, sizeof(list), sizeof(list[0]))));
	say_call();
	outstanding = (int)accepted();
	reap();
}

/* iocb number `bad` of two is of kind k (its first 8 bytes, aio_data, in
 * the good page when it straddles). */
static void submit_iocb(unsigned w, enum bp_kind k, int bad)
{
	struct iocb cb[2], *list[2] = { &cb[0], &cb[1] };

	way = w;
	make_ctx();
	reads(cb, 2);
	list[bad] = bp_place(k, &cb[bad], sizeof(cb[bad]), 8);
	bp_track(bad ? "r1" : "r0", list[bad]);
	CALL(raw_submit(ctx, 2, list));
	say_call();
	outstanding = (int)accepted();
	reap();
}

static void c_submit_iocb0(unsigned w, enum bp_kind k) { submit_iocb(w, k, 0); }
static void c_submit_iocb1(unsigned w, enum bp_kind k) { submit_iocb(w, k, 1); }

/* Data buffers of 8192 bytes; a straddling one has 4196 good bytes. */
static void c_submit_pread_buf(unsigned w, enum bp_kind k)
{
	struct iocb cb, *list[1] = { &cb };
	size_t n = k == BP_AFTER ? 4096 : BP_DATA;
	char *b;

	way = w;
	make_ctx();
	b = bp_place(k, NULL, n, BP_DATA_GOOD);
	io_prep_pread(&cb, bp_fd_read, b, n, 0);
	bp_track("r0", &cb);
	if (k == BP_AFTER)
		bp_warm(bp_fd_read, 0, n);
	CALL(raw_submit(ctx, 1, list));
	bp_unmap_after(b, n, k);
	say_call();
	outstanding = (int)accepted();
	reap();
	if (k != BP_AFTER)
		bp_say_data(b, k, res_of("r0"));
}

static void c_submit_pwrite_buf(unsigned w, enum bp_kind k)
{
	static char pat[BP_DATA];
	struct iocb cb, *list[1] = { &cb };
	size_t n = k == BP_AFTER ? 4096 : BP_DATA;
	char *b;

	way = w;
	make_ctx();
	memset(pat, 'w', sizeof(pat));
	b = bp_place(k, pat, n, BP_DATA_GOOD);
	io_prep_pwrite(&cb, bp_fd_write, b, n, 0);
	bp_track("w0", &cb);
	CALL(raw_submit(ctx, 1, list));
	bp_unmap_after(b, n, k);
	say_call();
	outstanding = (int)accepted();
	reap();
}

/* An O_DIRECT read: the kernel pins the buffer at submit and completes
 * the read later, so unmapping the buffer meanwhile changes nothing. */
static void c_submit_direct_buf(unsigned w, enum bp_kind k)
{
	struct iocb cb, *list[1] = { &cb };
	char *b;

	way = w;
	if (bp_fd_direct < 0)
		bp_stop("(no O_DIRECT here)");
	make_ctx();
	b = bp_place(k, NULL, 4096, 4096);
	io_prep_pread(&cb, bp_fd_direct, b, 4096, 0);
	bp_track("r0", &cb);
	CALL(raw_submit(ctx, 1, list));
	bp_unmap_after(b, 4096, k);
	say_call();
	outstanding = (int)accepted();
	reap();
	if (k != BP_AFTER)
		bp_say_data(b, k, res_of("r0"));
}

/* A vectored request of two 4096-byte buffers, its iovec array of kind k
 * (the first iovec good when it straddles). */
static void submit_vec_array(unsigned w, enum bp_kind k, bool read)
{
	struct iocb cb, *list[1] = { &cb };
	struct iovec iov[2];
	struct iovec *v;

	way = w;
	make_ctx();
	for (int i = 0; i < 2; i++) {
		iov[i].iov_base = bp_pages(4096);
		iov[i].iov_len = 4096;
		if (!read)
			memset(iov[i].iov_base, 'v', 4096);
	}
	v = bp_place(k, iov, sizeof(iov), sizeof(iov[0]));
	if (read)
		io_prep_preadv(&cb, bp_fd_read, v, 2, 0);
	else
		io_prep_pwritev(&cb, bp_fd_write, v, 2, 0);
	bp_track(read ? "r0" : "w0", &cb);
	if (read && k == BP_AFTER)
		bp_warm(bp_fd_read, 0, 8192);
	CALL(raw_submit(ctx, 1, list));
	bp_unmap_after(v, sizeof(iov), k);
	say_call();
	outstanding = (int)accepted();
	reap();
	if (read && res_of("r0") == 8192)
		bp_say(bp_data_ok(iov[0].iov_base, 4096, 0) &&
		       bp_data_ok(iov[1].iov_base, 4096, 4096) ? "data ok" : "data BAD");
}

static void c_submit_preadv_iov(unsigned w, enum bp_kind k) { submit_vec_array(w, k, true); }
static void c_submit_pwritev_iov(unsigned w, enum bp_kind k) { submit_vec_array(w, k, false); }

/* The second iovec's buffer of kind k (100 good bytes when it straddles). */
static void c_submit_preadv_base(unsigned w, enum bp_kind k)
{
	struct iocb cb, *list[1] = { &cb };
	struct iovec iov[2];

	way = w;
	make_ctx();
	iov[0] = (struct iovec){ bp_pages(4096), 4096 };
	iov[1] = (struct iovec){ bp_place(k, NULL, 4096, 100), 4096 };
	io_prep_preadv(&cb, bp_fd_read, iov, 2, 0);
	bp_track("r0", &cb);
	CALL(raw_submit(ctx, 1, list));
	say_call();
	outstanding = (int)accepted();
	reap();
	if (res_of("r0") >= 4096) {
		size_t second = (size_t)res_of("r0") - 4096;

		if (k == BP_STRADDLE && second > 100)
			second = 100;
		bp_say(bp_data_ok(iov[0].iov_base, 4096, 0) &&
		       (!second || !(bp_readable(k) || k == BP_STRADDLE) ||
			bp_data_ok(iov[1].iov_base, second, 4096)) ? "data ok" : "data BAD");
	}
}

/* Two reads submitted, for the getevents cases (complete when io_submit
 * returns on the kernel; the calls under test wait for both, min_nr 2). */
static void two_done(void)
{
	static struct iocb cb[2];
	struct iocb *list[2] = { &cb[0], &cb[1] };

	make_ctx();
	reads(cb, 2);
	submit_good(list, 2);
}

/* Of the calls that reap: which argument is of kind k. */
enum { A_CTX, A_EVENTS, A_TIMEOUT, A_SIGMASK, A_USIG };

static void getevents_case(unsigned w, enum bp_kind k, int arg, bool pget)
{
	struct timespec ts = { 5, 0 };
	struct io_event ev[2];
	sigset_t none;
	void *e = ev, *t = &ts, *mask = NULL, *usig = NULL;
	io_context_t c;

	way = w;
	two_done();
	sigemptyset(&none);
	c = arg == A_CTX ? ctx_of_kind(k) : ctx;
	if (arg == A_EVENTS)
		e = bp_place(k, NULL, sizeof(ev), sizeof(ev[0]));
	if (arg == A_TIMEOUT)
		t = bp_place(k, &ts, sizeof(ts), sizeof(ts.tv_sec));
	if (arg == A_SIGMASK)
		mask = bp_place(k, &none, _NSIG / 8, 4);
	if (arg == A_USIG) {
		struct aio_sigset ss = { &none, _NSIG / 8 };

		usig = bp_place(k, &ss, sizeof(ss), sizeof(ss.sigmask));
	}
	if (pget)
		CALL(raw_pgetevents(c, 2, 2, e, t, mask, usig));
	else
		CALL(raw_getevents(c, 2, 2, e, t));
	say_call();
	say_returned(e, arg == A_EVENTS ? k : BP_GOOD);
	outstanding -= (int)accepted();
	reap();
}

static void c_getevents_ctx(unsigned w, enum bp_kind k) { getevents_case(w, k, A_CTX, false); }
static void c_getevents_events(unsigned w, enum bp_kind k) { getevents_case(w, k, A_EVENTS, false); }
static void c_getevents_timeout(unsigned w, enum bp_kind k) { getevents_case(w, k, A_TIMEOUT, false); }
static void c_pgetevents_ctx(unsigned w, enum bp_kind k) { getevents_case(w, k, A_CTX, true); }
static void c_pgetevents_events(unsigned w, enum bp_kind k) { getevents_case(w, k, A_EVENTS, true); }
static void c_pgetevents_timeout(unsigned w, enum bp_kind k) { getevents_case(w, k, A_TIMEOUT, true); }
static void c_pgetevents_sigmask(unsigned w, enum bp_kind k) { getevents_case(w, k, A_SIGMASK, true); }
static void c_pgetevents_usig(unsigned w, enum bp_kind k) { getevents_case(w, k, A_USIG, true); }

/* io_cancel of a poll waiting on an empty pipe (what stays in flight on
 * the kernel too); then a byte for the pipe, so that a poll not
 * cancelled completes. */
enum { C_CTX, C_IOCB, C_EVT };

static void cancel_case(unsigned w, enum bp_kind k, int arg)
{
	static struct iocb poll_cb;
	struct iocb *list[1] = { &poll_cb };
	struct io_event evt;
	io_context_t c;
	void *cb = &poll_cb, *e = &evt;
	int p[2];

	way = w;
	make_ctx();
	if (pipe2(p, O_CLOEXEC) < 0)
		bp_stop("fixture: pipe: %s", bp_errname(errno));
	io_prep_poll(&poll_cb, p[0], POLLIN);
	bp_track("poll", &poll_cb);
	submit_good(list, 1);
	c = arg == C_CTX ? ctx_of_kind(k) : ctx;
	if (arg == C_IOCB && k != BP_GOOD)
		cb = bp_place(k, &poll_cb, sizeof(poll_cb), 8);
	if (arg == C_EVT)
		e = bp_place(k, NULL, sizeof(evt), 8);
	CALL(raw_cancel(c, cb, e));
	say_call();
	if (write(p[1], "x", 1) != 1)
		bp_stop("fixture: write: %s", bp_errname(errno));
	reap();
}

static void c_cancel_ctx(unsigned w, enum bp_kind k) { cancel_case(w, k, C_CTX); }
static void c_cancel_iocb(unsigned w, enum bp_kind k) { cancel_case(w, k, C_IOCB); }
static void c_cancel_evt(unsigned w, enum bp_kind k) { cancel_case(w, k, C_EVT); }

/* --------------------------------------------------------------- table */

#define BOTH (BP_WAY_LIB | BP_WAY_SYS)
#define AFTER BP_K(BP_AFTER)

static const struct bp_case cases[] = {
	{ "io_setup", "ctxp", BP_WRITE, BOTH, c_setup_ctxp, NULL },
	{ "io_queue_init", "ctxp", BP_WRITE, BP_WAY_LIB, c_queue_init_ctxp, NULL },
	{ "io_destroy", "ctx", BP_READ, BOTH, c_destroy_ctx, NULL },
	{ "io_submit", "ctx", BP_READ, BOTH, c_submit_ctx, NULL },
	{ "io_submit", "iocbpp", BP_READ, BOTH, c_submit_iocbpp, NULL },
	{ "io_submit", "iocb[0]", BP_WRITE, BOTH, c_submit_iocb0, NULL },
	{ "io_submit", "iocb[1]", BP_WRITE, BOTH, c_submit_iocb1, NULL },
	{ "io_submit", "pread.buf", BP_WRITE | AFTER, BOTH, c_submit_pread_buf, NULL },
	{ "io_submit", "pwrite.buf", BP_READ | AFTER, BOTH, c_submit_pwrite_buf, NULL },
	{ "io_submit", "direct.buf", BP_K(BP_GOOD) | AFTER, BOTH, c_submit_direct_buf, NULL },
	{ "io_submit", "preadv.iov", BP_READ | AFTER, BOTH, c_submit_preadv_iov, NULL },
	{ "io_submit", "pwritev.iov", BP_READ | AFTER, BOTH, c_submit_pwritev_iov, NULL },
	{ "io_submit", "preadv.iov[1].base", BP_WRITE, BOTH, c_submit_preadv_base, NULL },
	{ "io_getevents", "ctx", BP_READ, BOTH, c_getevents_ctx, NULL },
	{ "io_getevents", "events", BP_WRITE, BOTH, c_getevents_events, NULL },
	{ "io_getevents", "timeout", BP_READ, BOTH, c_getevents_timeout, NULL },
	{ "io_pgetevents", "ctx", BP_READ, BOTH, c_pgetevents_ctx, NULL },
	{ "io_pgetevents", "events", BP_WRITE, BOTH, c_pgetevents_events, NULL },
	{ "io_pgetevents", "timeout", BP_READ, BOTH, c_pgetevents_timeout, NULL },
	{ "io_pgetevents", "sigmask", BP_READ, BOTH, c_pgetevents_sigmask, NULL },
	{ "io_pgetevents", "usig", BP_READ, BP_WAY_SYS, c_pgetevents_usig, NULL },
	{ "io_cancel", "ctx", BP_READ, BOTH, c_cancel_ctx, NULL },
	{ "io_cancel", "iocb", BP_READ, BOTH, c_cancel_iocb, NULL },
	{ "io_cancel", "evt", BP_WRITE, BOTH, c_cancel_evt, NULL },
};

#define BAD (BP_READ & ~(BP_K(BP_GOOD) | BP_K(BP_NULL) | BP_K(BP_MISALIGNED)))

/*
 * Where libaio itself reads or writes through the pointer before its
 * system call, the reference crashes in libaio; the drop-in answers as the
 * system call would (the same case's "sys" line on the kernel).
 */
static const struct bp_allow allow[] = {
	{ "lib", "io_getevents", "ctx", BAD, BP_AS_SYSCALL, "io_getevents",
	  "libaio reads ring->magic through the handle before its system call" },
	{ "lib", "io_pgetevents", "ctx", BAD, BP_AS_SYSCALL, "io_pgetevents",
	  "libaio reads ring->magic through the handle before its system call" },
	{ "lib", "io_getevents", "timeout", BAD, BP_AS_SYSCALL, "io_getevents",
	  "libaio reads the timeout (for its empty-ring shortcut) before its system call" },
	{ "lib", "io_pgetevents", "timeout", BAD, BP_AS_SYSCALL, "io_pgetevents",
	  "libaio reads the timeout (for its empty-ring shortcut) before its system call" },
	{ "lib", "io_queue_init", "ctxp", BAD | BP_K(BP_NULL) | BP_K(BP_READONLY), BP_AS_SYSCALL,
	  "io_setup", "libaio stores NULL in *ctxp before its io_setup" },
};

/* Where io_submit and syscall come from: libaio.so.1 and libc, or the
 * drop-in for both. */
static const char *origin_error(bool dropin)
{
	static char msg[512];
	struct {
		const char *what;
		void *sym;
	} sym[2] = {
		{ "io_submit", dlsym(RTLD_DEFAULT, "io_submit") },
		{ "syscall", dlvsym(RTLD_DEFAULT, "syscall", "GLIBC_2.2.5") },
	};

	for (int i = 0; i < 2; i++) {
		Dl_info info;
		bool ours;

		if (!sym[i].sym || !dladdr(sym[i].sym, &info) || !info.dli_fname)
			return "cannot tell where io_submit comes from";
		ours = strstr(info.dli_fname, "fsaio-libaio") != NULL;
		if (ours != dropin) {
			snprintf(msg, sizeof(msg), "%s comes from %s", sym[i].what, info.dli_fname);
			return msg;
		}
	}
	return NULL;
}

const struct bp_family bp_libaio = {
	.name = "libaio",
	.cases = cases,
	.ncases = sizeof(cases) / sizeof(cases[0]),
	.allow = allow,
	.nallow = sizeof(allow) / sizeof(allow[0]),
	.origin_error = origin_error,
	.ref_name = "kernel",
};

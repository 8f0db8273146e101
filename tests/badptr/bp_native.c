/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: the native API's cases (libfsaio.so): fsaio_ctx_create's params
 * and ctxp, fsaio_submit's request array, each request, a request's data
 * buffer, iovec array and iovec buffers, fsaio_getevents' events array and
 * timeout, fsaio_cancel's request, fsaio_get_stats' counters, and the
 * context handle of every call that takes one.
 *
 * The native API has no kernel twin to run, so each case carries its
 * expected line, written from the kernel's io_submit / io_getevents /
 * io_cancel rules on the same kind of pointer (bp_libaio.c's "sys" lines
 * show them): io_submit accepts in order and stops at the first request it
 * cannot read and write (the count before it, or -EFAULT when it is the
 * first); an iovec array that cannot be read is refused at submit; an
 * events array or timeout that faults is -EFAULT with every event left
 * pending; io_cancel of a request it cannot read is -EFAULT, of one not in
 * flight -EINVAL. Where the native API documents a rule of its own, that
 * is expected instead (README, libfsaio(7) BAD POINTERS): a NULL buffer is
 * refused at submit with -EFAULT; any other data buffer is the kernel's to
 * judge, as preadv(2) and pwritev(2) do, in the event (io_submit refuses
 * one outside the user address range at submit); the context handle is
 * not checked.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <fsaio.h>

#include "bp.h"

static fsaio_ctx_t *ctx;
static int outstanding;
static int r_ret, r_err;

/* The call under test; errno must come back as it was. */
#define SENTINEL 4243
#define CALL(expr) do {						\
	errno = SENTINEL;					\
	r_ret = (expr);						\
	r_err = errno;						\
} while (0)

/* "= 2", "= -EFAULT" (and errno, named, if the call changed it). */
static void say_call(void)
{
	if (r_ret < 0)
		bp_say("= -%s", bp_errname(-r_ret));
	else
		bp_say("= %d", r_ret);
	if (r_err != SENTINEL)
		bp_say("errno=%s", bp_errname(r_err));
}

static void make_ctx(void)
{
	int r = fsaio_ctx_create(NULL, &ctx);

	if (r)
		bp_stop("fixture: fsaio_ctx_create = %d", r);
}

static void get_events(const void *ev, int n, struct bp_ev *out, int cap, int *got)
{
	for (int i = 0; i < n && *got < cap; i++) {
		struct fsaio_event e;

		/* The array may be misaligned: copied out, never read in place. */
		memcpy(&e, (const char *)ev + i * (long)sizeof(e), sizeof(e));
		out[(*got)++] = (struct bp_ev){ bp_label(e.req), e.res, e.res2 };
	}
}

static struct bp_ev reaped[32];
static int nreaped;

/* As bp_libaio.c's reap: every event owed, then a look for more. */
static void reap(void)
{
	struct fsaio_event ev[16];
	struct timespec brief = { 0, 10 * 1000 * 1000 };
	int extra = 0, left, r;

	while (nreaped < outstanding) {
		struct timespec ts = { BP_WAIT_SEC, 0 };

		r = fsaio_getevents(ctx, 1, 16, ev, &ts);
		if (r <= 0)
			break;
		get_events(ev, r, reaped, 32, &nreaped);
	}
	left = outstanding > nreaped ? outstanding - nreaped : 0;
	r = fsaio_getevents(ctx, 1, 16, ev, &brief);
	if (r > 0) {
		extra = r;
		get_events(ev, r, reaped, 32, &nreaped);
	}
	bp_say("|");
	bp_say_events("ev", reaped, nreaped);
	if (left)
		bp_say("left %d", left);
	if (extra)
		bp_say("extra %d", extra);
}

static long long res_of(const char *label)
{
	for (int i = 0; i < nreaped; i++)
		if (!strcmp(reaped[i].label, label))
			return reaped[i].res;
	return -1;
}

static int accepted(void)
{
	return r_ret > 0 ? r_ret : 0;
}

/* Reads of 4096 bytes at i * 4096 into their own pages. */
static void reads(struct fsaio_req *r, int n)
{
	for (int i = 0; i < n; i++) {
		fsaio_prep_pread(&r[i], bp_fd_read, bp_pages(4096), 4096, i * 4096);
		bp_track(i ? "r1" : "r0", &r[i]);
	}
}

static void submit_good(struct fsaio_req **list, unsigned n)
{
	int r = fsaio_submit(ctx, list, n);

	if (r != (int)n)
		bp_stop("fixture: fsaio_submit = %d", r);
	outstanding += (int)n;
}

/* A context handle of kind k: the real one, or an address of that kind. */
static fsaio_ctx_t *ctx_of_kind(enum bp_kind k)
{
	return k == BP_GOOD ? ctx : bp_place(k, NULL, 64, 8);
}

/* Which kinds the expected lines group. */
static bool works(enum bp_kind k)
{
	return k == BP_GOOD || k == BP_MISALIGNED || k == BP_AFTER;
}

static bool outside(enum bp_kind k)
{
	return k == BP_KERNEL || k == BP_NONCANON47 || k == BP_NONCANON63;
}

/* -------------------------------------------------------------- cases */

static void say_made(fsaio_ctx_t *made)
{
	bp_say("| destroy %d", fsaio_ctx_destroy(made));
}

static void c_create_params(unsigned w, enum bp_kind k)
{
	struct fsaio_params p = { .queue_depth = 64 };
	fsaio_ctx_t *made = NULL;

	(void)w;
	CALL(fsaio_ctx_create(bp_place(k, &p, sizeof(p), 8), &made));
	say_call();
	if (r_ret == 0)
		say_made(made);
}

static const char *x_create_params(enum bp_kind k)
{
	return works(k) || k == BP_NULL ? "= 0 | destroy 0" : "= -EFAULT";
}

static void c_create_ctxp(unsigned w, enum bp_kind k)
{
	fsaio_ctx_t *zero = NULL, *made = NULL;
	void *p = bp_place(k, &zero, sizeof(zero), 4);

	(void)w;
	CALL(fsaio_ctx_create(NULL, p));
	say_call();
	if (r_ret == 0 && bp_readable(k)) {
		memcpy(&made, p, sizeof(made));
		say_made(made);
	}
}

static const char *x_create_ctxp(enum bp_kind k)
{
	return works(k) ? "= 0 | destroy 0" : "= -EFAULT";
}

static void c_submit_reqs(unsigned w, enum bp_kind k)
{
	struct fsaio_req r[2];
	struct fsaio_req *list[2] = { &r[0], &r[1] };

	(void)w;
	make_ctx();
	reads(r, 2);
	CALL(fsaio_submit(ctx, bp_place(k, list, sizeof(list), sizeof(list[0])), 2));
	say_call();
	outstanding = accepted();
	reap();
}

static const char *x_submit_reqs(enum bp_kind k)
{
	if (works(k))
		return "= 2 | ev 2: r0=4096 r1=4096";
	/* The first pointer read, the second not: one accepted. */
	return k == BP_STRADDLE ? "= 1 | ev 1: r0=4096" : "= -EFAULT | ev 0";
}

/* Request number `bad` of two is of kind k: the engine writes its private
 * fields, as the kernel writes aio_key, so read-only is bad too. */
static void submit_req(enum bp_kind k, int bad)
{
	struct fsaio_req r[2];
	struct fsaio_req *list[2] = { &r[0], &r[1] };

	make_ctx();
	reads(r, 2);
	list[bad] = bp_place(k, &r[bad], sizeof(r[bad]), 8);
	bp_track(bad ? "r1" : "r0", list[bad]);
	CALL(fsaio_submit(ctx, list, 2));
	say_call();
	outstanding = accepted();
	reap();
}

static void c_submit_req0(unsigned w, enum bp_kind k) { (void)w; submit_req(k, 0); }
static void c_submit_req1(unsigned w, enum bp_kind k) { (void)w; submit_req(k, 1); }

static const char *x_submit_req0(enum bp_kind k)
{
	return works(k) ? "= 2 | ev 2: r0=4096 r1=4096" : "= -EFAULT | ev 0";
}

static const char *x_submit_req1(enum bp_kind k)
{
	return works(k) ? "= 2 | ev 2: r0=4096 r1=4096" : "= 1 | ev 1: r0=4096";
}

/* Data buffers of 8192 bytes; a straddling one has 4196 good bytes. */
static void c_pread_buf(unsigned w, enum bp_kind k)
{
	struct fsaio_req r;
	struct fsaio_req *list[1] = { &r };
	size_t n = k == BP_AFTER ? 4096 : BP_DATA;
	char *b = bp_place(k, NULL, n, BP_DATA_GOOD);

	(void)w;
	make_ctx();
	fsaio_prep_pread(&r, bp_fd_read, b, n, 0);
	bp_track("r0", &r);
	if (k == BP_AFTER)
		bp_warm(bp_fd_read, 0, n);
	CALL(fsaio_submit(ctx, list, 1));
	bp_unmap_after(b, n, k);
	say_call();
	outstanding = accepted();
	reap();
	if (k != BP_AFTER)
		bp_say_data(b, k, res_of("r0"));
}

static const char *x_pread_buf(enum bp_kind k)
{
	switch (k) {
	case BP_GOOD:
	case BP_MISALIGNED:
		return "= 1 | ev 1: r0=8192 data ok";
	case BP_AFTER:
		/* A cached read is complete when submit returns. */
		return "= 1 | ev 1: r0=4096";
	case BP_STRADDLE:
		return "= 1 | ev 1: r0=4196 data ok";
	case BP_NULL:
		/* README: a NULL buffer is refused at submit (the kernel
		 * takes it and faults in the event). */
		return "= -EFAULT | ev 0";
	default:
		return "= 1 | ev 1: r0=-EFAULT";
	}
}

static void c_pwrite_buf(unsigned w, enum bp_kind k)
{
	static char pat[BP_DATA];
	struct fsaio_req r;
	struct fsaio_req *list[1] = { &r };
	size_t n = k == BP_AFTER ? 4096 : BP_DATA;
	char *b;

	(void)w;
	make_ctx();
	memset(pat, 'w', sizeof(pat));
	b = bp_place(k, pat, n, BP_DATA_GOOD);
	fsaio_prep_pwrite(&r, bp_fd_write, b, n, 0);
	bp_track("w0", &r);
	CALL(fsaio_submit(ctx, list, 1));
	bp_unmap_after(b, n, k);
	say_call();
	outstanding = accepted();
	reap();
}

static const char *x_pwrite_buf(enum bp_kind k)
{
	switch (k) {
	case BP_GOOD:
	case BP_MISALIGNED:
		return "= 1 | ev 1: w0=8192";
	case BP_AFTER:
		/* A buffered write is done inside submit. */
		return "= 1 | ev 1: w0=4096";
	case BP_STRADDLE:
		return "= 1 | ev 1: w0=4196";
	case BP_NULL:
		return "= -EFAULT | ev 0";
	default:
		return "= 1 | ev 1: w0=-EFAULT";
	}
}

/* PREADV of two 4096-byte buffers, the iovec array of kind k (the first
 * iovec good when it straddles). */
static void c_preadv_iov(unsigned w, enum bp_kind k)
{
	struct fsaio_req r;
	struct fsaio_req *list[1] = { &r };
	struct iovec iov[2], *v;

	(void)w;
	make_ctx();
	for (int i = 0; i < 2; i++)
		iov[i] = (struct iovec){ bp_pages(4096), 4096 };
	v = bp_place(k, iov, sizeof(iov), sizeof(iov[0]));
	fsaio_prep_preadv(&r, bp_fd_read, v, 2, 0);
	bp_track("r0", &r);
	if (k == BP_AFTER)
		bp_warm(bp_fd_read, 0, 8192);
	CALL(fsaio_submit(ctx, list, 1));
	bp_unmap_after(v, sizeof(iov), k);
	say_call();
	outstanding = accepted();
	reap();
	if (res_of("r0") == 8192)
		bp_say(bp_data_ok(iov[0].iov_base, 4096, 0) &&
		       bp_data_ok(iov[1].iov_base, 4096, 4096) ? "data ok" : "data BAD");
}

static const char *x_preadv_iov(enum bp_kind k)
{
	/* io_submit copies the whole array at submit: a cached read is done
	 * when it returns, and an array it cannot read is refused. */
	return works(k) ? "= 1 | ev 1: r0=8192 data ok" : "= -EFAULT | ev 0";
}

/* PREADV whose second iovec's buffer is of kind k (100 good bytes when it
 * straddles). */
static void c_preadv_base(unsigned w, enum bp_kind k)
{
	struct fsaio_req r;
	struct fsaio_req *list[1] = { &r };
	struct iovec iov[2];

	(void)w;
	make_ctx();
	iov[0] = (struct iovec){ bp_pages(4096), 4096 };
	iov[1] = (struct iovec){ bp_place(k, NULL, 4096, 100), 4096 };
	fsaio_prep_preadv(&r, bp_fd_read, iov, 2, 0);
	bp_track("r0", &r);
	CALL(fsaio_submit(ctx, list, 1));
	say_call();
	outstanding = accepted();
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

static const char *x_preadv_base(enum bp_kind k)
{
	if (works(k))
		return "= 1 | ev 1: r0=8192 data ok";
	if (k == BP_STRADDLE)
		return "= 1 | ev 1: r0=4196 data ok";
	/* preadv(2) checks every iovec's range before it reads; in range,
	 * the first buffer's bytes are what was done before the fault. */
	return outside(k) ? "= 1 | ev 1: r0=-EFAULT" : "= 1 | ev 1: r0=4096 data ok";
}

/* fsaio_getevents(ctx, 2, 2, ...) with two reads complete, the events
 * array or the timeout ({5, 0}) of kind k. */
static void getevents_case(enum bp_kind k, bool events)
{
	static struct fsaio_req r[2];
	struct fsaio_req *list[2] = { &r[0], &r[1] };
	struct fsaio_event ev[2];
	struct timespec ts = { 5, 0 };
	void *e = ev, *t = &ts;

	make_ctx();
	reads(r, 2);
	submit_good(list, 2);
	if (events)
		e = bp_place(k, NULL, sizeof(ev), sizeof(ev[0]));
	else
		t = bp_place(k, &ts, sizeof(ts), sizeof(ts.tv_sec));
	CALL(fsaio_getevents(ctx, 2, 2, e, t));
	say_call();
	if (r_ret > 0) {
		struct bp_ev out[2];
		int got = 0;

		if (events && !bp_readable(k)) {
			bp_say("got %ld: (unreadable)", (long)r_ret);
		} else {
			get_events(e, r_ret, out, 2, &got);
			bp_say_events("got", out, got);
		}
	}
	outstanding -= accepted();
	reap();
}

static void c_getevents_events(unsigned w, enum bp_kind k) { (void)w; getevents_case(k, true); }
static void c_getevents_timeout(unsigned w, enum bp_kind k) { (void)w; getevents_case(k, false); }

static const char *x_getevents_events(enum bp_kind k)
{
	return works(k) ? "= 2 got 2: r0=4096 r1=4096 | ev 0" : "= -EFAULT | ev 2: r0=4096 r1=4096";
}

static const char *x_getevents_timeout(enum bp_kind k)
{
	return works(k) || k == BP_NULL ? "= 2 got 2: r0=4096 r1=4096 | ev 0" :
	       "= -EFAULT | ev 2: r0=4096 r1=4096";
}

/* fsaio_cancel of a poll waiting on an empty pipe, the request pointer of
 * kind k (a copy of it, not in flight, unless good); then a byte for the
 * pipe so that a poll not cancelled completes. */
static void c_cancel_req(unsigned w, enum bp_kind k)
{
	static struct fsaio_req pr;
	struct fsaio_req *list[1] = { &pr };
	int p[2];

	(void)w;
	make_ctx();
	if (pipe2(p, O_CLOEXEC) < 0)
		bp_stop("fixture: pipe: %s", bp_errname(errno));
	fsaio_prep_poll(&pr, p[0], POLLIN);
	bp_track("poll", &pr);
	submit_good(list, 1);
	CALL(fsaio_cancel(ctx, k == BP_GOOD ? &pr : bp_place(k, &pr, sizeof(pr), 8)));
	say_call();
	if (write(p[1], "x", 1) != 1)
		bp_stop("fixture: write: %s", bp_errname(errno));
	reap();
}

static const char *x_cancel_req(enum bp_kind k)
{
	if (k == BP_GOOD)
		return "= 0 | ev 1: poll=-ECANCELED";
	/* A readable request that is not in flight; else io_cancel's
	 * -EFAULT for a request it cannot read. */
	return k == BP_MISALIGNED ? "= -EINVAL | ev 1: poll=1" : "= -EFAULT | ev 1: poll=1";
}

static void c_stats_st(unsigned w, enum bp_kind k)
{
	struct fsaio_stats st;

	(void)w;
	make_ctx();
	memset(&st, 0, sizeof(st));
	CALL(fsaio_get_stats(ctx, bp_place(k, &st, sizeof(st), 8)));
	say_call();
}

static const char *x_stats_st(enum bp_kind k)
{
	return works(k) ? "= 0" : "= -EFAULT";
}

/* The context handle of kind k given to each call that takes one; the
 * real context meanwhile has what the call would act on. */
enum { H_DESTROY, H_SUBMIT, H_GETEVENTS, H_CANCEL, H_EVENT_FD, H_STATS, H_FADVISE };

static void handle_case(enum bp_kind k, int call)
{
	static struct fsaio_req r[2], pr;
	struct fsaio_req *list[2] = { &r[0], &r[1] };
	struct fsaio_event ev[2];
	struct fsaio_stats st;
	struct timespec ts = { 5, 0 };
	int p[2];

	make_ctx();
	reads(r, 2);
	switch (call) {
	case H_DESTROY:
		CALL(fsaio_ctx_destroy(ctx_of_kind(k)));
		say_call();
		return;
	case H_SUBMIT:
		CALL(fsaio_submit(ctx_of_kind(k), list, 1));
		say_call();
		outstanding = accepted();
		reap();
		return;
	case H_GETEVENTS:
		submit_good(list, 2);
		CALL(fsaio_getevents(ctx_of_kind(k), 2, 2, ev, &ts));
		say_call();
		outstanding -= accepted();
		reap();
		return;
	case H_CANCEL:
		if (pipe2(p, O_CLOEXEC) < 0)
			bp_stop("fixture: pipe: %s", bp_errname(errno));
		fsaio_prep_poll(&pr, p[0], POLLIN);
		bp_track("poll", &pr);
		list[0] = &pr;
		submit_good(list, 1);
		CALL(fsaio_cancel(ctx_of_kind(k), &pr));
		say_call();
		if (write(p[1], "x", 1) != 1)
			bp_stop("fixture: write: %s", bp_errname(errno));
		reap();
		return;
	case H_EVENT_FD:
		CALL(fsaio_event_fd(ctx_of_kind(k)));
		/* An fd's number is not the point: that there is one is
		 * (said as 0). */
		if (r_ret >= 0)
			r_ret = 0;
		say_call();
		return;
	case H_STATS:
		CALL(fsaio_get_stats(ctx_of_kind(k), &st));
		say_call();
		return;
	case H_FADVISE:
		CALL(fsaio_fadvise(ctx_of_kind(k), bp_fd_read, POSIX_FADV_RANDOM));
		say_call();
		return;
	}
}

static void c_h_destroy(unsigned w, enum bp_kind k) { (void)w; handle_case(k, H_DESTROY); }
static void c_h_submit(unsigned w, enum bp_kind k) { (void)w; handle_case(k, H_SUBMIT); }
static void c_h_getevents(unsigned w, enum bp_kind k) { (void)w; handle_case(k, H_GETEVENTS); }
static void c_h_cancel(unsigned w, enum bp_kind k) { (void)w; handle_case(k, H_CANCEL); }
static void c_h_event_fd(unsigned w, enum bp_kind k) { (void)w; handle_case(k, H_EVENT_FD); }
static void c_h_stats(unsigned w, enum bp_kind k) { (void)w; handle_case(k, H_STATS); }
static void c_h_fadvise(unsigned w, enum bp_kind k) { (void)w; handle_case(k, H_FADVISE); }

/* A handle that is no context: -EINVAL, as the kernel answers an
 * aio_context_t it does not know. */
static const char *x_h_destroy(enum bp_kind k) { return k == BP_GOOD ? "= 0" : "= -EINVAL"; }
static const char *x_h_submit(enum bp_kind k)
{
	return k == BP_GOOD ? "= 1 | ev 1: r0=4096" : "= -EINVAL | ev 0";
}
static const char *x_h_getevents(enum bp_kind k)
{
	return k == BP_GOOD ? "= 2 | ev 0" : "= -EINVAL | ev 2: r0=4096 r1=4096";
}
static const char *x_h_cancel(enum bp_kind k)
{
	return k == BP_GOOD ? "= 0 | ev 1: poll=-ECANCELED" : "= -EINVAL | ev 1: poll=1";
}
static const char *x_h_event_fd(enum bp_kind k) { return k == BP_GOOD ? "= 0" : "= -EINVAL"; }
static const char *x_h_stats(enum bp_kind k) { return k == BP_GOOD ? "= 0" : "= -EINVAL"; }
static const char *x_h_fadvise(enum bp_kind k) { return k == BP_GOOD ? "= 0" : "= -EINVAL"; }

/* --------------------------------------------------------------- table */

#define ONE BP_WAY_ONE
#define AFTER BP_K(BP_AFTER)
/* A handle is judged by its first words, read fault-safely (fork.h): one
 * that is not a context's memory is -EINVAL. A misaligned handle is not
 * asked: the case makes it from a context's own bytes. */
#define HANDLE_KINDS (BP_READ & ~BP_K(BP_MISALIGNED))

static const struct bp_case cases[] = {
	{ "fsaio_ctx_create", "params", BP_READ, ONE, c_create_params, x_create_params },
	{ "fsaio_ctx_create", "ctxp", BP_WRITE, ONE, c_create_ctxp, x_create_ctxp },
	{ "fsaio_submit", "reqs", BP_READ, ONE, c_submit_reqs, x_submit_reqs },
	{ "fsaio_submit", "reqs[0]", BP_WRITE, ONE, c_submit_req0, x_submit_req0 },
	{ "fsaio_submit", "reqs[1]", BP_WRITE, ONE, c_submit_req1, x_submit_req1 },
	{ "fsaio_submit", "pread.buf", BP_WRITE | AFTER, ONE, c_pread_buf, x_pread_buf },
	{ "fsaio_submit", "pwrite.buf", BP_READ | AFTER, ONE, c_pwrite_buf, x_pwrite_buf },
	{ "fsaio_submit", "preadv.iov", BP_READ | AFTER, ONE, c_preadv_iov, x_preadv_iov },
	{ "fsaio_submit", "preadv.iov[1].base", BP_WRITE, ONE, c_preadv_base, x_preadv_base },
	{ "fsaio_getevents", "events", BP_WRITE, ONE, c_getevents_events, x_getevents_events },
	{ "fsaio_getevents", "timeout", BP_READ, ONE, c_getevents_timeout, x_getevents_timeout },
	{ "fsaio_cancel", "req", BP_READ, ONE, c_cancel_req, x_cancel_req },
	{ "fsaio_get_stats", "st", BP_WRITE, ONE, c_stats_st, x_stats_st },
	{ "fsaio_ctx_destroy", "ctx", HANDLE_KINDS, ONE, c_h_destroy, x_h_destroy },
	{ "fsaio_submit", "ctx", HANDLE_KINDS, ONE, c_h_submit, x_h_submit },
	{ "fsaio_getevents", "ctx", HANDLE_KINDS, ONE, c_h_getevents, x_h_getevents },
	{ "fsaio_cancel", "ctx", HANDLE_KINDS, ONE, c_h_cancel, x_h_cancel },
	{ "fsaio_event_fd", "ctx", HANDLE_KINDS, ONE, c_h_event_fd, x_h_event_fd },
	{ "fsaio_get_stats", "ctx", HANDLE_KINDS, ONE, c_h_stats, x_h_stats },
	{ "fsaio_fadvise", "ctx", HANDLE_KINDS, ONE, c_h_fadvise, x_h_fadvise },
};

/* A misaligned struct fsaio_req is undefined in C itself: the engine's
 * field reads run on x86, and UBSan reports the first. */
#define MISALIGNED_WHY "a misaligned struct fsaio_req is undefined behaviour in C; UBSan reports " \
		       "the engine's first read of a field"

static const struct bp_allow allow[] = {
#ifdef BP_UBSAN
	{ NULL, "fsaio_submit", "reqs[0]", BP_K(BP_MISALIGNED), BP_UBSAN_REPORT, NULL, MISALIGNED_WHY },
	{ NULL, "fsaio_submit", "reqs[1]", BP_K(BP_MISALIGNED), BP_UBSAN_REPORT, NULL, MISALIGNED_WHY },
	{ NULL, "fsaio_cancel", "req", BP_K(BP_MISALIGNED), BP_UBSAN_REPORT, NULL, MISALIGNED_WHY },
#endif
};

const struct bp_family bp_native = {
	.name = "native",
	.cases = cases,
	.ncases = sizeof(cases) / sizeof(cases[0]),
	.allow = allow,
	.nallow = sizeof(allow) / sizeof(allow[0]),
	.origin_error = NULL,
	.ref_name = "expected",
};

/* SPDX-License-Identifier: MIT */
/*
 * Bad input gets a clear -errno and nothing is lost: what can be judged at
 * submit is refused there (no event, nothing counted), what only the kernel
 * can tell (a bad buffer) comes back in the event. Every call leaves errno
 * as the caller had it (T_CALL checks that on each one).
 */
#include "t_helpers.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define KiB 1024u
#define MiB (1024u * 1024u)

/* Each test's context, made fresh for it by setup and destroyed (which must
 * succeed) by teardown. */
static fsaio_ctx_t *ctx;

static void setup(void)
{
	t_setup();
	ctx = t_ctx(NULL);
}

static void teardown(void)
{
	t_ctx_destroy(ctx);
	t_teardown();
}

TestSuite(badinput, .init = setup, .fini = teardown, .timeout = 60);

/* Submit one request that must be refused with err: no event, not counted. */
static void refused(fsaio_ctx_t *ctx, struct fsaio_req *req, int err, const char *what)
{
	struct fsaio_req *rp = req;
	uint64_t before = t_stats(ctx).requests;
	int r = T_CALL(fsaio_submit(ctx, &rp, 1));
	cr_assert_eq(r, err, "%s: submit returned %d (%s), want %d (%s)", what, r,
		     r < 0 ? strerror(-r) : "accepted", err, strerror(-err));
	t_no_event(ctx);
	cr_assert_eq(t_stats(ctx).requests, before, "%s: a refused request was counted", what);
	/* A refused request is not in flight: cancel must say so. */
	cr_assert_eq(T_CALL(fsaio_cancel(ctx, req)), -EINVAL, "%s", what);
}

/* Prepare a request (prep, a call of fsaio_prep_*), then refused(). */
#define REFUSED(ctx, req, err, what, prep) do {				\
	prep;								\
	refused(ctx, req, err, what);					\
} while (0)

static bool is_fault_or_inval(int r)
{
	return r == -EFAULT || r == -EINVAL;
}

/* Call expr (through T_CALL): it must answer -EFAULT or -EINVAL; what
 * names the case. */
#define FAULT_OR_INVAL(expr, what) do {					\
	int r_ = T_CALL(expr);						\
	cr_assert(is_fault_or_inval(r_), "%s: %d", what, r_);		\
} while (0)

Test(badinput, bad_fd)
{
	uint8_t buf[4096];
	struct fsaio_req req;

	REFUSED(ctx, &req, -EBADF, "fd -1", fsaio_prep_pread(&req, -1, buf, sizeof(buf), 0));

	int fd = t_tmpfile(4096, 1);
	close(fd);
	REFUSED(ctx, &req, -EBADF, "closed fd", fsaio_prep_pread(&req, fd, buf, sizeof(buf), 0));
	REFUSED(ctx, &req, -EBADF, "closed fd, write",
		fsaio_prep_pwrite(&req, fd, buf, sizeof(buf), 0));
	REFUSED(ctx, &req, -EBADF, "closed fd, fsync", fsaio_prep_fsync(&req, fd));

	REFUSED(ctx, &req, -EBADF, "fd 1<<20",
		fsaio_prep_pread(&req, 1 << 20, buf, sizeof(buf), 0));
	REFUSED(ctx, &req, -EBADF, "fd INT32_MAX",
		fsaio_prep_pread(&req, INT32_MAX, buf, sizeof(buf), 0));
}

/* An fd the engine has already seen, closed since: its cached facts must
 * not let a request through. */
Test(badinput, fd_closed_after_use)
{
	uint8_t buf[4096];
	struct fsaio_req req;
	struct fsaio_event ev;
	int fd = t_tmpfile(64 * KiB, 2);

	fsaio_prep_pread(&req, fd, buf, sizeof(buf), 0);
	t_submit1(ctx, &req);
	t_reap_all(ctx, 1, &ev, T_EVENT_TIMEOUT_MS);
	cr_assert_eq(ev.res, (int64_t)sizeof(buf));
	close(fd);

	REFUSED(ctx, &req, -EBADF, "read on an fd closed after use",
		fsaio_prep_pread(&req, fd, buf, sizeof(buf), 0));
	REFUSED(ctx, &req, -EBADF, "write on an fd closed after use",
		fsaio_prep_pwrite(&req, fd, buf, sizeof(buf), 0));
}

Test(badinput, wrong_access_mode)
{
	int fd = t_tmpfile(64 * KiB, 3);
	int ro = t_reopen(fd, O_RDONLY);
	int wo = t_reopen(fd, O_WRONLY);
	uint8_t buf[4096];
	struct iovec iov = { buf, sizeof(buf) };
	struct fsaio_req req;

	REFUSED(ctx, &req, -EBADF, "pread on O_WRONLY",
		fsaio_prep_pread(&req, wo, buf, sizeof(buf), 0));
	REFUSED(ctx, &req, -EBADF, "preadv on O_WRONLY", fsaio_prep_preadv(&req, wo, &iov, 1, 0));
	REFUSED(ctx, &req, -EBADF, "pwrite on O_RDONLY",
		fsaio_prep_pwrite(&req, ro, buf, sizeof(buf), 0));
	REFUSED(ctx, &req, -EBADF, "pwritev on O_RDONLY",
		fsaio_prep_pwritev(&req, ro, &iov, 1, 0));

	/* The same fds in the direction they allow still work. */
	struct fsaio_event ev;
	fsaio_prep_pread(&req, ro, buf, sizeof(buf), 0);
	t_submit1(ctx, &req);
	t_reap_all(ctx, 1, &ev, T_EVENT_TIMEOUT_MS);
	cr_assert_eq(ev.res, (int64_t)sizeof(buf));
	t_check_pattern(buf, sizeof(buf), 0, 3);
	t_fill_pattern(buf, sizeof(buf), 8192, 33);
	fsaio_prep_pwrite(&req, wo, buf, sizeof(buf), 8192);
	t_submit1(ctx, &req);
	t_reap_all(ctx, 1, &ev, T_EVENT_TIMEOUT_MS);
	cr_assert_eq(ev.res, (int64_t)sizeof(buf));
	t_check_file(fd, 8192, sizeof(buf), 33);
}

Test(badinput, unknown_opcode)
{
	int fd = t_tmpfile(4096, 4);
	uint8_t buf[4096];
	static const uint16_t ops[] = { 0, FSAIO_OP__MAX, FSAIO_OP__MAX + 1, 0xffff };
	for (unsigned i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		struct fsaio_req req;
		fsaio_prep_pread(&req, fd, buf, sizeof(buf), 0);
		req.opcode = ops[i];
		refused(ctx, &req, -EINVAL, "unknown opcode");
	}
}

Test(badinput, negative_offset)
{
	int fd = t_tmpfile(4096, 5);
	uint8_t buf[4096];
	struct iovec iov = { buf, sizeof(buf) };
	struct fsaio_req req;
	static const int64_t offs[] = { -2, -4096, INT64_MIN };

	for (unsigned i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
		REFUSED(ctx, &req, -EINVAL, "negative offset, pread",
			fsaio_prep_pread(&req, fd, buf, sizeof(buf), offs[i]));
		REFUSED(ctx, &req, -EINVAL, "negative offset, pwrite",
			fsaio_prep_pwrite(&req, fd, buf, sizeof(buf), offs[i]));
		REFUSED(ctx, &req, -EINVAL, "negative offset, preadv",
			fsaio_prep_preadv(&req, fd, &iov, 1, offs[i]));
	}
	/* -1 means "no offset", which a regular file does not have. */
	REFUSED(ctx, &req, -EINVAL, "offset -1 on a regular file",
		fsaio_prep_pread(&req, fd, buf, sizeof(buf), -1));
}

Test(badinput, length_overflow)
{
	int fd = t_tmpfile(4096, 6);
	uint8_t buf[4096];
	struct fsaio_req req;

	REFUSED(ctx, &req, -EINVAL, "offset + len > INT64_MAX",
		fsaio_prep_pread(&req, fd, buf, 100, INT64_MAX - 10));
	REFUSED(ctx, &req, -EINVAL, "write at INT64_MAX",
		fsaio_prep_pwrite(&req, fd, buf, 1, INT64_MAX));
	REFUSED(ctx, &req, -EINVAL, "len > SSIZE_MAX",
		fsaio_prep_pread(&req, fd, buf, (size_t)SSIZE_MAX + 1, 0));
	REFUSED(ctx, &req, -EINVAL, "len SIZE_MAX", fsaio_prep_pread(&req, fd, buf, SIZE_MAX, 0));

	struct iovec iov[2] = { { buf, (size_t)SSIZE_MAX / 2 + 1 }, { buf, (size_t)SSIZE_MAX / 2 + 1 } };
	REFUSED(ctx, &req, -EINVAL, "iovec lengths adding up past SSIZE_MAX",
		fsaio_prep_preadv(&req, fd, iov, 2, 0));
	struct iovec small[2] = { { buf, 50 }, { buf + 50, 50 } };
	REFUSED(ctx, &req, -EINVAL, "offset + iovec total > INT64_MAX",
		fsaio_prep_pwritev(&req, fd, small, 2, INT64_MAX - 60));
}

Test(badinput, iovcnt_limits)
{
	int fd = t_tmpfile(4096, 7);
	static uint8_t buf[IOV_MAX + 1];
	static struct iovec iov[IOV_MAX + 1];
	for (int i = 0; i <= IOV_MAX; i++)
		iov[i] = (struct iovec){ buf + i, 1 };
	struct fsaio_req req;

	REFUSED(ctx, &req, -EINVAL, "iovcnt IOV_MAX + 1",
		fsaio_prep_preadv(&req, fd, iov, IOV_MAX + 1, 0));
	REFUSED(ctx, &req, -EINVAL, "pwritev iovcnt IOV_MAX + 1",
		fsaio_prep_pwritev(&req, fd, iov, IOV_MAX + 1, 0));
	REFUSED(ctx, &req, -EINVAL, "iovcnt -1", fsaio_prep_preadv(&req, fd, iov, -1, 0));
	REFUSED(ctx, &req, -EINVAL, "iovcnt INT_MIN",
		fsaio_prep_preadv(&req, fd, iov, INT_MIN, 0));

	/* Exactly IOV_MAX is fine. */
	struct fsaio_event ev;
	fsaio_prep_preadv(&req, fd, iov, IOV_MAX, 0);
	t_submit1(ctx, &req);
	t_reap_all(ctx, 1, &ev, T_EVENT_TIMEOUT_MS);
	cr_assert_eq(ev.res, IOV_MAX);
	t_check_pattern(buf, IOV_MAX, 0, 7);
}

Test(badinput, reserved_and_flags)
{
	int fd = t_tmpfile(4096, 8);
	uint8_t buf[4096];
	struct fsaio_req req;

	fsaio_prep_pread(&req, fd, buf, sizeof(buf), 0);
	req.reserved = 1;
	refused(ctx, &req, -EINVAL, "reserved != 0");
	fsaio_prep_pread(&req, fd, buf, sizeof(buf), 0);
	req.reserved = 0x8000u;
	refused(ctx, &req, -EINVAL, "reserved high bit");
	fsaio_prep_pread(&req, fd, buf, sizeof(buf), 0);
	req.flags = 0x8000;
	refused(ctx, &req, -EINVAL, "unknown FSAIO_REQ_ flag");
}

Test(badinput, unknown_rw_flags)
{
	int fd = t_tmpfile(4096, 9);
	uint8_t buf[4096];
	struct fsaio_req req;
	static const int32_t bad[] = { 1 << 30, 1 << 20, INT32_MIN, RWF_NOWAIT | (1 << 29) };

	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		fsaio_prep_pread(&req, fd, buf, sizeof(buf), 0);
		req.rw_flags = bad[i];
		refused(ctx, &req, -EOPNOTSUPP, "unknown rw_flags bit");
		fsaio_prep_pwrite(&req, fd, buf, sizeof(buf), 0);
		req.rw_flags = bad[i];
		refused(ctx, &req, -EOPNOTSUPP, "unknown rw_flags bit, write");
	}
	t_check_file(fd, 0, 4096, 9);
}

Test(badinput, null_pointers)
{
	int fd = t_tmpfile(4096, 10);
	struct fsaio_req req, *rp = &req, *nullreq = NULL;
	struct fsaio_event ev;
	struct fsaio_stats st;
	int r;

	fsaio_prep_pread(&req, fd, NULL, 4096, 0);
	FAULT_OR_INVAL(fsaio_submit(ctx, &rp, 1), "NULL buf");
	fsaio_prep_pwrite(&req, fd, NULL, 4096, 0);
	FAULT_OR_INVAL(fsaio_submit(ctx, &rp, 1), "NULL write buf");
	fsaio_prep_preadv(&req, fd, NULL, 2, 0);
	FAULT_OR_INVAL(fsaio_submit(ctx, &rp, 1), "NULL iov");
	FAULT_OR_INVAL(fsaio_submit(ctx, &nullreq, 1), "NULL request");
	FAULT_OR_INVAL(fsaio_submit(ctx, NULL, 1), "NULL request array");
	FAULT_OR_INVAL(fsaio_submit(NULL, &rp, 1), "NULL ctx submit");
	cr_assert_eq(T_CALL(fsaio_submit(ctx, &rp, 0)), 0, "nr 0 submits nothing");
	cr_assert_eq(T_CALL(fsaio_submit(ctx, NULL, 0)), 0, "nr 0 with a NULL array");

	FAULT_OR_INVAL(fsaio_getevents(NULL, 0, 1, &ev, NULL), "NULL ctx getevents");
	struct timespec zero = { 0, 0 };
	FAULT_OR_INVAL(fsaio_getevents(ctx, 0, 1, NULL, &zero), "NULL events");
	FAULT_OR_INVAL(fsaio_cancel(NULL, &req), "NULL ctx cancel");
	FAULT_OR_INVAL(fsaio_cancel(ctx, NULL), "NULL req cancel");
	FAULT_OR_INVAL(fsaio_event_fd(NULL), "NULL ctx event_fd");
	FAULT_OR_INVAL(fsaio_get_stats(NULL, &st), "NULL ctx stats");
	FAULT_OR_INVAL(fsaio_get_stats(ctx, NULL), "NULL stats");
	r = T_CALL(fsaio_ctx_destroy(NULL));
	cr_assert_eq(r, -EINVAL, "NULL ctx destroy: %d", r);
	FAULT_OR_INVAL(fsaio_ctx_create(NULL, NULL), "NULL ctxp");

	t_no_event(ctx);
	cr_assert_eq(t_stats(ctx).requests, 0);
}

Test(badinput, bad_params)
{
	fsaio_ctx_t *ctx = (fsaio_ctx_t *)0x1;
	struct fsaio_params p;

	memset(&p, 0, sizeof(p));
	p.reserved[5] = 1;
	cr_assert_eq(T_CALL(fsaio_ctx_create(&p, &ctx)), -EINVAL, "reserved param");
	memset(&p, 0, sizeof(p));
	p.flags = 1u << 31;
	cr_assert_eq(T_CALL(fsaio_ctx_create(&p, &ctx)), -EINVAL, "unknown ctx flag");
	memset(&p, 0, sizeof(p));
	p.miss_backend = 99;
	cr_assert_eq(T_CALL(fsaio_ctx_create(&p, &ctx)), -EINVAL, "unknown backend");
	cr_assert_eq(ctx, (fsaio_ctx_t *)0x1, "a failed create wrote *ctxp");
}

/* What only the kernel can tell: a buffer that cannot be written fails the
 * request with -EFAULT in its event, wherever the copy happens. */
Test(badinput, bad_buffer_cold)
{
	int fd = t_coldfile(1 * MiB, 11);
	struct fsaio_req reqs[3], *rp[3] = { &reqs[0], &reqs[1], &reqs[2] };
	struct iovec iov[2] = { { (void *)1, 4096 }, { (void *)1, 4096 } };

	fsaio_prep_pread(&reqs[0], fd, (void *)1, 4096, 0);
	fsaio_prep_pread(&reqs[1], fd, (void *)1, 256 * KiB, 512 * KiB);
	fsaio_prep_preadv(&reqs[2], fd, iov, 2, 300 * KiB);
	t_submit(ctx, rp, 3);
	struct fsaio_event evs[3];
	t_reap_all(ctx, 3, evs, T_EVENT_TIMEOUT_MS);
	t_match_events(evs, 3, rp, 3);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(t_event_of(evs, 3, &reqs[i])->res, -EFAULT, "req %d: res %lld", i,
			     (long long)t_event_of(evs, 3, &reqs[i])->res);
}

Test(badinput, bad_buffer_hot)
{
	int fd = t_hotfile(256 * KiB, 12);
	struct fsaio_req req;
	struct fsaio_event ev;

	fsaio_prep_pread(&req, fd, (void *)1, 4096, 0);
	t_submit1(ctx, &req);
	t_reap_all(ctx, 1, &ev, T_EVENT_TIMEOUT_MS);
	cr_assert_eq(ev.res, -EFAULT, "res %lld", (long long)ev.res);

	fsaio_prep_pwrite(&req, fd, (void *)1, 4096, 0);
	t_submit1(ctx, &req);
	t_reap_all(ctx, 1, &ev, T_EVENT_TIMEOUT_MS);
	cr_assert_eq(ev.res, -EFAULT, "write from a bad buffer: res %lld", (long long)ev.res);
	t_check_file(fd, 0, 256 * KiB, 12);
}

/* A buffer whose second page is inaccessible: the first page is delivered
 * and the result is the bytes done before the fault (the kernel's rule). */
Test(badinput, buffer_faults_midway)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	uint8_t *m = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(m, MAP_FAILED);
	cr_assert_eq(mprotect(m + pg, pg, PROT_NONE), 0);

	int fd = t_tmpfile(1 * MiB, 13);
	for (int hot = 0; hot <= 1; hot++) {
		if (hot)
			t_make_hot(fd, 0, 1 * MiB);
		else
			t_make_cold(fd);
		fsaio_ctx_t *fresh = t_ctx(NULL);
		memset(m, 0, pg);
		struct fsaio_req req;
		struct fsaio_event ev;
		uint64_t off = 40960 + 100;
		fsaio_prep_pread(&req, fd, m, 2 * pg, (int64_t)off);
		t_submit1(fresh, &req);
		t_reap_all(fresh, 1, &ev, T_EVENT_TIMEOUT_MS);
		cr_assert_eq(ev.res, (int64_t)pg, "%s: res %lld", hot ? "hot" : "cold", (long long)ev.res);
		t_check_pattern(m, pg, off, 13);
		t_ctx_destroy(fresh);
	}
	munmap(m, 2 * pg);
}

/* A batch with a bad request in the middle: the prefix is accepted and
 * yields its events, the bad one and those after it are not. */
Test(badinput, batch_with_bad_request_in_middle)
{
	int fd = t_hotprefix_file(1 * MiB, 14, 64 * KiB);
	enum { N = 5, LEN = 8192 };
	static uint8_t bufs[N][LEN];
	struct fsaio_req reqs[N], *rp[N];
	for (int i = 0; i < N; i++) {
		fsaio_prep_pread(&reqs[i], fd, bufs[i], LEN, (int64_t)i * 100 * KiB);
		reqs[i].user_data = (void *)(uintptr_t)(i + 1);
		rp[i] = &reqs[i];
	}
	reqs[2].offset = -7;

	T_ASSERT_RET(fsaio_submit(ctx, rp, N), 2);
	struct fsaio_event evs[N];
	t_reap_all(ctx, 2, evs, T_EVENT_TIMEOUT_MS);
	t_match_events(evs, 2, rp, 2);
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(t_event_of(evs, 2, &reqs[i])->res, LEN);
		t_check_pattern(bufs[i], LEN, (uint64_t)i * 100 * KiB, 14);
	}
	cr_assert_eq(t_stats(ctx).requests, 2);

	/* First one bad: its error, nothing accepted. */
	T_ASSERT_RET(fsaio_submit(ctx, rp + 2, 3), -EINVAL);
	t_no_event(ctx);

	/* Fixed, the rest goes through, each exactly once. */
	reqs[2].offset = 200 * KiB;
	t_submit(ctx, rp + 2, 3);
	t_reap_all(ctx, 3, evs, T_EVENT_TIMEOUT_MS);
	t_match_events(evs, 3, rp + 2, 3);
	for (int i = 2; i < N; i++) {
		cr_assert_eq(t_event_of(evs, 3, &reqs[i])->res, LEN);
		t_check_pattern(bufs[i], LEN, (uint64_t)i * 100 * KiB, 14);
	}
	cr_assert_eq(t_stats(ctx).requests, N);
}

/* getevents' own argument checks. */
Test(badinput, getevents_arguments)
{
	struct fsaio_event evs[4];
	struct timespec bad1 = { 0, -1 }, bad2 = { 0, 1000000000L }, bad3 = { -1, 0 };

	cr_assert_eq(T_CALL(fsaio_getevents(ctx, 2, 1, evs, NULL)), -EINVAL, "min_nr > nr");
	cr_assert_eq(T_CALL(fsaio_getevents(ctx, 1, 4, evs, &bad1)), -EINVAL, "tv_nsec < 0");
	cr_assert_eq(T_CALL(fsaio_getevents(ctx, 1, 4, evs, &bad2)), -EINVAL, "tv_nsec >= 1e9");
	cr_assert_eq(T_CALL(fsaio_getevents(ctx, 1, 4, evs, &bad3)), -EINVAL, "tv_sec < 0");
	cr_assert_eq(T_CALL(fsaio_getevents(ctx, 0, 0, evs, NULL)), 0, "nr 0");
}

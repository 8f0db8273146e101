/* SPDX-License-Identifier: MIT */
/*
 * Every opcode and rw flag, each checked against what the kernel shows
 * afterwards (file contents, size, dirty pages from cachestat), plus the
 * kinds of file the engine treats differently: tmpfs (no RWF_NOWAIT),
 * O_DIRECT, pipes, directories.
 */
#include "t_helpers.h"

#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#define KiB 1024u
#define MiB (1024u * 1024u)

TestSuite(ops, .init = t_setup, .fini = t_teardown, .timeout = 60);

/* A caller's RWF_NOWAIT request never goes to a worker, whole or in part:
 * assert that none did, then destroy the context. */
static void nowait_done(fsaio_ctx_t *ctx)
{
	struct fsaio_stats st = t_stats(ctx);

	cr_assert_eq(st.queued, 0);
	cr_assert_eq(st.partial_inline, 0);
	cr_assert_eq(st.bytes_worker, 0);
	t_ctx_destroy(ctx);
}

/* Run req alone (t_run1) with the caller's RWF_NOWAIT: its event. */
static struct fsaio_event nowait_run(fsaio_ctx_t *ctx, struct fsaio_req *req)
{
	req->rw_flags = RWF_NOWAIT;
	return t_run1(ctx, req);
}

Test(ops, pread_pwrite)
{
	int fd = t_coldfile(1 * MiB, 40);
	fsaio_ctx_t *ctx = t_pool_ctx(NULL);
	enum { LEN = 40000 };
	uint8_t src[LEN], dst[LEN];

	/* Overwrite a cold range, then a hot one: ext4 refuses RWF_NOWAIT writes,
	 * so these exercise the engine's fallback for writes. */
	t_fill_pattern(src, LEN, 5000, 41);
	struct fsaio_req req;
	fsaio_prep_pwrite(&req, fd, src, LEN, 5000);
	cr_assert_eq(t_run1(ctx, &req).res, LEN);
	t_make_hot(fd, 600000, LEN);
	t_fill_pattern(src, LEN, 600000, 41);
	fsaio_prep_pwrite(&req, fd, src, LEN, 600000);
	cr_assert_eq(t_run1(ctx, &req).res, LEN);

	t_check_file(fd, 0, 5000, 40);
	t_check_file(fd, 5000, LEN, 41);
	t_check_file(fd, 5000 + LEN, 600000 - 5000 - LEN, 40);
	t_check_file(fd, 600000, LEN, 41);
	t_check_file(fd, 600000 + LEN, 1 * MiB - 600000 - LEN, 40);

	fsaio_prep_pread(&req, fd, dst, LEN, 5000);
	cr_assert_eq(t_run1(ctx, &req).res, LEN);
	t_check_pattern(dst, LEN, 5000, 41);

	struct fsaio_stats st = t_stats(ctx);
	cr_assert_eq(st.requests, 3);
	cr_assert_eq(st.bytes_inline + st.bytes_worker, 3 * LEN);
	t_ctx_destroy(ctx);
}

Test(ops, preadv_pwritev)
{
	int fd = t_tmpfile(256 * KiB, 42);
	fsaio_ctx_t *ctx = t_ctx(NULL);
	uint8_t a[1000], b[3000], c[17];
	struct iovec iov[3] = { { a, sizeof(a) }, { b, sizeof(b) }, { c, sizeof(c) } };
	size_t total = sizeof(a) + sizeof(b) + sizeof(c);
	uint64_t off = 77777;

	t_fill_pattern(a, sizeof(a), off, 43);
	t_fill_pattern(b, sizeof(b), off + sizeof(a), 43);
	t_fill_pattern(c, sizeof(c), off + sizeof(a) + sizeof(b), 43);
	struct fsaio_req req;
	fsaio_prep_pwritev(&req, fd, iov, 3, (int64_t)off);
	cr_assert_eq(t_run1(ctx, &req).res, (int64_t)total);
	t_check_file(fd, off, total, 43);
	t_check_file(fd, 0, off, 42);

	memset(a, 0, sizeof(a));
	memset(b, 0, sizeof(b));
	memset(c, 0, sizeof(c));
	t_make_cold(fd);
	fsaio_prep_preadv(&req, fd, iov, 3, (int64_t)off);
	cr_assert_eq(t_run1(ctx, &req).res, (int64_t)total);
	t_check_pattern(a, sizeof(a), off, 43);
	t_check_pattern(b, sizeof(b), off + sizeof(a), 43);
	t_check_pattern(c, sizeof(c), off + sizeof(a) + sizeof(b), 43);
	t_ctx_destroy(ctx);
}

/* fsync and fdatasync must leave no dirty page behind, and always run on a
 * worker (they block by nature). */
static void sync_op(int op)
{
	int fd = t_tmpfile(1 * MiB, 44);
	/* The fresh file's pages are dirty unless a sync(2) elsewhere or the
	 * flusher wrote them back already: then they are written again. */
	for (int i = 0; i < 100 && !t_dirty_pages(fd, 0, 0); i++) {
		static uint8_t buf[1 * MiB];

		t_fill_pattern(buf, sizeof(buf), 0, 44);
		cr_assert_eq(pwrite(fd, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	}
	cr_assert_gt(t_dirty_pages(fd, 0, 0), 0, "the file should have dirty pages");
	fsaio_ctx_t *ctx = t_pool_ctx(NULL);
	struct fsaio_req req;
	if (op == FSAIO_OP_FSYNC)
		fsaio_prep_fsync(&req, fd);
	else
		fsaio_prep_fdatasync(&req, fd);
	req.user_data = (void *)0xf5;
	struct fsaio_event ev = t_run1(ctx, &req);
	cr_assert_eq(ev.res, 0, "res %lld", (long long)ev.res);
	cr_assert_eq(ev.user_data, (void *)0xf5);
	cr_assert_eq(t_dirty_pages(fd, 0, 0), 0);

	struct fsaio_stats st = t_stats(ctx);
	cr_assert_eq(st.requests, 1);
	cr_assert_eq(st.completed_inline, 0);
	cr_assert_eq(st.queued, 1);
	t_ctx_destroy(ctx);
}

Test(ops, fsync)
{
	sync_op(FSAIO_OP_FSYNC);
}

Test(ops, fdatasync)
{
	sync_op(FSAIO_OP_FDSYNC);
}

Test(ops, fsync_read_only_fd)
{
	int fd = t_tmpfile(256 * KiB, 45);
	int ro = t_reopen(fd, O_RDONLY);
	fsaio_ctx_t *ctx = t_ctx(NULL);
	struct fsaio_req req;
	fsaio_prep_fsync(&req, ro);
	cr_assert_eq(t_run1(ctx, &req).res, 0);
	cr_assert_eq(t_dirty_pages(fd, 0, 0), 0);
	t_ctx_destroy(ctx);
}

/* RWF_DSYNC / RWF_SYNC: the written range is on disk when the event comes. */
static void sync_write(int flag)
{
	int fd = t_coldfile(1 * MiB, 46);
	fsaio_ctx_t *ctx = t_ctx(NULL);
	enum { LEN = 64 * 1024 };
	uint8_t *src = malloc(LEN);
	t_fill_pattern(src, LEN, 128 * KiB, 47);
	struct fsaio_req req;
	fsaio_prep_pwrite(&req, fd, src, LEN, 128 * KiB);
	req.rw_flags = flag;
	cr_assert_eq(t_run1(ctx, &req).res, LEN);
	cr_assert_eq(t_dirty_pages(fd, 0, 0), 0, "dirty pages left after a %s write",
		     flag == RWF_DSYNC ? "RWF_DSYNC" : "RWF_SYNC");
	t_check_file(fd, 128 * KiB, LEN, 47);
	t_check_file(fd, 0, 128 * KiB, 46);
	t_ctx_destroy(ctx);
	free(src);
}

Test(ops, rwf_dsync_write)
{
	sync_write(RWF_DSYNC);
}

Test(ops, rwf_sync_write)
{
	sync_write(RWF_SYNC);
}

Test(ops, rwf_append_write)
{
	size_t size = 100000;
	int fd = t_tmpfile(size, 48);
	fsaio_ctx_t *ctx = t_ctx(NULL);
	enum { LEN = 3000 };
	uint8_t src[LEN];
	t_fill_pattern(src, LEN, size, 49);
	struct fsaio_req req;
	fsaio_prep_pwrite(&req, fd, src, LEN, 0);
	req.rw_flags = RWF_APPEND;
	cr_assert_eq(t_run1(ctx, &req).res, LEN);

	struct stat st;
	cr_assert_eq(fstat(fd, &st), 0);
	cr_assert_eq(st.st_size, (off_t)(size + LEN), "RWF_APPEND did not append");
	t_check_file(fd, 0, size, 48);
	t_check_file(fd, size, LEN, 49);
	t_ctx_destroy(ctx);
}

Test(ops, rwf_hipri_read)
{
	int fd = t_coldfile(256 * KiB, 50);
	fsaio_ctx_t *ctx = t_ctx(NULL);
	uint8_t buf[20000];
	struct fsaio_req req;
	fsaio_prep_pread(&req, fd, buf, sizeof(buf), 1234);
	req.rw_flags = RWF_HIPRI;
	cr_assert_eq(t_run1(ctx, &req).res, (int64_t)sizeof(buf));
	t_check_pattern(buf, sizeof(buf), 1234, 50);
	t_ctx_destroy(ctx);
}

/* The caller's RWF_NOWAIT: complete with what can be done without blocking,
 * or -EAGAIN, and never hand anything to the pool. */
Test(ops, caller_nowait_cold_large)
{
	int fd = t_coldfile(2 * MiB, 51);
	fsaio_ctx_t *ctx = t_ctx(NULL);
	static uint8_t buf[256 * KiB];
	size_t len = sizeof(buf);
	struct fsaio_req req;
	fsaio_prep_pread(&req, fd, buf, len, 512 * KiB);
	struct fsaio_event ev = nowait_run(ctx, &req);
	cr_assert(ev.res == -EAGAIN || (ev.res > 0 && ev.res < (int64_t)len),
		  "cold RWF_NOWAIT read: res %lld", (long long)ev.res);
	if (ev.res > 0)
		t_check_pattern(buf, (size_t)ev.res, 512 * KiB, 51);
	nowait_done(ctx);
}

Test(ops, caller_nowait_cold_small)
{
	int fd = t_coldfile(1 * MiB, 52);
	fsaio_ctx_t *ctx = t_ctx(NULL);
	enum { N = 4, LEN = 4096 };
	static uint8_t bufs[N][LEN];
	for (int i = 0; i < N; i++) {
		struct fsaio_req req;
		uint64_t off = (uint64_t)i * 256 * KiB;
		fsaio_prep_pread(&req, fd, bufs[i], LEN, (int64_t)off);
		struct fsaio_event ev = nowait_run(ctx, &req);
		/* The NOWAIT attempt starts readahead: a fast device may have the
		 * page by the time the kernel looks again, hence "or all". */
		cr_assert(ev.res == -EAGAIN || (ev.res > 0 && ev.res <= LEN),
			  "cold RWF_NOWAIT read %d: res %lld", i, (long long)ev.res);
		if (ev.res > 0)
			t_check_pattern(bufs[i], (size_t)ev.res, off, 52);
	}
	cr_assert_eq(t_stats(ctx).requests, N);
	nowait_done(ctx);
}

Test(ops, caller_nowait_hot_and_half)
{
	int fd = t_hotprefix_file(1 * MiB, 53, 128 * KiB);
	fsaio_ctx_t *ctx = t_ctx(NULL);
	static uint8_t buf[256 * KiB];
	size_t len = sizeof(buf);
	struct fsaio_req req;

	fsaio_prep_pread(&req, fd, buf, 100 * KiB, 10 * KiB);
	cr_assert_eq(nowait_run(ctx, &req).res, 100 * KiB);
	t_check_pattern(buf, 100 * KiB, 10 * KiB, 53);

	/* Half-cached: the cached prefix and no more, unless the readahead the
	 * attempt started finished before the engine looked again (the kernel
	 * winning a race, see test_basic): then set up and try again. */
	bool partial_seen = false;
	for (int round = 0; round < 5 && !partial_seen; round++) {
		if (round) {
			t_make_cold(fd);
			t_make_hot(fd, 0, 128 * KiB);
		}
		fsaio_prep_pread(&req, fd, buf, len, 0);
		struct fsaio_event ev = nowait_run(ctx, &req);
		cr_assert_geq(ev.res, 128 * KiB, "half-cached RWF_NOWAIT: res %lld", (long long)ev.res);
		cr_assert_leq(ev.res, (int64_t)len);
		t_check_pattern(buf, (size_t)ev.res, 0, 53);
		partial_seen = ev.res < (int64_t)len;
	}
	cr_assert(partial_seen, "5 rounds, none returned the cached prefix only");

	nowait_done(ctx);
}

/* ext4 refuses RWF_NOWAIT buffered writes: the caller gets a failure it can
 * act on (or the write, on filesystems that allow it), never a queued one. */
Test(ops, caller_nowait_write)
{
	int fd = t_coldfile(256 * KiB, 54);
	fsaio_ctx_t *ctx = t_ctx(NULL);
	enum { LEN = 8192 };
	uint8_t src[LEN];
	t_fill_pattern(src, LEN, 4096, 55);
	struct fsaio_req req;
	fsaio_prep_pwrite(&req, fd, src, LEN, 4096);
	struct fsaio_event ev = nowait_run(ctx, &req);
	cr_assert(ev.res == LEN || ev.res == -EAGAIN || ev.res == -EOPNOTSUPP,
		  "RWF_NOWAIT write: res %lld", (long long)ev.res);
	t_check_file(fd, 4096, LEN, ev.res == LEN ? 55 : 54);
	cr_assert_eq(t_stats(ctx).queued, 0);
	t_ctx_destroy(ctx);
}

/* tmpfs answers RWF_NOWAIT with EOPNOTSUPP even when cached: the engine must
 * still read and write it correctly, every time. */
Test(ops, tmpfs_read_write)
{
	size_t size = 1 * MiB + 333;
	int fd = t_shmfile(size, 56);
	fsaio_ctx_t *ctx = t_pool_ctx(NULL);
	enum { N = 8, LEN = 50000 };
	static uint8_t bufs[N][LEN];

	for (unsigned round = 0; round < 3; round++)
		t_read_batch(ctx, fd, &bufs[0][0], N, LEN, 99991, 56, "round", round);

	/* Across EOF and a write. */
	struct fsaio_req req;
	fsaio_prep_pread(&req, fd, bufs[0], LEN, (int64_t)size - 1000);
	cr_assert_eq(t_run1(ctx, &req).res, 1000);
	t_check_pattern(bufs[0], 1000, size - 1000, 56);
	t_fill_pattern(bufs[1], LEN, 7, 57);
	fsaio_prep_pwrite(&req, fd, bufs[1], LEN, 7);
	cr_assert_eq(t_run1(ctx, &req).res, LEN);
	t_check_file(fd, 7, LEN, 57);
	t_check_file(fd, 0, 7, 56);

	struct fsaio_stats st = t_stats(ctx);
	cr_assert_eq(st.requests, 3 * N + 2);
	cr_assert_eq(st.bytes_inline + st.bytes_worker, (uint64_t)(3 * N + 1) * LEN + 1000);
	t_ctx_destroy(ctx);
}

Test(ops, o_direct_read_write)
{
	int fd = t_coldfile(1 * MiB, 58);
	int dfd = t_reopen(fd, O_RDWR | O_DIRECT);
	fsaio_ctx_t *ctx = t_ctx(NULL);
	enum { LEN = 64 * 1024 };
	void *buf;
	cr_assert_eq(posix_memalign(&buf, 4096, LEN), 0);

	struct fsaio_req req;
	fsaio_prep_pread(&req, dfd, buf, LEN, 128 * KiB);
	cr_assert_eq(t_run1(ctx, &req).res, LEN);
	t_check_pattern(buf, LEN, 128 * KiB, 58);

	t_fill_pattern(buf, LEN, 512 * KiB, 59);
	fsaio_prep_pwrite(&req, dfd, buf, LEN, 512 * KiB);
	cr_assert_eq(t_run1(ctx, &req).res, LEN);
	t_check_file(fd, 512 * KiB, LEN, 59);
	t_check_file(fd, 0, 512 * KiB, 58);
	t_ctx_destroy(ctx);
	free(buf);
}

Test(ops, poll_regular_file)
{
	int fd = t_tmpfile(4096, 60);
	fsaio_ctx_t *ctx = t_ctx(NULL);
	struct fsaio_req req;
	fsaio_prep_poll(&req, fd, POLLIN | POLLOUT);
	struct fsaio_event ev = t_run1(ctx, &req);
	cr_assert_eq(ev.res & (POLLIN | POLLOUT), POLLIN | POLLOUT, "revents 0x%llx",
		     (unsigned long long)ev.res);
	t_ctx_destroy(ctx);
}

/* A poll on an empty pipe completes only once the pipe becomes readable. */
Test(ops, poll_pipe)
{
	int p[2];
	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	fsaio_ctx_t *ctx = t_ctx(NULL);
	struct fsaio_req req;
	fsaio_prep_poll(&req, p[0], POLLIN);
	t_submit1(ctx, &req);

	struct fsaio_event ev;
	struct timespec wait = { 0, 50 * 1000 * 1000 };
	cr_assert_eq(T_CALL(fsaio_getevents(ctx, 1, 1, &ev, &wait)), 0,
		     "poll completed on an empty pipe");
	cr_assert_eq(write(p[1], "x", 1), 1);
	t_reap_all(ctx, 1, &ev, T_EVENT_TIMEOUT_MS);
	cr_assert_eq(ev.req, &req);
	cr_assert(ev.res & POLLIN, "revents 0x%llx", (unsigned long long)ev.res);

	/* Already readable: no waiting at all. */
	fsaio_prep_poll(&req, p[0], POLLIN);
	ev = t_run1(ctx, &req);
	cr_assert(ev.res & POLLIN);
	t_ctx_destroy(ctx);
	close(p[0]);
	close(p[1]);
}

/* Pipes: offset -1; a read gets what is there, FSAIO_REQ_FULL waits for all. */
Test(ops, pipe_read_write)
{
	int p[2];
	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	fsaio_ctx_t *ctx = t_ctx(NULL);
	uint8_t src[300], dst[4096];
	t_fill_pattern(src, sizeof(src), 0, 61);

	struct fsaio_req req;
	fsaio_prep_pwrite(&req, p[1], src, 100, -1);
	cr_assert_eq(t_run1(ctx, &req).res, 100);
	fsaio_prep_pread(&req, p[0], dst, sizeof(dst), -1);
	cr_assert_eq(t_run1(ctx, &req).res, 100);
	t_check_pattern(dst, 100, 0, 61);

	cr_assert_eq(write(p[1], src, 100), 100);
	fsaio_prep_pread(&req, p[0], dst, 300, -1);
	req.flags = FSAIO_REQ_FULL;
	t_submit1(ctx, &req);
	struct fsaio_event ev;
	struct timespec wait = { 0, 50 * 1000 * 1000 };
	cr_assert_eq(T_CALL(fsaio_getevents(ctx, 1, 1, &ev, &wait)), 0,
		     "FSAIO_REQ_FULL read completed with 100 of 300 bytes");
	cr_assert_eq(write(p[1], src + 100, 200), 200);
	t_reap_all(ctx, 1, &ev, T_EVENT_TIMEOUT_MS);
	cr_assert_eq(ev.res, 300);
	t_check_pattern(dst, 300, 0, 61);

	/* The writer gone: EOF, a short read. */
	cr_assert_eq(write(p[1], src, 10), 10);
	close(p[1]);
	fsaio_prep_pread(&req, p[0], dst, 300, -1);
	req.flags = FSAIO_REQ_FULL;
	cr_assert_eq(t_run1(ctx, &req).res, 10);
	t_ctx_destroy(ctx);
	close(p[0]);
}

Test(ops, read_directory)
{
	int dfd = open(t_dir(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_assert_geq(dfd, 0);
	fsaio_ctx_t *ctx = t_ctx(NULL);
	uint8_t buf[512];
	struct fsaio_req req, *rp = &req;
	fsaio_prep_pread(&req, dfd, buf, sizeof(buf), 0);
	int r = T_CALL(fsaio_submit(ctx, &rp, 1));
	if (r == 1) {
		struct fsaio_event ev;
		t_reap_all(ctx, 1, &ev, T_EVENT_TIMEOUT_MS);
		cr_assert_eq(ev.res, -EISDIR, "res %lld", (long long)ev.res);
	} else {
		cr_assert_eq(r, -EISDIR, "submit: %d", r);
	}
	t_ctx_destroy(ctx);
	close(dfd);
}

/* RWF_NOWAIT is the kernel's promise whatever the fd did before: after a
 * plain write taught the engine that the fs refuses NOWAIT writes, a NOWAIT
 * write still gets the kernel's answer, never a blocking write. */
Test(ops, caller_nowait_write_after_plain_write)
{
	int fd = t_tmpfile(256 * KiB, 57);
	int probe_fd = t_tmpfile(256 * KiB, 58);
	fsaio_ctx_t *ctx = t_ctx(NULL);
	enum { LEN = 4096 + 100 };
	uint8_t src[LEN];
	struct fsaio_req req;

	t_fill_pattern(src, LEN, 1000, 59);
	fsaio_prep_pwrite(&req, fd, src, LEN, 1000);
	struct fsaio_event ev = t_run1(ctx, &req);
	cr_assert_eq(ev.res, LEN);
	t_make_cold(fd);
	t_make_cold(probe_fd);
	/* What the kernel answers a NOWAIT write on this filesystem. */
	struct iovec iov = { src, LEN };
	ssize_t k = pwritev2(probe_fd, &iov, 1, 20000, RWF_NOWAIT);
	long long want = k < 0 ? -errno : k;

	uint64_t queued = t_stats(ctx).queued;
	fsaio_prep_pwrite(&req, fd, src, LEN, 20000);
	ev = nowait_run(ctx, &req);
	cr_assert_eq(t_stats(ctx).queued, queued, "a NOWAIT write reached a worker");
	if (want == -EOPNOTSUPP)
		cr_assert_eq(ev.res, -EOPNOTSUPP, "the kernel refuses NOWAIT writes here; res %lld",
			     (long long)ev.res);
	else
		cr_assert(ev.res == LEN || ev.res == -EAGAIN, "res %lld", (long long)ev.res);
	t_ctx_destroy(ctx);
}

/* FSAIO_CTX_INLINE_WRITES: every kind of buffered write has its event queued
 * when fsaio_submit returns, as the kernel's AIO does inside io_submit. */
Test(ops, inline_writes_complete_in_submit)
{
	int fd = t_tmpfile(4 * MiB, 60);
	int afd = t_reopen(fd, O_WRONLY | O_APPEND);
	int sfd = t_reopen(fd, O_WRONLY | O_DSYNC);
	fsaio_ctx_t *ctx = t_ctx(&(struct fsaio_params){ .flags = FSAIO_CTX_INLINE_WRITES });
	size_t big = 1 * MiB;
	uint8_t *src = malloc(big);
	struct { int fd; size_t len; int64_t off; } cases[] = {
		{ fd, 100, 5000 },              /* sub-page into a cold page */
		{ afd, 3000, 0 },               /* O_APPEND */
		{ fd, big, 1 * MiB },           /* 1 MiB */
		{ sfd, 8192, 2 * MiB + 512 },   /* O_DSYNC */
	};
	const struct timespec zero = { 0, 0 };

	cr_assert_not_null(src);
	t_make_cold(fd);
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fsaio_req req, *list[] = { &req };
		struct fsaio_event ev;

		memset(src, 'a' + i, cases[i].len);
		fsaio_prep_pwrite(&req, cases[i].fd, src, cases[i].len, cases[i].off);
		T_ASSERT_RET(fsaio_submit(ctx, list, 1), 1);
		T_ASSERT_RET(fsaio_getevents(ctx, 0, 1, &ev, &zero), 1);
		cr_assert_eq(ev.res, (int64_t)cases[i].len, "case %u: res %lld", i, (long long)ev.res);
	}
	struct stat st;
	cr_assert_eq(fstat(fd, &st), 0);
	cr_assert_eq(st.st_size, 4 * MiB + 3000, "the O_APPEND write went to the end");
	cr_assert_eq(t_stats(ctx).queued, 0);
	t_ctx_destroy(ctx);
	free(src);
}

/* SPDX-License-Identifier: MIT */
/*
 * fd numbers are reused: a program closes one file and the next open gets
 * the same number for something else. Whatever the engine learnt about the
 * old file (kind, access mode, NOWAIT support) must not steer a request on
 * the new one: the request must act on the new file, at its own offset.
 */
#include "t_helpers.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#define KiB 1024u

TestSuite(fdreuse, .init = t_setup, .fini = t_teardown, .timeout = 60);

/* Put a new open file at number num (closing what was there). */
static void move_to(int fd, int num)
{
	cr_assert_eq(dup2(fd, num), num);
	close(fd);
}

/* Read the len bytes of msg, written to s[1], from the stream s[0] through
 * the engine (offset -1); then close s[1]. */
static void stream_read_msg(fsaio_ctx_t *ctx, int s[2], const char *msg, size_t len)
{
	uint8_t buf[64];
	struct fsaio_req req;

	cr_assert_eq(write(s[1], msg, len), (ssize_t)len);
	fsaio_prep_pread(&req, s[0], buf, sizeof(buf), -1);
	cr_assert_eq(t_run1(ctx, &req).res, (int64_t)len);
	close(s[1]);
}

/* A pipe's number reused for a regular file: a read at an offset must read
 * at that offset, not at the file position. */
Test(fdreuse, pipe_then_file)
{
	fsaio_ctx_t *ctx = t_ctx(NULL);
	int p[2];
	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	uint8_t buf[8192];
	struct fsaio_req req;

	stream_read_msg(ctx, p, "abc", 3);
	move_to(t_tmpfile(256 * KiB, 80), p[0]);
	/* The file position stays at 0: a read that ignored the offset would
	 * return the file's first bytes. */
	cr_assert_eq(lseek(p[0], 0, SEEK_SET), 0);
	t_read_check(ctx, p[0], buf, sizeof(buf), 64 * KiB, 80);

	fsaio_prep_pwrite(&req, p[0], buf, 100, 1000);
	t_fill_pattern(buf, 100, 1000, 81);
	cr_assert_eq(t_run1(ctx, &req).res, 100);
	t_check_file(p[0], 0, 1000, 80);
	t_check_file(p[0], 1000, 100, 81);
	t_check_file(p[0], 1100, 10000, 80);
	t_ctx_destroy(ctx);
}

/* A socket's number reused for a regular file, the same way. */
Test(fdreuse, socket_then_file)
{
	fsaio_ctx_t *ctx = t_ctx(NULL);
	int sv[2];
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	uint8_t buf[4096];

	stream_read_msg(ctx, sv, "hello", 5);
	move_to(t_coldfile(64 * KiB, 82), sv[0]);
	t_read_check(ctx, sv[0], buf, sizeof(buf), 12345, 82);
	t_ctx_destroy(ctx);
}

/* A read-write file's number reused for a read-only one: a write must be
 * refused, a read must read the new file. */
Test(fdreuse, rdwr_then_rdonly)
{
	fsaio_ctx_t *ctx = t_ctx(NULL);
	int a = t_tmpfile(64 * KiB, 83);
	int b = t_tmpfile(64 * KiB, 84);
	int b_ro = t_reopen(b, O_RDONLY);
	uint8_t buf[4096];
	struct fsaio_req req, *rp = &req;

	t_fill_pattern(buf, sizeof(buf), 0, 85);
	fsaio_prep_pwrite(&req, a, buf, sizeof(buf), 0);
	cr_assert_eq(t_run1(ctx, &req).res, (int64_t)sizeof(buf));

	move_to(b_ro, a);
	fsaio_prep_pwrite(&req, a, buf, sizeof(buf), 0);
	T_ASSERT_RET(fsaio_submit(ctx, &rp, 1), -EBADF);
	t_no_event(ctx);
	t_check_file(b, 0, 64 * KiB, 84);

	fsaio_prep_pread(&req, a, buf, sizeof(buf), 8192);
	cr_assert_eq(t_run1(ctx, &req).res, (int64_t)sizeof(buf));
	t_check_pattern(buf, sizeof(buf), 8192, 84);
	t_ctx_destroy(ctx);
}

/* A tmpfs file's number (no RWF_NOWAIT) reused for a file on disk, and the
 * other way round: both keep reading the right data. */
Test(fdreuse, tmpfs_then_disk_then_tmpfs)
{
	fsaio_ctx_t *ctx = t_ctx(NULL);
	int num = t_shmfile(64 * KiB, 86);
	uint8_t buf[4096];
	struct fsaio_req req;

	fsaio_prep_pread(&req, num, buf, sizeof(buf), 4096);
	cr_assert_eq(t_run1(ctx, &req).res, (int64_t)sizeof(buf));
	t_check_pattern(buf, sizeof(buf), 4096, 86);

	int d = t_coldfile(64 * KiB, 87);
	move_to(d, num);
	fsaio_prep_pread(&req, num, buf, sizeof(buf), 4096);
	cr_assert_eq(t_run1(ctx, &req).res, (int64_t)sizeof(buf));
	t_check_pattern(buf, sizeof(buf), 4096, 87);

	int s = t_shmfile(64 * KiB, 88);
	move_to(s, num);
	fsaio_prep_pread(&req, num, buf, sizeof(buf), 8192);
	cr_assert_eq(t_run1(ctx, &req).res, (int64_t)sizeof(buf));
	t_check_pattern(buf, sizeof(buf), 8192, 88);
	t_ctx_destroy(ctx);
}

/*
 * A request is bound to the file its fd named at submit, as the kernel's AIO
 * holds a reference to it: dup2() of another file over that number while
 * the requests wait must not send them to the other file.
 */
enum { BIND_N = 8, BIND_LEN = 16 * KiB };

/* Queued reads and writes on A (the one worker held by a blocker, so they
 * cannot start before the dup2), then B put at A's number. */
Test(fdreuse, queued_requests_stay_on_their_file)
{
	struct t_sat sat;
	t_saturate(&sat, &(struct fsaio_params){ .workers = 1 });
	int a = t_tmpfile(1024 * KiB, 81);
	int b = t_tmpfile(1024 * KiB, 82);
	static uint8_t rbuf[BIND_N][BIND_LEN], wbuf[BIND_N][100];
	struct fsaio_req reqs[2 * BIND_N], *rp[2 * BIND_N];
	struct fsaio_event evs[2 * BIND_N + 1];

	t_make_cold(a);
	for (int i = 0; i < BIND_N; i++) {
		/* Cold reads, and sub-page writes into cold pages: both wait
		 * for the worker. */
		fsaio_prep_pread(&reqs[i], a, rbuf[i], BIND_LEN, (int64_t)i * 2 * BIND_LEN);
		memset(wbuf[i], 'w', sizeof(wbuf[i]));
		fsaio_prep_pwrite(&reqs[BIND_N + i], a, wbuf[i], sizeof(wbuf[i]),
				  (int64_t)i * 2 * BIND_LEN + BIND_LEN + 7);
	}
	for (int i = 0; i < 2 * BIND_N; i++)
		rp[i] = &reqs[i];
	t_submit(sat.ctx, rp, 2 * BIND_N);
	int a_again = t_reopen(a, O_RDONLY);
	cr_assert_eq(dup2(b, a), a);
	t_sat_unblock(&sat);
	t_reap_all(sat.ctx, 2 * BIND_N + 1, evs, T_EVENT_TIMEOUT_MS);
	t_sat_check(&sat, evs, 2 * BIND_N + 1);
	for (int i = 0; i < BIND_N; i++) {
		const struct fsaio_event *ev = t_event_of(evs, 2 * BIND_N + 1, &reqs[i]);

		cr_assert_eq(ev->res, BIND_LEN, "read %d: res %lld", i, (long long)ev->res);
		t_check_pattern(rbuf[i], BIND_LEN, (uint64_t)i * 2 * BIND_LEN, 81);
		ev = t_event_of(evs, 2 * BIND_N + 1, &reqs[BIND_N + i]);
		cr_assert_eq(ev->res, 100, "write %d: res %lld", i, (long long)ev->res);
	}
	/* B is untouched; A holds the writes. */
	t_check_file(b, 0, 1024 * KiB, 82);
	for (int i = 0; i < BIND_N; i++) {
		uint8_t got[100];
		cr_assert_eq(pread(a_again, got, sizeof(got), (off_t)i * 2 * BIND_LEN + BIND_LEN + 7), 100);
		t_check_bytes(got, sizeof(got), 'w');
	}
	t_ctx_destroy(sat.ctx);
}

/* Reap the BIND_N reads of reqs, read k into bufs[k] from k * stride, and
 * assert each read all of it, the pattern of seed: the file it was
 * submitted on. */
static void reap_bound_reads(fsaio_ctx_t *ctx, const struct fsaio_req *reqs,
			     uint8_t (*bufs)[BIND_LEN], uint64_t stride, unsigned seed)
{
	struct fsaio_event evs[BIND_N];

	t_reap_all(ctx, BIND_N, evs, T_EVENT_TIMEOUT_MS);
	for (int i = 0; i < BIND_N; i++) {
		cr_assert_eq(evs[i].res, BIND_LEN, "res %lld", (long long)evs[i].res);
		int k = (int)(evs[i].req - reqs);
		t_check_pattern(bufs[k], BIND_LEN, (uint64_t)k * stride, seed);
	}
}

/* Cold reads carried by each backend, the fd closed and its number taken by
 * another file at once: whether a read finished before or after, its data is
 * the submitted file's. */
static void reads_survive_reuse(uint32_t backend)
{
	fsaio_ctx_t *ctx = t_ctx_backend(backend);
	int a = t_tmpfile(1024 * KiB, 83);
	static uint8_t bufs[BIND_N][BIND_LEN];
	struct fsaio_req reqs[BIND_N], *rp[BIND_N];

	t_make_cold(a);
	t_prep_reads(reqs, rp, BIND_N, a, bufs[0], BIND_LEN, 3 * BIND_LEN);
	t_submit(ctx, rp, BIND_N);
	cr_assert_eq(close(a), 0);
	int b = t_tmpfile(1024 * KiB, 84);
	if (b != a)
		move_to(b, a);
	reap_bound_reads(ctx, reqs, bufs, 3 * BIND_LEN, 83);
	t_ctx_destroy(ctx);
}

Test(fdreuse, reads_stay_on_their_file_pool)
{
	reads_survive_reuse(FSAIO_BACKEND_THREADS);
}

Test(fdreuse, reads_stay_on_their_file_ring)
{
	reads_survive_reuse(FSAIO_BACKEND_URING);
}

/* A submitting thread that exits at once makes io_uring end its requests'
 * pending work; the engine carries them on from its own thread, still on
 * the submitted file after its number was given to another. */
struct exit_submit {
	fsaio_ctx_t *ctx;
	struct fsaio_req *reqs;
	int ret;
};

static void *submit_and_exit(void *arg)
{
	struct exit_submit *e = arg;
	struct fsaio_req *rp[BIND_N];

	for (int i = 0; i < BIND_N; i++)
		rp[i] = &e->reqs[i];
	e->ret = fsaio_submit(e->ctx, rp, BIND_N);
	return NULL;
}

Test(fdreuse, reads_of_an_exited_submitter_stay_on_their_file)
{
	fsaio_ctx_t *ctx = t_ctx_backend(FSAIO_BACKEND_URING);
	int a = t_tmpfile(1024 * KiB, 85);
	int b = t_tmpfile(1024 * KiB, 86);
	static uint8_t bufs[BIND_N][BIND_LEN];
	struct fsaio_req reqs[BIND_N];
	struct exit_submit e = { ctx, reqs, 0 };
	pthread_t th;

	t_make_cold(a);
	t_prep_reads(reqs, NULL, BIND_N, a, bufs[0], BIND_LEN, 5 * BIND_LEN);
	cr_assert_eq(pthread_create(&th, NULL, submit_and_exit, &e), 0);
	cr_assert_eq(pthread_join(th, NULL), 0);
	cr_assert_eq(e.ret, BIND_N);
	cr_assert_eq(dup2(b, a), a);
	reap_bound_reads(ctx, reqs, bufs, 5 * BIND_LEN, 85);
	t_ctx_destroy(ctx);
}

/* Reads waiting on an empty pipe stay bound to it when another pipe takes
 * its number: they return the first pipe's bytes, and the second pipe's
 * bytes stay where they are. */
Test(fdreuse, parked_pipe_reads_stay_on_their_pipe)
{
	fsaio_ctx_t *ctx = t_ctx(NULL);
	int a[2], b[2];
	char bufs[4][8], rest[16];
	struct fsaio_req reqs[4], *rp[4];
	struct fsaio_event evs[4];

	cr_assert_eq(pipe2(a, O_CLOEXEC), 0);
	cr_assert_eq(pipe2(b, O_CLOEXEC), 0);
	for (int i = 0; i < 4; i++) {
		fsaio_prep_pread(&reqs[i], a[0], bufs[i], sizeof(bufs[i]), -1);
		reqs[i].flags = FSAIO_REQ_FULL;
		rp[i] = &reqs[i];
	}
	t_submit(ctx, rp, 4);
	cr_assert_eq(write(b[1], "BBBBBBBB", 8), 8);
	cr_assert_eq(dup2(b[0], a[0]), a[0]);
	cr_assert_eq(write(a[1], "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", 32), 32);
	t_reap_all(ctx, 4, evs, T_EVENT_TIMEOUT_MS);
	for (int i = 0; i < 4; i++) {
		cr_assert_eq(evs[i].res, 8, "res %lld", (long long)evs[i].res);
		cr_assert_eq(memcmp(evs[i].req->buf, "AAAAAAAA", 8), 0);
	}
	cr_assert_eq(read(b[0], rest, sizeof(rest)), 8, "the other pipe's bytes were taken");
	t_ctx_destroy(ctx);
	close(a[1]);
	close(b[0]);
	close(b[1]);
}

/* Once a parked write completed, the engine holds nothing of the pipe: the
 * caller's close of the write end gives the reader its end of file. */
Test(fdreuse, completed_pipe_write_leaves_no_writer_behind)
{
	fsaio_ctx_t *ctx = t_ctx(NULL);
	int p[2];
	static char fill[1 << 16], big[1 << 17], sink[1 << 16];
	struct fsaio_req req;
	struct fsaio_event ev;

	cr_assert_eq(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
	while (write(p[1], fill, sizeof(fill)) > 0)
		;
	fsaio_prep_pwrite(&req, p[1], big, sizeof(big), -1);
	t_submit1(ctx, &req);
	/* Drain until the write is done. */
	for (;;) {
		const struct timespec zero = { 0, 0 };

		if (fsaio_getevents(ctx, 0, 1, &ev, &zero) == 1)
			break;
		(void)read(p[0], sink, sizeof(sink));
	}
	cr_assert_eq(ev.res, (int64_t)sizeof(big));
	cr_assert_eq(close(p[1]), 0);
	ssize_t n;
	while ((n = read(p[0], sink, sizeof(sink))) > 0)
		;
	cr_assert_eq(n, 0, "no end of file: a writer is still open (errno %d)", errno);
	t_ctx_destroy(ctx);
	close(p[0]);
}

/* SPDX-License-Identifier: MIT */
/*
 * fd numbers are reused: a program closes one file and the next open gets
 * the same number for something else. Whatever the engine learnt about the
 * old file (kind, access mode, NOWAIT support) must not steer a request on
 * the new one: the request must act on the new file, at its own offset.
 */
#include "t_helpers.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#define KiB 1024u

TestSuite(fdreuse, .init = t_setup, .fini = t_teardown, .timeout = 60);

static struct fsaio_event run1(fsaio_ctx_t *ctx, struct fsaio_req *req)
{
	struct fsaio_event ev;
	t_submit1(ctx, req);
	t_reap_all(ctx, 1, &ev, T_EVENT_TIMEOUT_MS);
	cr_assert_eq(ev.req, req);
	return ev;
}

/* Put a new open file at number num (closing what was there). */
static void move_to(int fd, int num)
{
	cr_assert_eq(dup2(fd, num), num);
	close(fd);
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

	cr_assert_eq(write(p[1], "abc", 3), 3);
	fsaio_prep_pread(&req, p[0], buf, sizeof(buf), -1);
	cr_assert_eq(run1(ctx, &req).res, 3);
	close(p[1]);

	int f = t_tmpfile(256 * KiB, 80);
	move_to(f, p[0]);
	/* The file position stays at 0: a read that ignored the offset would
	 * return the file's first bytes. */
	cr_assert_eq(lseek(p[0], 0, SEEK_SET), 0);
	fsaio_prep_pread(&req, p[0], buf, sizeof(buf), 64 * KiB);
	struct fsaio_event ev = run1(ctx, &req);
	cr_assert_eq(ev.res, (int64_t)sizeof(buf), "res %lld", (long long)ev.res);
	t_check_pattern(buf, sizeof(buf), 64 * KiB, 80);

	fsaio_prep_pwrite(&req, p[0], buf, 100, 1000);
	t_fill_pattern(buf, 100, 1000, 81);
	cr_assert_eq(run1(ctx, &req).res, 100);
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
	struct fsaio_req req;

	cr_assert_eq(write(sv[1], "hello", 5), 5);
	fsaio_prep_pread(&req, sv[0], buf, sizeof(buf), -1);
	cr_assert_eq(run1(ctx, &req).res, 5);
	close(sv[1]);

	int f = t_tmpfile(64 * KiB, 82);
	t_make_cold(f);
	move_to(f, sv[0]);
	fsaio_prep_pread(&req, sv[0], buf, sizeof(buf), 12345);
	struct fsaio_event ev = run1(ctx, &req);
	cr_assert_eq(ev.res, (int64_t)sizeof(buf), "res %lld", (long long)ev.res);
	t_check_pattern(buf, sizeof(buf), 12345, 82);
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
	cr_assert_eq(run1(ctx, &req).res, (int64_t)sizeof(buf));

	move_to(b_ro, a);
	fsaio_prep_pwrite(&req, a, buf, sizeof(buf), 0);
	T_ASSERT_RET(fsaio_submit(ctx, &rp, 1), -EBADF);
	t_no_event(ctx);
	t_check_file(b, 0, 64 * KiB, 84);

	fsaio_prep_pread(&req, a, buf, sizeof(buf), 8192);
	cr_assert_eq(run1(ctx, &req).res, (int64_t)sizeof(buf));
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
	cr_assert_eq(run1(ctx, &req).res, (int64_t)sizeof(buf));
	t_check_pattern(buf, sizeof(buf), 4096, 86);

	int d = t_tmpfile(64 * KiB, 87);
	t_make_cold(d);
	move_to(d, num);
	fsaio_prep_pread(&req, num, buf, sizeof(buf), 4096);
	cr_assert_eq(run1(ctx, &req).res, (int64_t)sizeof(buf));
	t_check_pattern(buf, sizeof(buf), 4096, 87);

	int s = t_shmfile(64 * KiB, 88);
	move_to(s, num);
	fsaio_prep_pread(&req, num, buf, sizeof(buf), 8192);
	cr_assert_eq(run1(ctx, &req).res, (int64_t)sizeof(buf));
	t_check_pattern(buf, sizeof(buf), 8192, 88);
	t_ctx_destroy(ctx);
}

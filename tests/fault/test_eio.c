/* SPDX-License-Identifier: MIT */
/*
 * I/O errors from a real file system: an ext4 on a loop device shut down
 * (EXT4_IOC_SHUTDOWN) while reads, writes and fsyncs are in flight, on
 * each backend that carries misses. Every accepted request gets exactly
 * one event, and that event is the full count, a partial count, or -EIO;
 * bytes a read returned are the file's; after a remount, what an fsync
 * reported durable is there and no byte holds anything but the old or the
 * new data.
 */
#include "f_helpers.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

TestSuite(eio, .init = t_setup, .fini = f_teardown, .timeout = 90);

#define R_SIZE (8 * MiB)        /* the file read */
#define NREAD 48
#define RLEN (64 * KiB)
#define RSTRIDE (160 * KiB)     /* reads spread over the file, none adjacent */
#define NWF 4                   /* files written */
#define W_SIZE (2 * MiB)
#define NWRITE 16
#define WLEN (64 * KiB)
#define NSYNC NWF
#define NOPS (NREAD + NWRITE + NSYNC)
#define D_SIZE (256 * KiB)      /* written and fsynced before the shutdown */

enum { OP_READ, OP_WRITE, OP_SYNC };

struct op {
	struct fsaio_req r;
	int kind, file;
	int64_t off;
	size_t len;
	uint8_t *buf;
	int64_t res;            /* the event's */
};

static const int eio_only[] = { EIO, 0 };

static unsigned wseed_old(int f) { return 20u + (unsigned)f; }
static unsigned wseed_new(int f) { return 120u + (unsigned)f; }
#define R_SEED 11u
#define D_SEED 50u

/* Lay out the batch: reads of R, writes to the W files (RWF_DSYNC, so that
 * on a saturated pool they wait for the worker), an fsync per W file. */
static void lay_ops(struct op *ops, struct fsaio_req **reqs, int rfd, const int *wfd)
{
	unsigned i = 0;

	for (unsigned k = 0; k < NREAD; k++, i++) {
		struct op *o = &ops[i];
		o->kind = OP_READ;
		o->off = (int64_t)k * RSTRIDE;
		o->len = RLEN;
		o->buf = malloc(RLEN);
		cr_assert_not_null(o->buf);
		memset(o->buf, 0xee, RLEN);
		fsaio_prep_pread(&o->r, rfd, o->buf, RLEN, o->off);
	}
	for (unsigned k = 0; k < NWRITE; k++, i++) {
		struct op *o = &ops[i];
		o->kind = OP_WRITE;
		o->file = (int)(k % NWF);
		o->off = (int64_t)(k / NWF) * 2 * WLEN;
		o->len = WLEN;
		o->buf = malloc(WLEN);
		cr_assert_not_null(o->buf);
		t_fill_pattern(o->buf, WLEN, (uint64_t)o->off, wseed_new(o->file));
		fsaio_prep_pwrite(&o->r, wfd[o->file], o->buf, WLEN, o->off);
		o->r.rw_flags = RWF_DSYNC;
	}
	for (unsigned k = 0; k < NSYNC; k++, i++) {
		struct op *o = &ops[i];
		o->kind = OP_SYNC;
		o->file = (int)k;
		fsaio_prep_fsync(&o->r, wfd[k]);
	}
	for (i = 0; i < NOPS; i++) {
		ops[i].r.user_data = &ops[i];
		reqs[i] = &ops[i].r;
	}
}

/* One event against its request: full, partial or -EIO; data right.
 * must_fail: only -EIO will do. Returns 1 when the event is -EIO. */
static int check_op(const struct op *o, const struct fsaio_event *ev, bool must_fail)
{
	int64_t res = ev->res;
	const char *what = o->kind == OP_READ ? "read" : o->kind == OP_WRITE ? "write" : "fsync";

	if (must_fail)
		cr_assert_eq(res, -EIO, "%s at %lld after the shutdown: res %lld, want -EIO", what,
			     (long long)o->off, (long long)res);
	if (o->kind == OP_SYNC) {
		cr_assert(res == 0 || res == -EIO, "fsync: res %lld", (long long)res);
	} else {
		cr_assert(f_res_ok(res, o->len, eio_only), "%s of %zu at %lld: res %lld", what, o->len,
			  (long long)o->off, (long long)res);
	}
	if (o->kind == OP_READ && res > 0)
		t_check_pattern(o->buf, (size_t)res, (uint64_t)o->off, R_SEED);
	return res == -EIO;
}

static void reap_check(fsaio_ctx_t *ctx, struct fsaio_req **reqs, unsigned n,
		       struct t_sat *sat, bool must_fail, unsigned *neio)
{
	struct fsaio_event *evs = calloc(n + 1, sizeof(*evs));

	cr_assert_not_null(evs);
	t_reap_sat(ctx, sat, evs, reqs, n);
	for (unsigned i = 0; i < n; i++) {
		struct op *o = evs[i].user_data;
		o->res = evs[i].res;
		*neio += (unsigned)check_op(o, &evs[i], must_fail);
	}
	free(evs);
}

/* After the remount: every byte of a written file is the old or the new
 * data where a write was aimed, the old data elsewhere. */
static void check_written(struct f_fs *fs, int f, const struct op *ops)
{
	char name[16];
	snprintf(name, sizeof(name), "w%d", f);
	int fd = f_fs_open(fs, name, O_RDONLY);
	uint8_t *buf = malloc(W_SIZE);

	cr_assert_not_null(buf);
	cr_assert_eq(pread(fd, buf, W_SIZE, 0), (ssize_t)W_SIZE, "read back %s: %s", name, strerror(errno));
	for (uint64_t off = 0; off < W_SIZE; off++) {
		bool aimed = false;
		for (unsigned i = NREAD; i < NREAD + NWRITE; i++)
			aimed |= ops[i].file == f && off >= (uint64_t)ops[i].off &&
				 off < (uint64_t)ops[i].off + ops[i].len;
		uint8_t b = buf[off];
		bool old = b == t_pattern_byte(off, wseed_old(f));
		bool new = b == t_pattern_byte(off, wseed_new(f));
		cr_assert(old || (aimed && new), "%s byte %llu is %#x: neither the old nor the written data",
			  name, (unsigned long long)off, b);
	}
	free(buf);
	close(fd);
}

/*
 * The run: a write and fsync made durable first; then the batch submitted,
 * the file system shut down under it, the batch reaped; then a second batch
 * on the dead file system (each one -EIO); then a remount and the checks.
 * With saturate, the only worker is held while the batch is queued, so the
 * queued writes are carried out on the dead file system: they must fail.
 */
static void run(uint32_t backend, bool saturate)
{
	struct f_fs fs;
	f_fs_mount(&fs, 64);

	int rfd = f_fs_file(&fs, "r", R_SIZE, R_SEED);
	int wfd[NWF];
	for (int f = 0; f < NWF; f++) {
		char name[16];
		snprintf(name, sizeof(name), "w%d", f);
		wfd[f] = f_fs_file(&fs, name, W_SIZE, wseed_old(f));
	}
	int dfd = f_fs_open(&fs, "d", O_RDWR | O_CREAT | O_TRUNC);

	struct t_sat sat, *s = saturate ? &sat : NULL;
	fsaio_ctx_t *ctx = t_ctx_or_sat(s, backend);

	/* Durable before the fault: a write and an fsync through the engine.
	 * (With the pool held, they would wait: do them before saturating.) */
	if (!saturate) {
		uint8_t *dbuf = malloc(D_SIZE);
		cr_assert_not_null(dbuf);
		t_fill_pattern(dbuf, D_SIZE, 0, D_SEED);
		struct fsaio_req dw, ds;
		struct fsaio_event ev;
		fsaio_prep_pwrite(&dw, dfd, dbuf, D_SIZE, 0);
		t_submit1(ctx, &dw);
		t_reap_all(ctx, 1, &ev, T_EVENT_TIMEOUT_MS);
		cr_assert_eq(ev.res, (int64_t)D_SIZE, "write before the fault: %lld", (long long)ev.res);
		fsaio_prep_fsync(&ds, dfd);
		t_submit1(ctx, &ds);
		t_reap_all(ctx, 1, &ev, T_EVENT_TIMEOUT_MS);
		cr_assert_eq(ev.res, 0, "fsync before the fault: %lld", (long long)ev.res);
		free(dbuf);
	}

	t_make_cold(rfd);
	static struct op ops[NOPS];
	static struct fsaio_req *reqs[NOPS];
	memset(ops, 0, sizeof(ops));
	lay_ops(ops, reqs, rfd, wfd);
	t_submit(ctx, reqs, NOPS);
	f_fs_shutdown(&fs);
	if (saturate)
		t_sat_unblock(&sat);
	unsigned neio = 0;
	reap_check(ctx, reqs, NOPS, s, false, &neio);
	if (saturate) {
		/* Held behind the worker until after the shutdown. */
		for (unsigned i = NREAD; i < NREAD + NWRITE; i++)
			cr_assert_eq(ops[i].res, -EIO, "queued write %u: res %lld, want -EIO", i,
				     (long long)ops[i].res);
	}
	printf("eio/%s%s: %u of %u requests failed with EIO across the shutdown\n",
	       f_backend_name(backend), saturate ? " (queued)" : "", neio, NOPS);

	/* Every request on the dead file system fails, and only with EIO. */
	struct op *ops2 = calloc(NOPS, sizeof(*ops2));
	struct fsaio_req **reqs2 = calloc(NOPS, sizeof(*reqs2));
	cr_assert(ops2 && reqs2);
	lay_ops(ops2, reqs2, rfd, wfd);
	t_submit(ctx, reqs2, NOPS);
	unsigned neio2 = 0;
	reap_check(ctx, reqs2, NOPS, NULL, true, &neio2);
	cr_assert_eq(neio2, NOPS);

	t_ctx_sat_destroy(ctx, s);
	close(rfd);
	close(dfd);
	for (int f = 0; f < NWF; f++)
		close(wfd[f]);

	f_fs_remount(&fs);
	int r2 = f_fs_open(&fs, "r", O_RDONLY);
	t_check_file(r2, 0, R_SIZE, R_SEED);
	close(r2);
	if (!saturate) {
		int d2 = f_fs_open(&fs, "d", O_RDONLY);
		t_check_file(d2, 0, D_SIZE, D_SEED);
		close(d2);
	}
	for (int f = 0; f < NWF; f++)
		check_written(&fs, f, ops);
	for (unsigned i = 0; i < NOPS; i++) {
		free(ops[i].buf);
		free(ops2[i].buf);
	}
	free(ops2);
	free(reqs2);
	f_fs_unmount(&fs);
}

Test(eio, shutdown_threads)
{
	run(FSAIO_BACKEND_THREADS, false);
}

Test(eio, shutdown_uring)
{
	run(FSAIO_BACKEND_URING, false);
}

/* Queued behind the pool's only worker when the file system goes: the
 * writes (RWF_DSYNC: always carried by a worker) must all fail. */
Test(eio, shutdown_queued)
{
	run(FSAIO_BACKEND_THREADS, true);
}

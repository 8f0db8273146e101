/* SPDX-License-Identifier: MIT */
/*
 * A request is bound to the file its fd named at submit, as the kernel's
 * own asynchronous interfaces bind it (io_uring and Linux AIO take a
 * reference to the file when the request is submitted): closing the fd,
 * or putting another file at its number with dup2() or open(), while the
 * request waits must not move it. Every read returns file A's data, every
 * write lands in A, and B is left untouched.
 *
 * On the pool, the requests are held queued deterministically behind the
 * only worker (t_saturate) while the fd changes; through io_uring they are
 * in the ring or just submitted, and the same must hold.
 */
#include "t_helpers.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

TestSuite(fdbind, .init = t_setup, .fini = t_teardown, .timeout = 60);

#define KiB 1024u
#define MiB (1024u * 1024u)
#define SIZE (8 * MiB)
#define NREQ 32
#define LEN (64 * KiB)
#define STRIDE (192 * KiB)
#define SEED_A 101u
#define SEED_B 102u
#define SEED_W 103u

enum change { DUP2, REOPEN, CLOSE };

/* Put file B (or nothing) at number a, A's, while requests on a wait. */
static void change_fd(int a, const char *bpath, enum change how)
{
	if (how == DUP2) {
		int b = open(bpath, O_RDWR | O_CLOEXEC);
		cr_assert_geq(b, 0);
		cr_assert_eq(dup2(b, a), a, "dup2: %s", strerror(errno));
		close(b);
		return;
	}
	cr_assert_eq(close(a), 0);
	if (how == REOPEN) {
		/* a is the lowest free number again: open takes it. */
		int b = open(bpath, O_RDWR | O_CLOEXEC);
		cr_assert_eq(b, a, "open got %d, not the closed number %d", b, a);
	}
}

static void run(uint32_t backend, bool write, enum change how)
{
	char apath[PATH_MAX], bpath[PATH_MAX];
	int a = t_tmpfile_path(SIZE, SEED_A, apath);
	int bfd = t_tmpfile_path(SIZE, SEED_B, bpath);
	close(bfd);
	/* A second descriptor of A, to check it after a's number is gone. */
	int a2 = open(apath, O_RDONLY | O_CLOEXEC);
	cr_assert_geq(a2, 0);
	int b2 = open(bpath, O_RDONLY | O_CLOEXEC);
	cr_assert_geq(b2, 0);
	t_make_cold(a2);
	t_make_cold(b2);

	struct t_sat sat, *s = backend == FSAIO_BACKEND_THREADS ? &sat : NULL;
	fsaio_ctx_t *ctx = t_ctx_or_sat(s, backend);

	static struct fsaio_req reqs[NREQ];
	struct fsaio_req *rp[NREQ];
	uint8_t *bufs = malloc((size_t)NREQ * LEN);
	cr_assert_not_null(bufs);
	for (unsigned i = 0; i < NREQ; i++) {
		uint8_t *b = bufs + (size_t)i * LEN;
		int64_t off = (int64_t)i * STRIDE;
		if (write) {
			t_fill_pattern(b, LEN, (uint64_t)off, SEED_W);
			fsaio_prep_pwrite(&reqs[i], a, b, LEN, off);
			/* Carried by a worker, never inline. */
			reqs[i].rw_flags = RWF_DSYNC;
		} else {
			memset(b, 0xee, LEN);
			fsaio_prep_pread(&reqs[i], a, b, LEN, off);
		}
		reqs[i].user_data = &reqs[i];
		rp[i] = &reqs[i];
	}
	t_submit(ctx, rp, NREQ);
	change_fd(a, bpath, how);
	if (s)
		t_sat_unblock(s);

	struct fsaio_event evs[NREQ + 1];
	t_reap_sat(ctx, s, evs, rp, NREQ);

	unsigned wrong = 0, failed = 0, b_changed = 0;
	int64_t first_bad = 0;
	for (unsigned i = 0; i < NREQ; i++) {
		const struct fsaio_req *r = evs[i].req;
		if (evs[i].res != (int64_t)LEN) {
			if (!failed++)
				first_bad = evs[i].res;
			continue;
		}
		if (!write && t_pattern_mismatch(r->buf, LEN, (uint64_t)r->offset, SEED_A) >= 0)
			wrong++;
	}
	if (write) {
		/* A holds every write; B is as it was. */
		uint8_t *chk = malloc(LEN);
		cr_assert_not_null(chk);
		for (unsigned i = 0; i < NREQ; i++) {
			off_t off = (off_t)i * STRIDE;
			cr_assert_eq(pread(a2, chk, LEN, off), (ssize_t)LEN);
			if (t_pattern_mismatch(chk, LEN, (uint64_t)off, SEED_W) >= 0)
				wrong++;
			cr_assert_eq(pread(b2, chk, LEN, off), (ssize_t)LEN);
			if (t_pattern_mismatch(chk, LEN, (uint64_t)off, SEED_B) >= 0)
				b_changed++;
		}
		free(chk);
	}
	printf("fdbind/%s %s %s: %u of %u requests failed (first res %lld), %u with the wrong file's data, "
	       "%u landed in B\n", backend == FSAIO_BACKEND_URING ? "uring" : "threads",
	       write ? "writes" : "reads", how == DUP2 ? "dup2" : how == REOPEN ? "close+open" : "close",
	       failed, NREQ, (long long)first_bad, wrong, b_changed);
	fflush(stdout);
	cr_assert_eq(failed, 0, "%u of %u requests failed once their fd changed (first res %lld)", failed,
		     NREQ, (long long)first_bad);
	cr_assert_eq(wrong, 0, "%u of %u requests acted on the file that took the number", wrong, NREQ);
	cr_assert_eq(b_changed, 0, "%u of %u writes landed in the file that took the number", b_changed, NREQ);
	if (write)
		t_check_file(b2, 0, SIZE, SEED_B);

	t_ctx_sat_destroy(ctx, s);
	if (how != CLOSE)
		close(a);
	close(a2);
	close(b2);
	free(bufs);
}

Test(fdbind, threads_reads_dup2) { run(FSAIO_BACKEND_THREADS, false, DUP2); }
Test(fdbind, threads_reads_reopen) { run(FSAIO_BACKEND_THREADS, false, REOPEN); }
Test(fdbind, threads_reads_close) { run(FSAIO_BACKEND_THREADS, false, CLOSE); }
Test(fdbind, threads_writes_dup2) { run(FSAIO_BACKEND_THREADS, true, DUP2); }
Test(fdbind, threads_writes_reopen) { run(FSAIO_BACKEND_THREADS, true, REOPEN); }
Test(fdbind, uring_reads_dup2) { run(FSAIO_BACKEND_URING, false, DUP2); }
Test(fdbind, uring_reads_reopen) { run(FSAIO_BACKEND_URING, false, REOPEN); }
Test(fdbind, uring_reads_close) { run(FSAIO_BACKEND_URING, false, CLOSE); }
Test(fdbind, uring_writes_dup2) { run(FSAIO_BACKEND_URING, true, DUP2); }
Test(fdbind, uring_writes_reopen) { run(FSAIO_BACKEND_URING, true, REOPEN); }

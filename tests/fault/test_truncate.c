/* SPDX-License-Identifier: MIT */
/*
 * A file truncated under queued reads. A read gets what the file held
 * when the kernel read it: every byte it returns is the file's, it never
 * stops short of the new end (those bytes were there all along), and it
 * returns at most what was asked. Bytes past the cut read as the old data
 * or as zeros (extended again, or the zeroed tail of the cut page), never
 * as anything else.
 */
#include "t_helpers.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

TestSuite(truncate, .init = t_setup, .fini = t_teardown, .timeout = 60);

#define KiB 1024u
#define MiB (1024u * 1024u)
#define SIZE (8 * MiB)
#define NREQ 56
#define LEN (128 * KiB)
#define STRIDE (144 * KiB)      /* 56 reads over 7.9 MiB, none adjacent */
#define CUT (3 * MiB + 1234)
#define SEED 61u

static void run(uint32_t backend, bool saturate, bool extend)
{
	int fd = t_tmpfile(SIZE, SEED);
	struct t_sat sat, *s = saturate ? &sat : NULL;

	t_make_cold(fd);
	fsaio_ctx_t *ctx = t_ctx_or_sat(s, backend);
	static struct fsaio_req reqs[NREQ];
	struct fsaio_req *rp[NREQ];
	uint8_t *bufs = malloc((size_t)NREQ * LEN);
	cr_assert_not_null(bufs);
	memset(bufs, 0xee, (size_t)NREQ * LEN);
	for (unsigned i = 0; i < NREQ; i++) {
		fsaio_prep_pread(&reqs[i], fd, bufs + (size_t)i * LEN, LEN, (int64_t)i * STRIDE);
		reqs[i].user_data = &reqs[i];
		rp[i] = &reqs[i];
	}
	t_submit(ctx, rp, NREQ);
	cr_assert_eq(ftruncate(fd, CUT), 0);
	if (extend)
		cr_assert_eq(ftruncate(fd, SIZE), 0);
	if (s)
		t_sat_unblock(s);

	struct fsaio_event evs[NREQ + 1];
	t_reap_sat(ctx, s, evs, rp, NREQ);

	unsigned nfull = 0, nshort = 0;
	for (unsigned i = 0; i < NREQ; i++) {
		const struct fsaio_req *r = evs[i].req;
		int64_t res = evs[i].res;
		uint64_t off = (uint64_t)r->offset;
		uint64_t below_cut = off >= CUT ? 0 : CUT - off < LEN ? CUT - off : LEN;
		cr_assert(res >= (int64_t)below_cut && res <= LEN,
			  "read of %u at %llu: res %lld, want %llu..%u", LEN, (unsigned long long)off,
			  (long long)res, (unsigned long long)below_cut, LEN);
		const uint8_t *b = r->buf;
		for (int64_t k = 0; k < res; k++) {
			uint64_t o = off + (uint64_t)k;
			/* Past the cut the file holds nothing, or zeros once
			 * extended; a read that raced the cut may also copy the
			 * zeroed tail of the page the cut fell in. */
			bool zero_ok = o >= CUT && b[k] == 0;
			cr_assert(b[k] == t_pattern_byte(o, SEED) || zero_ok,
				  "byte at %llu is %#x: not the file's", (unsigned long long)o, b[k]);
		}
		t_check_bytes(b + res, (size_t)(LEN - res), 0xee);
		if (res == LEN)
			nfull++;
		else
			nshort++;
	}
	printf("truncate/%s%s: %u full reads, %u short (the file was cut first)\n",
	       saturate ? "threads (queued)" : backend == FSAIO_BACKEND_URING ? "uring" : "threads",
	       extend ? ", extended again" : "", nfull, nshort);
	t_ctx_sat_destroy(ctx, s);
	free(bufs);
	close(fd);
}

Test(truncate, threads) { run(FSAIO_BACKEND_THREADS, false, false); }
Test(truncate, uring) { run(FSAIO_BACKEND_URING, false, false); }
Test(truncate, queued) { run(FSAIO_BACKEND_THREADS, true, false); }
Test(truncate, extended_threads) { run(FSAIO_BACKEND_THREADS, false, true); }
Test(truncate, extended_uring) { run(FSAIO_BACKEND_URING, false, true); }
Test(truncate, extended_queued) { run(FSAIO_BACKEND_THREADS, true, true); }

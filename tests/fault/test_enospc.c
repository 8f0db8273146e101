/* SPDX-License-Identifier: MIT */
/*
 * A full disk: a 16 MiB ext4 on a loop device written past its end
 * through each backend. Every write's event is the full count, a partial
 * count or -ENOSPC, every fsync's 0 or -ENOSPC; every byte reported
 * written reads back right, and is still there after a remount when the
 * final fsync succeeded.
 */
#include "f_helpers.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

TestSuite(enospc, .init = t_setup, .fini = f_teardown, .timeout = 90);

#define NF 4
#define WLEN (256 * KiB)
#define BATCH 16
#define MAX_ROUNDS 32           /* 128 MiB offered to a 16 MiB file system */
#define MAX_DONE (MAX_ROUNDS * BATCH)

static unsigned seed_of(int f) { return 30u + (unsigned)f; }

struct wop {
	struct fsaio_req r;
	int file;               /* -1: the fsync of files[sync] */
	int64_t off;
	int64_t res;
	int nev;
};

/* What the events said reached each file. */
struct extent {
	int file;
	int64_t off, len;
};

static void run(uint32_t backend)
{
	struct f_fs fs;
	f_fs_mount(&fs, 16);

	int fds[NF];
	for (int f = 0; f < NF; f++) {
		char name[16];
		snprintf(name, sizeof(name), "f%d", f);
		fds[f] = f_fs_open(&fs, name, O_RDWR | O_CREAT | O_TRUNC);
	}
	fsaio_ctx_t *ctx = t_ctx_backend(backend);
	uint8_t *bufs = malloc((size_t)BATCH * WLEN);
	cr_assert_not_null(bufs);
	static struct extent done[MAX_DONE];
	unsigned ndone = 0, nfull = 0, npartial = 0, nenospc = 0, nsync_err = 0;
	int64_t next[NF] = { 0 };
	static const int enospc[] = { ENOSPC, 0 };
	bool all_failed = false;

	for (int round = 0; round < MAX_ROUNDS && !all_failed; round++) {
		struct wop ops[BATCH + NF];
		struct fsaio_req *reqs[BATCH + NF];
		unsigned n = 0;

		memset(ops, 0, sizeof(ops));
		for (unsigned k = 0; k < BATCH; k++, n++) {
			struct wop *o = &ops[n];
			uint8_t *b = bufs + (size_t)k * WLEN;
			o->file = (int)(k % NF);
			o->off = next[o->file];
			next[o->file] += WLEN;
			t_fill_pattern(b, WLEN, (uint64_t)o->off, seed_of(o->file));
			fsaio_prep_pwrite(&o->r, fds[o->file], b, WLEN, o->off);
		}
		for (int f = 0; f < NF; f++, n++) {
			ops[n].file = -1 - f;
			fsaio_prep_fsync(&ops[n].r, fds[f]);
		}
		for (unsigned i = 0; i < n; i++) {
			ops[i].r.user_data = &ops[i];
			reqs[i] = &ops[i].r;
		}
		t_submit(ctx, reqs, n);
		struct fsaio_event evs[BATCH + NF];
		t_reap_all(ctx, n, evs, T_EVENT_TIMEOUT_MS);
		t_match_events(evs, n, reqs, n);

		unsigned failed_now = 0;
		for (unsigned i = 0; i < n; i++) {
			struct wop *o = evs[i].user_data;
			int64_t res = evs[i].res;
			if (o->file < 0) {
				cr_assert(res == 0 || res == -ENOSPC, "fsync: res %lld", (long long)res);
				nsync_err += res != 0;
				continue;
			}
			cr_assert(f_res_ok(res, WLEN, enospc), "write of %u at %lld: res %lld", WLEN,
				  (long long)o->off, (long long)res);
			if (res == -ENOSPC) {
				nenospc++;
				failed_now++;
				continue;
			}
			if (res == WLEN)
				nfull++;
			else
				npartial++;
			if (res > 0)
				done[ndone++] = (struct extent){ o->file, o->off, res };
		}
		all_failed = failed_now == BATCH;
	}
	cr_assert(all_failed, "the file system never filled up: %u writes refused of %u", nenospc,
		  MAX_ROUNDS * BATCH);

	/* What was reported written is in the cache, and reads back right. */
	int synced = 0;
	for (int f = 0; f < NF; f++)
		synced += fsync(fds[f]) == 0;
	for (unsigned i = 0; i < ndone; i++)
		t_check_file(fds[done[i].file], (uint64_t)done[i].off, (size_t)done[i].len,
			     seed_of(done[i].file));
	t_ctx_destroy(ctx);
	for (int f = 0; f < NF; f++)
		close(fds[f]);

	/* And on the disk, when fsync said it got there. */
	if (synced == NF) {
		f_fs_remount(&fs);
		for (int f = 0; f < NF; f++) {
			char name[16];
			snprintf(name, sizeof(name), "f%d", f);
			fds[f] = f_fs_open(&fs, name, O_RDONLY);
		}
		for (unsigned i = 0; i < ndone; i++)
			t_check_file(fds[done[i].file], (uint64_t)done[i].off, (size_t)done[i].len,
				     seed_of(done[i].file));
		for (int f = 0; f < NF; f++)
			close(fds[f]);
	}
	printf("enospc/%s: %u full, %u partial, %u -ENOSPC writes; %u fsyncs -ENOSPC; "
	       "remount check %s\n", f_backend_name(backend), nfull, npartial, nenospc, nsync_err,
	       synced == NF ? "done" : "skipped (fsync failed)");
	free(bufs);
	f_fs_unmount(&fs);
}

Test(enospc, threads)
{
	run(FSAIO_BACKEND_THREADS);
}

Test(enospc, uring)
{
	run(FSAIO_BACKEND_URING);
}

/* SPDX-License-Identifier: MIT */
/*
 * The base parts alone, without a context: the fd table (fdtable.c) learns
 * a real file's facts, its device's readahead limit (devra.c), counts a
 * miss streak and sees an fd number reused, and the residency probe
 * (probe.c) judges a real on-disk file's pages, counting into the counters
 * it is given. The test is linked with those files only, so it also shows
 * they need nothing else of the engine.
 */
#include "t_helpers.h"

#include <fcntl.h>
#include <unistd.h>

#include "counters.h"
#include "fdtable.h"
#include "probe.h"

#define KiB 1024u

TestSuite(parts, .init = t_setup, .fini = t_teardown, .timeout = 60);

Test(parts, fdtable_learns_a_file_and_counts_its_miss_streak)
{
	struct fsaio__fdtable t = { 0 };
	struct fsaio__fdinfo fi;
	int fd = t_tmpfile(64 * KiB, 1);

	cr_assert_eq(fsaio__fdtable_init(&t), 0);
	cr_assert_eq(fsaio__fd_get(&t, fd, &fi), 0);
	cr_assert_eq(fi.kind, FSAIO__KIND_FILE);
	cr_assert(fi.flags & FSAIO__FD_VALID);
	cr_assert(fi.flags & FSAIO__FD_SEEKABLE);
	cr_assert(fi.flags & FSAIO__FD_READ);
	cr_assert_eq(fi.flags & FSAIO__FD_PROBE_NEXT, 0);
	cr_assert_eq(fsaio__fd_misses(fi), 0);

	/* The first miss asks for a probe next time; the next ones count the
	 * streak, which saturates at 7. */
	for (unsigned i = 0; i < 10; i++) {
		fsaio__fd_missed(&t, fd, fi);
		cr_assert_eq(fsaio__fd_get(&t, fd, &fi), 0);
		cr_assert(fi.flags & FSAIO__FD_PROBE_NEXT, "miss %u", i);
		cr_assert_eq(fsaio__fd_misses(fi), i < 7 ? i : 7, "miss %u", i);
	}
	/* A hit ends it. */
	fsaio__fd_clear(&t, fd, FSAIO__FD_PROBE_NEXT | FSAIO__FD_MISS_MASK);
	cr_assert_eq(fsaio__fd_get(&t, fd, &fi), 0);
	cr_assert_eq(fi.flags & (FSAIO__FD_PROBE_NEXT | FSAIO__FD_MISS_MASK), 0);
	cr_assert_eq(fi.kind, FSAIO__KIND_FILE);
	fsaio__fdtable_fini(&t);
}

/* A buffered file's word carries its device's readahead limit, and the
 * flag arithmetic of a miss streak leaves it be; other kinds have none. */
Test(parts, fdtable_learns_a_files_device_readahead_limit)
{
	struct fsaio__fdtable t = { 0 };
	struct fsaio__fdinfo fi;
	int fd = t_tmpfile(64 * KiB, 3), p[2];
	long kb = t_sysfs_ra_kb(fd);

	cr_assert_eq(fsaio__fdtable_init(&t), 0);
	cr_assert_eq(fsaio__fd_get(&t, fd, &fi), 0);
	cr_assert_eq(fi.kind, FSAIO__KIND_FILE);
	cr_assert_eq(fi.ra_kb1, (kb < 0 ? 128 : (uint32_t)kb) + 1, "sysfs %ld, word %u", kb,
		     fi.ra_kb1);
	for (unsigned i = 0; i < 10; i++) {
		fsaio__fd_missed(&t, fd, fi);
		cr_assert_eq(fsaio__fd_get(&t, fd, &fi), 0);
	}
	fsaio__fd_clear(&t, fd, FSAIO__FD_PROBE_NEXT | FSAIO__FD_MISS_MASK);
	cr_assert_eq(fsaio__fd_get(&t, fd, &fi), 0);
	cr_assert_eq(fi.kind, FSAIO__KIND_FILE);
	cr_assert_eq(fi.ra_kb1, (kb < 0 ? 128 : (uint32_t)kb) + 1);

	cr_assert_eq(pipe(p), 0);
	cr_assert_eq(fsaio__fd_get(&t, p[0], &fi), 0);
	cr_assert_eq(fi.kind, FSAIO__KIND_POLLABLE);
	cr_assert_eq(fi.ra_kb1, 0);
	close(p[0]);
	close(p[1]);
	fsaio__fdtable_fini(&t);
}

Test(parts, fdtable_sees_an_fd_number_reused_for_a_pipe)
{
	struct fsaio__fdtable t = { 0 };
	struct fsaio__fdinfo fi, now;
	int fd = t_tmpfile(4 * KiB, 2), p[2];

	cr_assert_eq(fsaio__fdtable_init(&t), 0);
	cr_assert_eq(fsaio__fd_get(&t, fd, &fi), 0);
	cr_assert_eq(fi.kind, FSAIO__KIND_FILE);
	cr_assert_not(fsaio__fd_changed(&t, fd, fi));

	cr_assert_eq(pipe(p), 0);
	cr_assert_eq(dup2(p[0], fd), fd);
	/* The cached word still names the file: only a re-check sees the pipe. */
	cr_assert_eq(fsaio__fd_get(&t, fd, &now), 0);
	cr_assert_eq(now.kind, FSAIO__KIND_FILE);
	cr_assert(fsaio__fd_changed(&t, fd, fi));
	cr_assert_eq(fsaio__fd_get(&t, fd, &now), 0);
	cr_assert_eq(now.kind, FSAIO__KIND_POLLABLE);
	cr_assert(now.flags & FSAIO__FD_FIFO);
	close(p[0]);
	close(p[1]);
	fsaio__fdtable_fini(&t);
}

Test(parts, probe_judges_a_file_on_disk_and_counts_into_its_counters)
{
	struct fsaio__counters st = { 0 };
	int fd = t_coldfile(256 * KiB, 3);

	cr_assert_eq(fsaio__probe(&st, fd, 0, 64 * KiB), FSAIO__RES_COLD);
	cr_assert_eq(atomic_load(&st.probe_calls), 1);

	t_make_hot(fd, 0, 32 * KiB);
	cr_assert_eq(fsaio__probe(&st, fd, 0, 32 * KiB), FSAIO__RES_HOT);
	cr_assert_eq(fsaio__probe(&st, fd, 0, 64 * KiB), FSAIO__RES_PARTIAL);
	cr_assert_eq(fsaio__probe(&st, fd, 128 * KiB, 64 * KiB), FSAIO__RES_COLD);
	/* Past the end of the file there is nothing to read: no I/O needed. */
	cr_assert_eq(fsaio__probe(&st, fd, 512 * KiB, 4 * KiB), FSAIO__RES_HOT);
	/* An empty range is not judged, nor counted. */
	cr_assert_eq(fsaio__probe(&st, fd, 0, 0), FSAIO__RES_UNKNOWN);
	cr_assert_eq(atomic_load(&st.probe_calls), 5);
	cr_assert_eq(atomic_load(&st.probe_cold), 0, "probe_cold is its caller's to count");
}

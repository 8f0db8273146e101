/* SPDX-License-Identifier: MIT */
/*
 * fsaio-bench: the test files, their pattern, and their page-cache state.
 *
 * DESIGN: files are named fsaio-bench.<i>.dat in --dir. One that is not
 * there is created, and removed when the program ends unless --keep; one
 * that is there is used and never removed: a larger file as is (only its
 * first --size bytes are used), a smaller one extended, one that does not
 * hold the pattern rewritten with a message. Cold is made with fsync +
 * POSIX_FADV_DONTNEED and checked with cachestat(2); hot by reading the
 * range once. Everything here runs on the driver's thread, outside the
 * timed part of a run, except bench_scratch_remove (any thread, or a
 * signal handler).
 */
#include "driver.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <linux/magic.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define CHUNK (1u << 20)

/* ---- pattern ---- */

static uint8_t filler[BENCH_SECTOR];
static bool filler_ready;

static void filler_init(void)
{
	if (filler_ready)
		return;
	for (unsigned i = 0; i < BENCH_SECTOR; i++)
		filler[i] = (uint8_t)(i * 13u + 0x5au);
	filler_ready = true;
}

/* Distinct for every (file, sector): an odd multiplier is a bijection mod 2^64. */
static inline uint64_t header_word(unsigned file, uint64_t off)
{
	uint64_t key = ((uint64_t)file << 48) | (off / BENCH_SECTOR);
	return ((key + 1) * 0x9E3779B97F4A7C15ull) ^ 0x6673616962656e63ull;
}

void bench_pattern_headers(void *buf, uint32_t len, unsigned file, uint64_t off)
{
	uint8_t *p = buf;
	for (uint32_t s = 0; s < len; s += BENCH_SECTOR) {
		uint64_t w = header_word(file, off + s);
		memcpy(p + s, &w, sizeof(w));
	}
}

void bench_pattern_fill(void *buf, uint32_t len, unsigned file, uint64_t off)
{
	uint8_t *p = buf;
	filler_init();
	for (uint32_t s = 0; s < len; s += BENCH_SECTOR)
		memcpy(p + s, filler, BENCH_SECTOR);
	bench_pattern_headers(buf, len, file, off);
}

static uint64_t check_header(const uint8_t *p, uint32_t s, unsigned file, uint64_t off)
{
	uint64_t w, want = header_word(file, off + s);
	memcpy(&w, p + s, sizeof(w));
	if (w == want)
		return 0;
	for (unsigned i = 0; i < sizeof(w); i++)
		if (((const uint8_t *)&w)[i] != ((const uint8_t *)&want)[i])
			return 1 + s + i;
	return 1 + s;
}

uint64_t bench_pattern_check(const void *buf, uint32_t len, unsigned file, uint64_t off, bool full)
{
	const uint8_t *p = buf;
	uint64_t bad;

	if (len < BENCH_SECTOR)
		return 1;
	if (!full) {
		bad = check_header(p, 0, file, off);
		if (!bad)
			bad = check_header(p, len - BENCH_SECTOR, file, off);
		return bad;
	}
	filler_init();
	for (uint32_t s = 0; s < len; s += BENCH_SECTOR) {
		bad = check_header(p, s, file, off);
		if (bad)
			return bad;
		if (memcmp(p + s + 8, filler + 8, BENCH_SECTOR - 8) != 0) {
			for (uint32_t i = 8; i < BENCH_SECTOR; i++)
				if (p[s + i] != filler[i])
					return 1 + s + i;
		}
	}
	return 0;
}

/* ---- scratch files ---- */

#define SCRATCH_MAX 72

/* Written by the driver's thread only, read by bench_scratch_remove from any
 * thread or handler: a path is stored before the count that publishes it,
 * and the signals are blocked while the count changes. */
static char *scratch[SCRATCH_MAX];
static volatile sig_atomic_t nscratch;
static atomic_flag scratch_done = ATOMIC_FLAG_INIT;

void bench_scratch_remove(void)
{
	/* Once: at exit after a signal, or from two threads at once. */
	if (atomic_flag_test_and_set(&scratch_done))
		return;
	for (sig_atomic_t i = 0; i < nscratch; i++)
		unlink(scratch[i]);
}

static void on_signal(int sig)
{
	bench_scratch_remove();
	/* SA_RESETHAND restored the default action: die of the same signal. */
	raise(sig);
}

static void at_exit(void)
{
	bench_scratch_remove();
}

static const int scratch_signals[] = { SIGINT, SIGTERM, SIGHUP };

void bench_scratch_init(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESETHAND;
	sigemptyset(&sa.sa_mask);
	for (unsigned i = 0; i < sizeof(scratch_signals) / sizeof(scratch_signals[0]); i++)
		sigaddset(&sa.sa_mask, scratch_signals[i]);
	for (unsigned i = 0; i < sizeof(scratch_signals) / sizeof(scratch_signals[0]); i++)
		sigaction(scratch_signals[i], &sa, NULL);
	atexit(at_exit);
}

static void block_scratch_signals(sigset_t *old)
{
	sigset_t set;
	sigemptyset(&set);
	for (unsigned i = 0; i < sizeof(scratch_signals) / sizeof(scratch_signals[0]); i++)
		sigaddset(&set, scratch_signals[i]);
	pthread_sigmask(SIG_BLOCK, &set, old);
}

int bench_scratch_add(const char *path)
{
	sigset_t old;
	if (nscratch == SCRATCH_MAX)
		return -ENOSPC;
	char *copy = strdup(path);
	if (!copy)
		return -ENOMEM;
	block_scratch_signals(&old);
	scratch[nscratch] = copy;
	nscratch = nscratch + 1;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return 0;
}

void bench_scratch_forget_last(void)
{
	sigset_t old;
	if (!nscratch)
		return;
	block_scratch_signals(&old);
	nscratch = nscratch - 1;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	free(scratch[nscratch]);
	scratch[nscratch] = NULL;
}

/* ---- file system facts ---- */

static const char *fs_name(unsigned long t, char *buf, size_t n)
{
	switch (t) {
	case EXT4_SUPER_MAGIC: return "ext4";
	case XFS_SUPER_MAGIC: return "xfs";
	case BTRFS_SUPER_MAGIC: return "btrfs";
	case TMPFS_MAGIC: return "tmpfs";
	case RAMFS_MAGIC: return "ramfs";
	case OVERLAYFS_SUPER_MAGIC: return "overlayfs";
	case NFS_SUPER_MAGIC: return "nfs";
	case F2FS_SUPER_MAGIC: return "f2fs";
	default:
		snprintf(buf, n, "0x%lx", t);
		return buf;
	}
}

/* read_ahead_kb of the block device under dir (a partition's is its disk's). */
static void device_facts(const char *dir, struct bench_fsinfo *info)
{
	struct stat st;
	char p[PATH_MAX], link[PATH_MAX];
	FILE *f;

	info->read_ahead_kb = -1;
	snprintf(info->device, sizeof(info->device), "?");
	if (stat(dir, &st) != 0)
		return;
	snprintf(p, sizeof(p), "/sys/dev/block/%u:%u", major(st.st_dev), minor(st.st_dev));
	ssize_t n = readlink(p, link, sizeof(link) - 1);
	if (n > 0) {
		link[n] = 0;
		const char *b = strrchr(link, '/');
		snprintf(info->device, sizeof(info->device), "%.63s", b ? b + 1 : link);
	}
	static const char *const tails[] = { "queue/read_ahead_kb", "../queue/read_ahead_kb" };
	for (unsigned i = 0; i < 2; i++) {
		char q[PATH_MAX + 32];
		snprintf(q, sizeof(q), "%s/%s", p, tails[i]);
		f = fopen(q, "r");
		if (!f)
			continue;
		if (fscanf(f, "%d", &info->read_ahead_kb) != 1)
			info->read_ahead_kb = -1;
		fclose(f);
		if (info->read_ahead_kb >= 0)
			return;
	}
}

static bool direct_works(const char *path)
{
	void *b;
	bool ok = false;
	int fd = open(path, O_RDONLY | O_DIRECT);
	if (fd < 0)
		return false;
	if (posix_memalign(&b, 4096, 4096) == 0) {
		ok = pread(fd, b, 4096, 0) == 4096;
		free(b);
	}
	close(fd);
	return ok;
}

/* ---- creation and reuse ---- */

static int write_range(int fd, unsigned file, uint64_t from, uint64_t to, const char *path)
{
	void *buf;
	if (posix_memalign(&buf, 4096, CHUNK) != 0)
		return -1;
	for (uint64_t off = from; off < to; off += CHUNK) {
		uint32_t n = (uint32_t)(to - off < CHUNK ? to - off : CHUNK);
		bench_pattern_fill(buf, n, file, off);
		ssize_t w = pwrite(fd, buf, n, (off_t)off);
		if (w != (ssize_t)n) {
			fprintf(stderr, "fsaio-bench: writing %s at %" PRIu64 ": %s\n", path, off,
				w < 0 ? strerror(errno) : "short write");
			free(buf);
			return -1;
		}
	}
	free(buf);
	if (fsync(fd) != 0) {
		fprintf(stderr, "fsaio-bench: fsync %s: %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* A cheap look at an existing file: first and last sector, 16 blocks between. */
static bool holds_pattern(int fd, unsigned file, uint64_t len)
{
	uint8_t buf[4096];
	uint64_t x = 0x243F6A8885A308D3ull ^ file;

	if (len < sizeof(buf))
		return false;
	for (unsigned i = 0; i < 18; i++) {
		uint64_t off;
		if (i == 0)
			off = 0;
		else if (i == 1)
			off = (len - sizeof(buf)) & ~(uint64_t)(BENCH_SECTOR - 1);
		else {
			x ^= x << 13; x ^= x >> 7; x ^= x << 17;
			off = (x % (len / sizeof(buf))) * sizeof(buf);
		}
		if (pread(fd, buf, sizeof(buf), (off_t)off) != (ssize_t)sizeof(buf))
			return false;
		if (bench_pattern_check(buf, sizeof(buf), file, off, true))
			return false;
	}
	return true;
}

int bench_files_prepare(const char *dir, unsigned nfiles, uint64_t size, bool keep, char ***pathsp,
			struct bench_fsinfo *info, bool *usage_error)
{
	struct statfs sfs;
	struct statvfs svfs;
	char tbuf[32], sz[32], need_s[32], avail_s[32];
	uint64_t need = 0;
	char **paths;

	*usage_error = false;
	memset(info, 0, sizeof(*info));
	if (statfs(dir, &sfs) != 0 || statvfs(dir, &svfs) != 0) {
		fprintf(stderr, "fsaio-bench: --dir %s: %s\n", dir, strerror(errno));
		*usage_error = true;
		return -1;
	}
	snprintf(info->fstype, sizeof(info->fstype), "%s",
		 fs_name((unsigned long)sfs.f_type, tbuf, sizeof(tbuf)));
	if ((unsigned long)sfs.f_type == TMPFS_MAGIC || (unsigned long)sfs.f_type == RAMFS_MAGIC) {
		fprintf(stderr, "fsaio-bench: --dir %s is on %s, which has no device to be cold on, refuses "
			"O_DIRECT and fails RWF_NOWAIT reads; give --dir a directory on a disk file system\n",
			dir, info->fstype);
		*usage_error = true;
		return -1;
	}
	device_facts(dir, info);

	paths = calloc(nfiles, sizeof(*paths));
	if (!paths)
		return -1;
	for (unsigned i = 0; i < nfiles; i++) {
		struct stat st;
		if (asprintf(&paths[i], "%s/fsaio-bench.%u.dat", dir, i) < 0)
			return -1;
		uint64_t have = stat(paths[i], &st) == 0 ? (uint64_t)st.st_size : 0;
		if (have < size)
			need += size - have;
	}
	bench_size_str(size, sz, sizeof(sz));
	bench_size_str(need, need_s, sizeof(need_s));
	bench_size_str((uint64_t)svfs.f_bavail * svfs.f_frsize, avail_s, sizeof(avail_s));
	if (need > (uint64_t)svfs.f_bavail * svfs.f_frsize) {
		fprintf(stderr, "fsaio-bench: %u file(s) of %s need %s more in %s, which has %s free; "
			"use a smaller --size or another --dir\n", nfiles, sz, need_s, dir, avail_s);
		return -1;
	}

	for (unsigned i = 0; i < nfiles; i++) {
		struct stat st;
		bool created = false;
		/* Registered before it exists, so a signal during the write still
		 * removes it; O_EXCL tells a file made by someone else meanwhile. */
		if (!keep && bench_scratch_add(paths[i]) != 0)
			return -1;
		int fd = open(paths[i], O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd >= 0)
			created = true;
		else if (errno == EEXIST)
			fd = open(paths[i], O_RDWR | O_CLOEXEC);
		if (!created && !keep)
			bench_scratch_forget_last();
		if (fd < 0 || fstat(fd, &st) != 0) {
			fprintf(stderr, "fsaio-bench: %s: %s\n", paths[i], strerror(errno));
			*usage_error = true;
			return -1;
		}
		uint64_t have = (uint64_t)st.st_size;
		uint64_t good = have < size ? have : size;
		good &= ~(uint64_t)(CHUNK - 1);   /* a torn last chunk is rewritten */
		if (good && !holds_pattern(fd, i, good)) {
			fprintf(stderr, "fsaio-bench: %s does not hold fsaio-bench's pattern; rewriting it\n",
				paths[i]);
			good = 0;
		}
		if (good < size) {
			char w[32];
			bench_size_str(size - good, w, sizeof(w));
			fprintf(stderr, "fsaio-bench: writing %s of %s (%s\n", w, paths[i],
				!created ? "it was there before, so it is kept)" :
				keep ? "kept after the run: --keep)" :
				"removed at exit; --keep keeps it for later runs)");
			if (write_range(fd, i, good, size, paths[i]) != 0) {
				close(fd);
				return -1;
			}
		}
		close(fd);
	}
	info->direct_ok = direct_works(paths[0]);
	*pathsp = paths;
	return 0;
}

int bench_files_verify_sample(char **paths, unsigned nfiles, uint64_t size, unsigned samples,
			      uint64_t seed, char *msg, size_t msglen)
{
	uint8_t buf[4096];
	uint64_t x = seed | 1;

	for (unsigned f = 0; f < nfiles; f++) {
		int fd = open(paths[f], O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			snprintf(msg, msglen, "%s: %s", paths[f], strerror(errno));
			return -1;
		}
		for (unsigned i = 0; i < samples; i++) {
			x ^= x << 13; x ^= x >> 7; x ^= x << 17;
			uint64_t off = (x % (size / sizeof(buf))) * sizeof(buf);
			ssize_t r = pread(fd, buf, sizeof(buf), (off_t)off);
			if (r != (ssize_t)sizeof(buf)) {
				snprintf(msg, msglen, "read-back of %s at %" PRIu64 ": %s", paths[f], off,
					 r < 0 ? strerror(errno) : "short read");
				close(fd);
				return -1;
			}
			uint64_t bad = bench_pattern_check(buf, sizeof(buf), f, off, true);
			if (bad) {
				snprintf(msg, msglen, "read-back of %s: wrong data at byte %" PRIu64
					 " (after writes: a write put the wrong bytes there)",
					 paths[f], off + bad - 1);
				close(fd);
				return -1;
			}
		}
		close(fd);
	}
	return 0;
}

/* ---- page-cache state ---- */

/* cachestat(2) is not in this libc's headers: the kernel's ABI, Linux 6.5+. */
struct cs_range { uint64_t off, len; };
struct cs_stat { uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted; };
#ifndef SYS_cachestat
#define SYS_cachestat 451
#endif

static void state_of(int fd, uint64_t off, uint64_t len, struct bench_cachestate *cs)
{
	long pg = sysconf(_SC_PAGESIZE);
	struct cs_range r = { off, len };
	struct cs_stat st = { 0 };

	cs->pages = (len + (uint64_t)pg - 1) / (uint64_t)pg;
	cs->known = syscall(SYS_cachestat, fd, &r, &st, 0) == 0;
	cs->cached = st.nr_cache;
	cs->dirty = st.nr_dirty;
}

int bench_cache_state(const char *path, uint64_t off, uint64_t len, struct bench_cachestate *cs)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	state_of(fd, off, len, cs);
	close(fd);
	return 0;
}

int bench_cache_drop(const char *path, uint64_t off, uint64_t len, struct bench_cachestate *after)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* DONTNEED skips dirty and writeback pages: write them out first. */
	if (fsync(fd) != 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	for (int tries = 0; tries < 4; tries++) {
		int e = posix_fadvise(fd, (off_t)off, (off_t)len, POSIX_FADV_DONTNEED);
		if (e) {
			close(fd);
			return -e;
		}
		state_of(fd, off, len, after);
		if (!after->known || after->cached == 0)
			break;
		/* Pages still under writeback when fsync returned, or briefly held
		 * by someone: give them a moment. */
		usleep(20000);
	}
	close(fd);
	return 0;
}

int bench_cache_fill(const char *path, uint64_t off, uint64_t len, struct bench_cachestate *after)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	void *buf;
	if (fd < 0)
		return -errno;
	state_of(fd, off, len, after);
	if (after->known && after->cached >= after->pages) {
		close(fd);
		return 0;
	}
	/* Random advice: readahead must not spill past the range into a region
	 * that is meant to stay cold. */
	posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
	if (posix_memalign(&buf, 4096, CHUNK) != 0) {
		close(fd);
		return -ENOMEM;
	}
	for (uint64_t o = off; o < off + len; o += CHUNK) {
		size_t n = off + len - o < CHUNK ? (size_t)(off + len - o) : CHUNK;
		if (pread(fd, buf, n, (off_t)o) < 0) {
			int e = errno;
			free(buf);
			close(fd);
			return -e;
		}
	}
	free(buf);
	state_of(fd, off, len, after);
	close(fd);
	return 0;
}

int bench_fds_open(struct bench_fds *f, const struct bench_job *job)
{
	const int flags = O_RDWR | O_CLOEXEC | (job->direct ? O_DIRECT : 0);

	for (f->n = 0; f->n < job->nfiles; f->n++) {
		int fd = open(job->paths[f->n], flags);
		if (fd < 0) {
			int e = errno;
			bench_fds_close(f);
			return -e;
		}
		/* The same advice for every buffered method, so none of them gets
		 * (or is spared) the device's readahead alone. */
		if (!job->direct && job->fadvise >= 0)
			posix_fadvise(fd, 0, 0, job->fadvise);
		f->fd[f->n] = fd;
	}
	return 0;
}

int bench_probe_direct(const struct bench_job *job, char *why, size_t whylen)
{
	int fd = open(job->paths[0], O_RDONLY | O_CLOEXEC | O_DIRECT);
	if (fd < 0) {
		snprintf(why, whylen, "O_DIRECT: %s", strerror(errno));
		return -1;
	}
	close(fd);
	return 0;
}

void bench_fds_close(struct bench_fds *f)
{
	while (f->n)
		close(f->fd[--f->n]);
}

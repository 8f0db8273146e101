/* SPDX-License-Identifier: MIT */
/*
 * Shared test helpers: see t_helpers.h. State is per test process (Criterion
 * forks every test), so plain globals are enough; only the *_nocheck
 * functions may run on threads other than the test's.
 */
#include "t_helpers.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/io_uring.h>
#include <linux/magic.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* cachestat(2) has no glibc wrapper and the installed uapi headers predate it. */
#ifndef T_NR_cachestat
#define T_NR_cachestat 451
#endif
struct t_cachestat_range {
	uint64_t off;
	uint64_t len;
};
struct t_cachestat {
	uint64_t nr_cache;
	uint64_t nr_dirty;
	uint64_t nr_writeback;
	uint64_t nr_evicted;
	uint64_t nr_recently_evicted;
};

#define T_MAX_SHM 8
#define T_MAX_PINS 64

/* Ranges t_make_hot() mapped and locked, so they stay cached (see there). */
struct t_pin {
	void *addr;
	size_t len;
	dev_t dev;
	ino_t ino;
};
static struct t_pin t_pins[T_MAX_PINS];
static unsigned t_npins;

static char t_dirpath[PATH_MAX];
static int t_dirfd = -1;
static unsigned t_nfiles;
static char t_shm[T_MAX_SHM][PATH_MAX];
static unsigned t_nshm;

static size_t t_page(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

void t_setup(void)
{
	const char *base = getenv("FSAIO_TESTDIR");

	if (!base || !*base)
		base = getenv("FSAIO_TEST_BUILDDIR");
	if (!base || !*base)
		base = ".";
	int n = snprintf(t_dirpath, sizeof(t_dirpath), "%s/fsaio-test-XXXXXX", base);
	cr_assert(n > 0 && (size_t)n < sizeof(t_dirpath), "test dir path too long");
	cr_assert_not_null(mkdtemp(t_dirpath), "mkdtemp(%s): %s", t_dirpath, strerror(errno));
	t_dirfd = open(t_dirpath, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_assert_geq(t_dirfd, 0, "open %s: %s", t_dirpath, strerror(errno));

	/* The inline path needs a filesystem with RWF_NOWAIT reads: on tmpfs every
	 * test would silently exercise only the fallback. */
	struct statfs sfs;
	cr_assert_eq(fstatfs(t_dirfd, &sfs), 0);
	cr_assert(sfs.f_type != TMPFS_MAGIC && sfs.f_type != RAMFS_MAGIC,
		  "%s is on tmpfs/ramfs; set FSAIO_TESTDIR to a directory on disk", t_dirpath);
	t_nfiles = 0;
	t_nshm = 0;
}

static void t_unpin(const struct stat *st)
{
	unsigned i = 0;

	while (i < t_npins) {
		if (st && (t_pins[i].dev != st->st_dev || t_pins[i].ino != st->st_ino)) {
			i++;
			continue;
		}
		syscall(SYS_munlock, t_pins[i].addr, t_pins[i].len);
		munmap(t_pins[i].addr, t_pins[i].len);
		t_pins[i] = t_pins[--t_npins];
	}
}

void t_teardown(void)
{
	t_unpin(NULL);
	for (unsigned i = 0; i < t_nshm; i++)
		unlink(t_shm[i]);
	t_nshm = 0;
	if (t_dirfd < 0)
		return;
	DIR *d = fdopendir(t_dirfd);
	if (d) {
		struct dirent *de;
		while ((de = readdir(d)) != NULL) {
			if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
				unlinkat(dirfd(d), de->d_name, 0);
		}
		closedir(d);
	} else {
		close(t_dirfd);
	}
	t_dirfd = -1;
	rmdir(t_dirpath);
}

const char *t_dir(void)
{
	return t_dirpath;
}

/* splitmix64's finaliser: neighbouring words get unrelated values, so a byte
 * landing at the wrong offset (by any distance) is caught. */
static uint64_t t_mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static uint64_t t_word(uint64_t wi, unsigned seed)
{
	return t_mix(wi ^ ((uint64_t)seed << 48) ^ ((uint64_t)seed * 0x2545f4914f6cdd1dull));
}

uint8_t t_pattern_byte(uint64_t off, unsigned seed)
{
	return (uint8_t)(t_word(off >> 3, seed) >> ((off & 7) * 8));
}

void t_fill_pattern(void *buf, size_t len, uint64_t off, unsigned seed)
{
	uint8_t *p = buf;
	uint64_t w = 0;

	for (size_t i = 0; i < len; i++) {
		uint64_t o = off + i;
		if (i == 0 || (o & 7) == 0)
			w = t_word(o >> 3, seed);
		p[i] = (uint8_t)(w >> ((o & 7) * 8));
	}
}

ssize_t t_pattern_mismatch(const void *buf, size_t len, uint64_t off, unsigned seed)
{
	const uint8_t *p = buf;
	uint64_t w = 0;

	for (size_t i = 0; i < len; i++) {
		uint64_t o = off + i;
		if (i == 0 || (o & 7) == 0)
			w = t_word(o >> 3, seed);
		if (p[i] != (uint8_t)(w >> ((o & 7) * 8)))
			return (ssize_t)i;
	}
	return -1;
}

void t_check_pattern(const void *buf, size_t len, uint64_t off, unsigned seed)
{
	ssize_t bad = t_pattern_mismatch(buf, len, off, seed);

	cr_assert_eq(bad, -1,
		     "pattern mismatch at buffer byte %zd (file offset %llu): got 0x%02x, want 0x%02x",
		     bad, (unsigned long long)(off + (uint64_t)bad),
		     bad >= 0 ? ((const uint8_t *)buf)[bad] : 0,
		     t_pattern_byte(off + (uint64_t)bad, seed));
}

void t_check_file(int fd, uint64_t off, size_t len, unsigned seed)
{
	uint8_t *buf = malloc(len ? len : 1);
	size_t done = 0;

	cr_assert_not_null(buf);
	while (done < len) {
		ssize_t r = pread(fd, buf + done, len - done, (off_t)(off + done));
		cr_assert_gt(r, 0, "pread back at %llu: %zd (%s)",
			     (unsigned long long)(off + done), r, r < 0 ? strerror(errno) : "EOF");
		done += (size_t)r;
	}
	t_check_pattern(buf, len, off, seed);
	free(buf);
}

void t_check_bytes(const void *buf, size_t len, uint8_t c)
{
	const uint8_t *p = buf;

	for (size_t i = 0; i < len; i++)
		cr_assert_eq(p[i], c, "byte %zu is 0x%02x, want 0x%02x", i, p[i], c);
}

static int t_create(size_t size, unsigned seed, char *path)
{
	char name[64];
	snprintf(name, sizeof(name), "f%u.dat", t_nfiles++);
	int fd = openat(t_dirfd, name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0, "create %s/%s: %s", t_dirpath, name, strerror(errno));
	if (path) {
		int n = snprintf(path, PATH_MAX, "%s/%s", t_dirpath, name);
		cr_assert(n > 0 && n < PATH_MAX, "path too long");
	}

	size_t chunk = 1u << 20;
	uint8_t *buf = malloc(chunk);
	cr_assert_not_null(buf);
	for (size_t off = 0; off < size; off += chunk) {
		size_t n = size - off < chunk ? size - off : chunk;
		t_fill_pattern(buf, n, off, seed);
		cr_assert_eq(pwrite(fd, buf, n, (off_t)off), (ssize_t)n, "fill: %s", strerror(errno));
	}
	free(buf);
	return fd;
}

int t_tmpfile(size_t size, unsigned seed)
{
	return t_create(size, seed, NULL);
}

int t_tmpfile_path(size_t size, unsigned seed, char *path)
{
	return t_create(size, seed, path);
}

int t_shmfile(size_t size, unsigned seed)
{
	cr_assert_lt(t_nshm, T_MAX_SHM);
	char *path = t_shm[t_nshm];
	snprintf(path, PATH_MAX, "/dev/shm/fsaio-test-%d-%u", (int)getpid(), t_nshm);
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0, "create %s: %s", path, strerror(errno));
	t_nshm++;

	struct statfs sfs;
	cr_assert_eq(fstatfs(fd, &sfs), 0);
	cr_assert_eq(sfs.f_type, TMPFS_MAGIC, "/dev/shm is not tmpfs here");

	uint8_t *buf = malloc(size ? size : 1);
	cr_assert_not_null(buf);
	t_fill_pattern(buf, size, 0, seed);
	cr_assert_eq(pwrite(fd, buf, size, 0), (ssize_t)size);
	free(buf);
	return fd;
}

int t_coldfile(size_t size, unsigned seed)
{
	int fd = t_tmpfile(size, seed);

	t_make_cold(fd);
	return fd;
}

int t_hotprefix_file(size_t size, unsigned seed, uint64_t hot_len)
{
	int fd = t_coldfile(size, seed);

	t_make_hot(fd, 0, hot_len);
	return fd;
}

int t_hotfile(size_t size, unsigned seed)
{
	int fd = t_tmpfile(size, seed);

	t_make_hot(fd, 0, size);
	return fd;
}

int t_reopen(int fd, int flags)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	int nfd = open(p, flags | O_CLOEXEC);
	cr_assert_geq(nfd, 0, "reopen %s: %s", p, strerror(errno));
	return nfd;
}

static int t_cachestat(int fd, uint64_t off, uint64_t len, struct t_cachestat *cs)
{
	struct t_cachestat_range r = { .off = off, .len = len };

	memset(cs, 0, sizeof(*cs));
	return (int)syscall(T_NR_cachestat, fd, &r, cs, 0);
}

/* Pages of [off, off + len) in the page cache by mincore(2), len 0 to the
 * end of the file: for runs where cachestat is denied (ENOSYS). */
static uint64_t t_mincore_pages(int fd, uint64_t off, uint64_t len)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), start = off / page * page, n = 0;
	struct stat st;

	cr_assert_eq(fstat(fd, &st), 0);
	if (!len || off + len > (uint64_t)st.st_size)
		len = (uint64_t)st.st_size > off ? (uint64_t)st.st_size - off : 0;
	if (!len)
		return 0;
	size_t span = (size_t)(off + len - start), pages = (span + page - 1) / page;
	void *m = mmap(NULL, span, PROT_READ, MAP_SHARED, fd, (off_t)start);
	cr_assert_neq(m, MAP_FAILED, "mmap: %s", strerror(errno));
	unsigned char *vec = calloc(pages, 1);
	cr_assert_not_null(vec);
	cr_assert_eq(mincore(m, span, vec), 0, "mincore: %s", strerror(errno));
	for (size_t i = 0; i < pages; i++)
		n += vec[i] & 1;
	free(vec);
	munmap(m, span);
	return n;
}

uint64_t t_cached_pages(int fd, uint64_t off, uint64_t len)
{
	struct t_cachestat cs;
	if (t_cachestat(fd, off, len, &cs) != 0 && errno == ENOSYS)
		return t_mincore_pages(fd, off, len);
	cr_assert_eq(t_cachestat(fd, off, len, &cs), 0, "cachestat: %s", strerror(errno));
	return cs.nr_cache;
}

long t_sysfs_ra_kb(int fd)
{
	static const char *const fmt[] = {
		"/sys/dev/block/%u:%u/queue/read_ahead_kb",
		"/sys/dev/block/%u:%u/../queue/read_ahead_kb",
		"/sys/class/bdi/%u:%u/read_ahead_kb",
	};
	struct stat st;

	cr_assert_eq(fstat(fd, &st), 0);
	for (unsigned i = 0; i < sizeof(fmt) / sizeof(fmt[0]); i++) {
		char path[128];
		long kb;
		FILE *f;

		snprintf(path, sizeof(path), fmt[i], major(st.st_dev), minor(st.st_dev));
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fscanf(f, "%ld", &kb) != 1)
			kb = -1;
		fclose(f);
		if (kb >= 0)
			return kb;
	}
	return -1;
}

uint64_t t_evicted_pages(int fd, uint64_t off, uint64_t len)
{
	struct t_cachestat cs;
	cr_assert_eq(t_cachestat(fd, off, len, &cs), 0, "cachestat: %s", strerror(errno));
	return cs.nr_evicted;
}

uint64_t t_dirty_pages(int fd, uint64_t off, uint64_t len)
{
	struct t_cachestat cs;
	cr_assert_eq(t_cachestat(fd, off, len, &cs), 0, "cachestat: %s", strerror(errno));
	return cs.nr_dirty + cs.nr_writeback;
}

void t_make_cold(int fd)
{
	struct stat st;
	cr_assert_eq(fstat(fd, &st), 0);
	/* Pages pinned by t_make_hot are mapped, and DONTNEED leaves those. */
	t_unpin(&st);
	cr_assert_eq(fsync(fd), 0, "fsync: %s", strerror(errno));
	/* DONTNEED skips pages that are momentarily locked or referenced; a few
	 * rounds settle that, and cachestat says when it is really done. */
	uint64_t cached = 0;
	for (int i = 0; i < 100; i++) {
		cr_assert_eq(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
		cached = t_cached_pages(fd, 0, 0);
		if (cached == 0)
			return;
		t_sleep_ms(5);
	}
	cr_assert_fail("file still has %llu pages cached after fsync + DONTNEED",
		       (unsigned long long)cached);
}

/*
 * Hot must stay hot for the length of a test, and on some machines it does
 * not by itself: proactive reclaim (DAMON "pageout" schemes, as on this
 * workplace's VMs) evicts page cache in physical regions it deems idle,
 * fresh pages included. So the range is also mapped and mlock()ed, which
 * makes its pages unevictable until t_make_cold() or t_teardown() unpins
 * them. Mapping it with MADV_RANDOM faults in exactly the pages of the range
 * (no read-around), like the FADV_RANDOM reads before it.
 */
void t_make_hot(int fd, uint64_t off, uint64_t len)
{
	struct stat st;
	cr_assert_eq(fstat(fd, &st), 0);
	uint64_t size = (uint64_t)st.st_size;
	if (off >= size || len == 0)
		return;
	if (len > size - off)
		len = size - off;

	/* A separate open file description with FADV_RANDOM reads exactly the
	 * pages asked for: readahead would cache more than the test means, and
	 * the hint must not change how the engine's own fd reads ahead. */
	int rfd = t_reopen(fd, O_RDONLY);
	cr_assert_eq(posix_fadvise(rfd, 0, 0, POSIX_FADV_RANDOM), 0);
	size_t pg = t_page();
	uint64_t start = off / pg * pg;
	uint64_t end = off + len;
	uint8_t *buf = malloc(pg);
	cr_assert_not_null(buf);
	for (uint64_t o = start; o < end; o += pg)
		cr_assert_gt(pread(rfd, buf, pg, (off_t)o), 0, "pread %llu: %s",
			     (unsigned long long)o, strerror(errno));
	free(buf);

	if (t_npins < T_MAX_PINS) {
		size_t maplen = (size_t)(end - start);
		void *m = mmap(NULL, maplen, PROT_READ, MAP_SHARED, rfd, (off_t)start);
		cr_assert_neq(m, MAP_FAILED, "mmap: %s", strerror(errno));
		madvise(m, maplen, MADV_RANDOM);
		/* The raw call: AddressSanitizer's mlock interceptor does
		 * nothing and returns 0, which left the ASan build unpinned
		 * (a page evicted between the reads and the check, in CI). */
		if (syscall(SYS_mlock, m, maplen) == 0)
			t_pins[t_npins++] = (struct t_pin){ m, maplen, st.st_dev, st.st_ino };
		else
			munmap(m, maplen);  /* no CAP_IPC_LOCK: cached, not pinned */
	}
	close(rfd);

	uint64_t want = (end - start + pg - 1) / pg;
	uint64_t got = t_cached_pages(fd, start, end - start);
	cr_assert_eq(got, want, "make_hot: %llu of %llu pages cached",
		     (unsigned long long)got, (unsigned long long)want);
}

fsaio_ctx_t *t_ctx(const struct fsaio_params *p)
{
	fsaio_ctx_t *ctx = NULL;
	int r = T_CALL(fsaio_ctx_create(p, &ctx));
	cr_assert_eq(r, 0, "fsaio_ctx_create: %d (%s)", r, strerror(-r));
	cr_assert_not_null(ctx);
	return ctx;
}

fsaio_ctx_t *t_ctx_backend(uint32_t backend)
{
	struct fsaio_params p = { .miss_backend = backend };

	return t_ctx(&p);
}

bool t_ring_ok(void)
{
	struct io_uring_params p = { 0 };
	long fd = syscall(__NR_io_uring_setup, 1, &p);

	if (fd < 0)
		return false;
	close((int)fd);
	return true;
}

fsaio_ctx_t *t_pool_ctx(const struct fsaio_params *p)
{
	struct fsaio_params q = { 0 };

	if (p)
		q = *p;
	cr_assert(q.miss_backend == FSAIO_BACKEND_AUTO || q.miss_backend == FSAIO_BACKEND_THREADS);
	q.miss_backend = FSAIO_BACKEND_THREADS;
	return t_ctx(&q);
}

void t_ctx_destroy(fsaio_ctx_t *ctx)
{
	int r = T_CALL(fsaio_ctx_destroy(ctx));
	cr_assert_eq(r, 0, "fsaio_ctx_destroy: %d", r);
}

void t_submit(fsaio_ctx_t *ctx, struct fsaio_req **reqs, unsigned nr)
{
	int r = T_CALL(fsaio_submit(ctx, reqs, nr));
	cr_assert_eq(r, (int)nr, "fsaio_submit of %u: %d (%s)", nr, r, r < 0 ? strerror(-r) : "");
}

void t_submit1(fsaio_ctx_t *ctx, struct fsaio_req *req)
{
	t_submit(ctx, &req, 1);
}

struct fsaio_event t_run1(fsaio_ctx_t *ctx, struct fsaio_req *req)
{
	struct fsaio_event ev;

	t_submit1(ctx, req);
	t_reap_all(ctx, 1, &ev, T_EVENT_TIMEOUT_MS);
	cr_assert_eq(ev.req, req);
	return ev;
}

int64_t t_read1(fsaio_ctx_t *ctx, int fd, void *buf, size_t len, uint64_t off)
{
	struct fsaio_req req;

	fsaio_prep_pread(&req, fd, buf, len, (int64_t)off);
	return t_run1(ctx, &req).res;
}

void t_read_check(fsaio_ctx_t *ctx, int fd, void *buf, size_t len, uint64_t off,
		  unsigned seed)
{
	int64_t res = t_read1(ctx, fd, buf, len, off);

	cr_assert_eq(res, (int64_t)len, "read of %zu at %llu: res %lld", len,
		     (unsigned long long)off, (long long)res);
	t_check_pattern(buf, len, off, seed);
}

void t_cancel_each(fsaio_ctx_t *ctx, struct fsaio_req *reqs, unsigned nr, int *ret)
{
	for (unsigned i = 0; i < nr; i++) {
		ret[i] = T_CALL(fsaio_cancel(ctx, &reqs[i]));
		cr_assert(ret[i] == 0 || ret[i] == -EBUSY || ret[i] == -EINVAL,
			  "cancel: %d", ret[i]);
	}
}

void t_submit_array(fsaio_ctx_t *ctx, struct fsaio_req *reqs, unsigned nr)
{
	struct fsaio_req **rp = calloc(nr, sizeof(*rp));

	cr_assert_not_null(rp);
	for (unsigned i = 0; i < nr; i++)
		rp[i] = &reqs[i];
	t_submit(ctx, rp, nr);
	free(rp);
}

void t_run(fsaio_ctx_t *ctx, struct fsaio_req *reqs, unsigned nr, struct fsaio_event *evs)
{
	struct fsaio_req **rp = calloc(nr, sizeof(*rp));

	cr_assert_not_null(rp);
	for (unsigned i = 0; i < nr; i++)
		rp[i] = &reqs[i];
	t_submit(ctx, rp, nr);
	t_reap_all(ctx, nr, evs, T_EVENT_TIMEOUT_MS);
	t_match_events(evs, nr, rp, nr);
	free(rp);
}

void t_count_cb(void *arg, const struct fsaio_event *ev)
{
	(void)ev;
	atomic_fetch_add((_Atomic unsigned *)arg, 1);
}

void t_prep_reads(struct fsaio_req *reqs, struct fsaio_req **rp, unsigned n, int fd,
		  uint8_t *buf, size_t len, uint64_t stride)
{
	for (unsigned i = 0; i < n; i++) {
		fsaio_prep_pread(&reqs[i], fd, buf + (size_t)i * len, len, (int64_t)(i * stride));
		if (rp)
			rp[i] = &reqs[i];
	}
}

void t_read_batch(fsaio_ctx_t *ctx, int fd, uint8_t *buf, unsigned n, size_t len,
		  uint64_t stride, unsigned seed, const char *what, unsigned idx)
{
	struct fsaio_req *reqs = calloc(n, sizeof(*reqs));
	struct fsaio_event *evs = calloc(n, sizeof(*evs));

	cr_assert(reqs && evs);
	t_prep_reads(reqs, NULL, n, fd, buf, len, stride);
	t_run(ctx, reqs, n, evs);
	for (unsigned i = 0; i < n; i++) {
		cr_assert_eq(t_event_of(evs, n, &reqs[i])->res, (int64_t)len, "%s %u req %u", what, idx, i);
		t_check_pattern(buf + (size_t)i * len, len, i * stride, seed);
	}
	free(evs);
	free(reqs);
}

void t_check_path(const struct fsaio_stats *st, struct t_path want, const char *what)
{
	const struct { const char *name; uint64_t got, want; } c[] = {
		{ "requests", st->requests, want.requests },
		{ "completed_inline", st->completed_inline, want.completed_inline },
		{ "partial_inline", st->partial_inline, want.partial_inline },
		{ "queued", st->queued, want.queued },
		{ "bytes_inline", st->bytes_inline, want.bytes_inline },
		{ "bytes_worker", st->bytes_worker, want.bytes_worker },
	};

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++)
		cr_assert_eq(c[i].got, c[i].want, "%s: %s %llu, want %llu", what, c[i].name,
			     (unsigned long long)c[i].got, (unsigned long long)c[i].want);
}

struct fsaio_stats t_stats(fsaio_ctx_t *ctx)
{
	struct fsaio_stats st;
	memset(&st, 0xa5, sizeof(st));
	int r = T_CALL(fsaio_get_stats(ctx, &st));
	cr_assert_eq(r, 0, "fsaio_get_stats: %d", r);
	return st;
}

static struct timespec t_ts_ms(int64_t ms)
{
	if (ms < 0)
		ms = 0;
	return (struct timespec){ .tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000L };
}

void t_reap_all(fsaio_ctx_t *ctx, unsigned n, struct fsaio_event *evs, int timeout_ms)
{
	uint64_t deadline = t_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	unsigned got = 0;

	while (got < n) {
		uint64_t now = t_now_ns();
		cr_assert_lt(now, deadline, "only %u of %u events within %d ms", got, n, timeout_ms);
		struct timespec ts = t_ts_ms((int64_t)((deadline - now) / 1000000ull) + 1);
		int r = T_CALL(fsaio_getevents(ctx, 1, n - got, evs + got, &ts));
		if (r == -EINTR)
			continue;
		cr_assert_geq(r, 0, "fsaio_getevents: %d (%s)", r, strerror(-r));
		cr_assert_leq((unsigned)r, n - got, "getevents returned %d, more than asked", r);
		got += (unsigned)r;
	}
	/* Wait a little for a stray extra event: a request completed twice
	 * usually shows up right behind its first event. */
	struct fsaio_event extra;
	struct timespec ts = t_ts_ms(5);
	int r = T_CALL(fsaio_getevents(ctx, 1, 1, &extra, &ts));
	cr_assert_eq(r, 0, "an event beyond the %u expected arrived (res %lld)", n,
		     r > 0 ? (long long)extra.res : 0LL);
}

void t_no_event(fsaio_ctx_t *ctx)
{
	struct fsaio_event ev;
	struct timespec zero = { 0, 0 };
	int r = T_CALL(fsaio_getevents(ctx, 0, 1, &ev, &zero));
	cr_assert_eq(r, 0, "unexpected event (res %lld)", r > 0 ? (long long)ev.res : 0LL);
}

const struct fsaio_event *t_event_of(const struct fsaio_event *evs, unsigned n,
				     const struct fsaio_req *req)
{
	const struct fsaio_event *found = NULL;

	for (unsigned i = 0; i < n; i++) {
		if (evs[i].req != req)
			continue;
		cr_assert_null(found, "request %p has two events", (const void *)req);
		found = &evs[i];
	}
	cr_assert_not_null(found, "request %p has no event", (const void *)req);
	cr_assert_eq(found->user_data, req->user_data, "event's user_data is not the request's");
	return found;
}

void t_match_events(const struct fsaio_event *evs, unsigned n,
		    struct fsaio_req *const *reqs, unsigned nreq)
{
	cr_assert_eq(n, nreq, "%u events for %u requests", n, nreq);
	for (unsigned i = 0; i < nreq; i++)
		(void)t_event_of(evs, n, reqs[i]);
}

void t_blocker_init(struct t_blocker *b)
{
	b->len = t_page();
	b->uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	cr_assert_geq(b->uffd, 0, "userfaultfd: %s (the cancel/destroy tests need it: run as root "
		      "or set vm.unprivileged_userfaultfd=1)", strerror(errno));
	struct uffdio_api api = { .api = UFFD_API };
	cr_assert_eq(ioctl(b->uffd, UFFDIO_API, &api), 0, "UFFDIO_API: %s", strerror(errno));
	b->page = mmap(NULL, b->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(b->page, MAP_FAILED);
	struct uffdio_register reg = {
		.range = { .start = (uintptr_t)b->page, .len = b->len },
		.mode = UFFDIO_REGISTER_MODE_MISSING,
	};
	cr_assert_eq(ioctl(b->uffd, UFFDIO_REGISTER, &reg), 0, "UFFDIO_REGISTER: %s", strerror(errno));
}

void t_blocker_wait_fault(struct t_blocker *b, int timeout_ms)
{
	struct pollfd pfd = { .fd = b->uffd, .events = POLLIN };
	int r;

	do
		r = poll(&pfd, 1, timeout_ms);
	while (r < 0 && errno == EINTR);
	cr_assert_eq(r, 1, "no thread faulted on the blocker page within %d ms", timeout_ms);

	struct uffd_msg msg;
	ssize_t n = read(b->uffd, &msg, sizeof(msg));
	cr_assert_eq(n, (ssize_t)sizeof(msg), "read uffd: %s", strerror(errno));
	cr_assert_eq(msg.event, UFFD_EVENT_PAGEFAULT);
	cr_assert_eq(msg.arg.pagefault.address & ~(uint64_t)(b->len - 1), (uintptr_t)b->page);
}

int t_blocker_release_nocheck(struct t_blocker *b, const void *content)
{
	struct uffdio_copy c = {
		.dst = (uintptr_t)b->page,
		.src = (uintptr_t)content,
		.len = b->len,
	};
	if (ioctl(b->uffd, UFFDIO_COPY, &c) != 0)
		return -errno;
	return c.copy == (int64_t)b->len ? 0 : -EIO;
}

void t_blocker_release(struct t_blocker *b, const void *content)
{
	int r = t_blocker_release_nocheck(b, content);
	cr_assert_eq(r, 0, "UFFDIO_COPY: %s", strerror(-r));
}

void t_blocker_fini(struct t_blocker *b)
{
	/* Closing the userfaultfd wakes any thread still faulting on the page. */
	if (b->uffd >= 0)
		close(b->uffd);
	b->uffd = -1;
	if (b->page && b->page != MAP_FAILED)
		munmap(b->page, b->len);
	b->page = NULL;
}

void t_saturate(struct t_sat *s, const struct fsaio_params *p)
{
	cr_assert(p && p->workers == 1, "t_saturate needs a one-worker context");
	t_blocker_init(&s->blk);
	cr_assert_eq(s->blk.len, sizeof(s->content), "the suite assumes 4 KiB pages");
	s->ctx = t_pool_ctx(p);
	s->wfd = t_tmpfile(0, 0);
	fsaio_prep_pwrite(&s->breq, s->wfd, s->blk.page, s->blk.len, 0);
	s->breq.rw_flags = RWF_DSYNC;
	s->breq.user_data = &s->breq;
	t_submit1(s->ctx, &s->breq);
	t_blocker_wait_fault(&s->blk, T_EVENT_TIMEOUT_MS);

	struct fsaio_stats st = t_stats(s->ctx);
	cr_assert_eq(st.pool_threads, 1);
	cr_assert_eq(st.pool_queue_len, 0);
	t_fill_pattern(s->content, sizeof(s->content), 0, 99);
}

void t_sat_unblock(struct t_sat *s)
{
	t_blocker_release(&s->blk, s->content);
}

void t_sat_check(struct t_sat *s, const struct fsaio_event *evs, unsigned n)
{
	const struct fsaio_event *ev = t_event_of(evs, n, &s->breq);
	cr_assert_eq(ev->res, (int64_t)s->blk.len, "blocker res %lld", (long long)ev->res);
	t_check_file(s->wfd, 0, s->blk.len, 99);
}

fsaio_ctx_t *t_ctx_or_sat(struct t_sat *s, uint32_t backend)
{
	struct fsaio_params p = { .workers = 1 };

	if (!s)
		return t_ctx_backend(backend);
	t_saturate(s, &p);
	return s->ctx;
}

void t_reap_sat(fsaio_ctx_t *ctx, struct t_sat *s, struct fsaio_event *evs,
		struct fsaio_req **reqs, unsigned nreq)
{
	unsigned n = nreq + (s ? 1 : 0);

	t_reap_all(ctx, n, evs, T_EVENT_TIMEOUT_MS);
	if (s) {
		t_sat_check(s, evs, n);
		for (unsigned i = 0; i < n; i++)
			if (evs[i].req == &s->breq)
				evs[i] = evs[--n];
	}
	t_match_events(evs, n, reqs, nreq);
}

void t_ctx_sat_destroy(fsaio_ctx_t *ctx, struct t_sat *s)
{
	t_ctx_destroy(ctx);
	if (s)
		t_blocker_fini(&s->blk);
}

void t_sat_reap_blocker(struct t_sat *s)
{
	struct fsaio_event ev;

	t_sat_unblock(s);
	t_reap_all(s->ctx, 1, &ev, T_EVENT_TIMEOUT_MS);
	t_sat_check(s, &ev, 1);
}

uint64_t t_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void t_sleep_ms(unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

int t_waitpid_bounded(pid_t pid, int timeout_ms)
{
	uint64_t deadline = t_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	int status = 0;

	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);
		if (r == pid)
			return status;
		cr_assert(r == 0 || (r < 0 && errno == EINTR), "waitpid: %s", strerror(errno));
		if (t_now_ns() >= deadline)
			break;
		t_sleep_ms(10);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	cr_assert_fail("child %d still running after %d ms (hung)", (int)pid, timeout_ms);
	return -1;
}

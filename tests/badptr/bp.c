/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: the harness's primitives (bp.h): the kinds of pointer and how an
 * object is placed at one, the line a case says, the requests it follows,
 * and the test files.
 *
 * Each case runs in a child forked for it alone (badptr_diff.c), which
 * calls these from its one thread; the state here (the line's pipe, the
 * followed requests) is that child's. The unmapped address and the files
 * are made once, before the first fork, and inherited.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bp.h"

#define PAGE 4096

const char *const bp_kind_names[BP_NKINDS] = {
	[BP_GOOD] = "good",
	[BP_NULL] = "null",
	[BP_UNMAPPED] = "unmapped",
	[BP_PROT_NONE] = "prot-none",
	[BP_READONLY] = "readonly",
	[BP_STRADDLE] = "straddle",
	[BP_KERNEL] = "kernel",
	[BP_NONCANON47] = "noncanon-47",
	[BP_NONCANON63] = "noncanon-63",
	[BP_MISALIGNED] = "misaligned",
	[BP_AFTER] = "unmapped-after",
};

/* ------------------------------------------------------------ memory */

/*
 * The unmapped address: a page reserved far below where mmap places
 * anything (top-down from below the stack) and given back at once, so that
 * no later mapping of the case, the drop-in's thread stacks or rings
 * included, can land on it and make it good. The candidates avoid
 * AddressSanitizer's fixed ranges (its shadow ends at 0x10007fff7fff, its
 * allocator starts at 0x600000000000). Where none can be had, a hole
 * between two mappings, which only a mapping of one page could fill.
 */
static void *hole;

void bp_hole_init(void)
{
	static const uintptr_t at[] = { 0x500000000000ull, 0x480000000000ull, 0x300000000000ull };
	void *p;

	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		p = mmap((void *)at[i], PAGE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		if (p == (void *)at[i]) {
			munmap(p, PAGE);
			hole = p;
			return;
		}
		if (p != MAP_FAILED)
			munmap(p, PAGE);
	}
	p = mmap(NULL, 3 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		perror("badptr_diff: mmap");
		exit(3);
	}
	munmap((char *)p + PAGE, PAGE);
	hole = (char *)p + PAGE;
}

void *bp_pages(size_t n)
{
	size_t len = (n + PAGE - 1) / PAGE * PAGE;
	void *p = mmap(NULL, len ? len : PAGE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		bp_stop("fixture: mmap: %s", bp_errname(errno));
	return p;
}

static void *copy_in(void *dst, const void *tmpl, size_t n)
{
	if (tmpl)
		memcpy(dst, tmpl, n);
	return dst;
}

void *bp_place(enum bp_kind k, const void *tmpl, size_t size, size_t first)
{
	char *p;

	switch (k) {
	case BP_NULL:
		return NULL;
	case BP_UNMAPPED:
		return hole;
	case BP_KERNEL:
		return (void *)(uintptr_t)0xffffffff81000000ull;
	case BP_NONCANON47:
		return (void *)(uintptr_t)0x0000800000000000ull;
	case BP_NONCANON63:
		return (void *)(uintptr_t)0x8000000000000000ull;
	case BP_PROT_NONE:
		p = bp_pages(size);
		if (mprotect(p, size, PROT_NONE) < 0)
			bp_stop("fixture: mprotect: %s", bp_errname(errno));
		return p;
	case BP_READONLY:
		p = copy_in(bp_pages(size), tmpl, size);
		if (mprotect(p, size, PROT_READ) < 0)
			bp_stop("fixture: mprotect: %s", bp_errname(errno));
		return p;
	case BP_STRADDLE: {
		/* first bytes fill the end of a good page; the next page is
		 * PROT_NONE and holds the rest. */
		size_t good = (first + PAGE - 1) / PAGE * PAGE;

		p = bp_pages(good + PAGE);
		if (mprotect(p + good, PAGE, PROT_NONE) < 0)
			bp_stop("fixture: mprotect: %s", bp_errname(errno));
		return copy_in(p + good - first, tmpl, first);
	}
	case BP_MISALIGNED:
		return copy_in(bp_pages(size + 1) + 1, tmpl, size);
	case BP_GOOD:
	case BP_AFTER:
	default:
		return copy_in(bp_pages(size), tmpl, size);
	}
}

bool bp_readable(enum bp_kind k)
{
	return k == BP_GOOD || k == BP_MISALIGNED || k == BP_READONLY;
}

/* -------------------------------------------------------------- line */

/* The write end of this case's pipe to the parent; -1 outside a case. */
static int out_fd = -1;

void bp_out_set(int fd)
{
	out_fd = fd;
}

static void say_v(const char *fmt, va_list ap)
{
	char buf[1024];
	int n;

	buf[0] = ' ';
	n = vsnprintf(buf + 1, sizeof(buf) - 1, fmt, ap);
	if (n < 0)
		return;
	n = n + 1 < (int)sizeof(buf) ? n + 1 : (int)sizeof(buf) - 1;
	/* One write per part: a crash right after still leaves it said. */
	if (out_fd >= 0 && write(out_fd, buf, (size_t)n) != n)
		_exit(4);
}

void bp_say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say_v(fmt, ap);
	va_end(ap);
}

_Noreturn void bp_end(void)
{
	/* The end of the line: the case is over, whatever its child's exit
	 * still has to do (the kernel tears an AIO context down at exit,
	 * waiting out an RCU grace period). */
	if (out_fd >= 0 && write(out_fd, "\n", 1) != 1)
		_exit(4);
	_exit(0);
}

_Noreturn void bp_stop(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say_v(fmt, ap);
	va_end(ap);
	bp_end();
}

const char *bp_errname(int e)
{
	static char buf[16];
	const char *name = e > 0 ? strerrorname_np(e) : NULL;

	if (name)
		return name;
	snprintf(buf, sizeof(buf), "E%d", e);
	return buf;
}

const char *bp_res(long long res, char *buf, size_t n)
{
	if (res < 0 && res > -4096)
		snprintf(buf, n, "-%s", bp_errname((int)-res));
	else
		snprintf(buf, n, "%lld", res);
	return buf;
}

/* ---------------------------------------------------------- requests */

#define MAX_TRACKED 16

static struct {
	const char *label;
	const void *obj;
} tracked[MAX_TRACKED];
static int ntracked;

void bp_track(const char *label, const void *obj)
{
	if (ntracked < MAX_TRACKED)
		tracked[ntracked++] = (__typeof__(tracked[0])){ label, obj };
}

const char *bp_label(const void *obj)
{
	for (int i = 0; i < ntracked; i++)
		if (tracked[i].obj == obj)
			return tracked[i].label;
	return "?";
}

static int by_label(const void *a, const void *b)
{
	const struct bp_ev *x = a, *y = b;
	int c = strcmp(x->label, y->label);

	return c ? c : (x->res > y->res) - (x->res < y->res);
}

void bp_say_events(const char *prefix, struct bp_ev *ev, int n)
{
	char line[512], res[32];
	size_t len;

	qsort(ev, (size_t)n, sizeof(*ev), by_label);
	len = (size_t)snprintf(line, sizeof(line), "%s %d%s", prefix, n, n ? ":" : "");
	for (int i = 0; i < n && len < sizeof(line); i++) {
		len += (size_t)snprintf(line + len, sizeof(line) - len, " %s=%s", ev[i].label,
					bp_res(ev[i].res, res, sizeof(res)));
		if (ev[i].res2 && len < sizeof(line))
			len += (size_t)snprintf(line + len, sizeof(line) - len, "/%lld",
						ev[i].res2);
	}
	bp_say("%s", line);
}

/* ------------------------------------------------------------- files */

int bp_fd_read = -1, bp_fd_write = -1, bp_fd_direct = -1;
static char dir[4096];

uint8_t bp_byte(uint64_t off)
{
	return (uint8_t)(off * 7 + (off >> 8) + 1);
}

bool bp_data_ok(const void *buf, size_t n, uint64_t off)
{
	const uint8_t *b = buf;

	for (size_t i = 0; i < n; i++)
		if (b[i] != bp_byte(off + i))
			return false;
	return true;
}

/* Is every page of [off, off + len) of fd in the page cache? */
static bool resident(int fd, uint64_t off, size_t len)
{
	unsigned char vec[64];
	size_t pages = (len + PAGE - 1) / PAGE;
	bool all = true;
	void *m;

	if (pages > sizeof(vec))
		return false;
	m = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, (off_t)off);
	if (m == MAP_FAILED)
		return false;
	if (mincore(m, len, vec) < 0)
		all = false;
	for (size_t i = 0; all && i < pages; i++)
		all = vec[i] & 1;
	munmap(m, len);
	return all;
}

void bp_warm(int fd, uint64_t off, size_t len)
{
	static char scratch[BP_FILE_SIZE];

	/* The kernel may drop clean pages under memory pressure: read them
	 * again until they are all there. */
	for (int i = 0; i < 100; i++) {
		if (pread(fd, scratch, len < sizeof(scratch) ? len : sizeof(scratch),
			  (off_t)off) < 0)
			break;
		if (resident(fd, off, len))
			return;
	}
	bp_stop("fixture: the file's pages do not stay cached");
}

/* A file of the pattern, opened with flags, and unlinked at once: nothing
 * is left behind however the run ends. */
static int make_file(const char *name, int flags)
{
	static uint8_t pat[BP_FILE_SIZE];
	char path[4200];
	int fd;

	for (size_t i = 0; i < sizeof(pat); i++)
		pat[i] = bp_byte(i);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || pwrite(fd, pat, sizeof(pat), 0) != (ssize_t)sizeof(pat) || fsync(fd) < 0) {
		fprintf(stderr, "badptr_diff: %s: %s\n", path, strerror(errno));
		exit(3);
	}
	if (flags) {
		close(fd);
		fd = open(path, O_RDWR | O_CLOEXEC | flags);
	}
	unlink(path);
	return fd;
}

/* Files go to $FSAIO_TEST_BUILDDIR (the build tree, on disk: O_DIRECT
 * needs a real filesystem), else the current directory. */
void bp_files_init(void)
{
	const char *base = getenv("FSAIO_TEST_BUILDDIR");

	snprintf(dir, sizeof(dir), "%s/badptr-XXXXXX", base ? base : ".");
	if (!mkdtemp(dir)) {
		fprintf(stderr, "badptr_diff: mkdtemp %s: %s\n", dir, strerror(errno));
		exit(3);
	}
	bp_fd_read = make_file("read", 0);
	bp_fd_write = make_file("write", 0);
	bp_fd_direct = make_file("direct", O_DIRECT);
	rmdir(dir);
}

void bp_files_fini(void)
{
	close(bp_fd_read);
	close(bp_fd_write);
	if (bp_fd_direct >= 0)
		close(bp_fd_direct);
}

void bp_say_data(const char *b, enum bp_kind k, long long res)
{
	size_t n = res > 0 ? (size_t)res : 0;

	if (k == BP_STRADDLE && n > BP_DATA_GOOD)
		n = BP_DATA_GOOD;
	if (!n || !(k == BP_GOOD || k == BP_MISALIGNED || k == BP_STRADDLE))
		return;
	bp_say(bp_data_ok(b, n, 0) ? "data ok" : "data BAD");
}

void bp_unmap_after(void *p, size_t n, enum bp_kind k)
{
	if (k == BP_AFTER)
		munmap(p, (n + 4095) / 4096 * 4096);
}

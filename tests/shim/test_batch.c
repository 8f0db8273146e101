/* SPDX-License-Identifier: MIT */
/*
 * One io_submit bringing many reads: the drop-in hands them to the engine
 * in batches, whose cached reads are attempted in one system call. What
 * the program sees must stay the kernel's: each iocb's res (bytes, 0 at
 * EOF, a short count across it, -EFAULT in the event for a buffer it
 * cannot write), the bytes in each buffer and nothing past them, a cached
 * read's event there when io_submit returns, iocbs done in order (a read
 * after a write of its range sees it, one before does not), and a refused
 * iocb ending the call with the ones after it untouched.
 *
 * Each test runs on the kernel and on the drop-in (meson.build) against
 * the same expected values; the mixed call is also run on the kernel's
 * own AIO from the same process (libc's syscall(), which the drop-in's
 * exported syscall() does not reach) and compared iocb by iocb.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "t_aio.h"

#define PAGE 4096
#define GUARD 64
#define SENT 0xee

TestSuite(batch, .init = t_setup, .fini = t_teardown);

/* Keep [0, size) of fd cached for the rest of the test: mapped and locked
 * (the raw call: a sanitizer's mlock may do nothing), so that reclaim
 * cannot turn a cached read into a miss between the check and the call. */
static void pin(int fd, size_t size)
{
	void *m = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);

	cr_assert_neq(m, MAP_FAILED);
	cr_assert_eq(syscall(SYS_mlock, m, size), 0, "mlock: %s", strerror(errno));
	cr_assert_eq(t_cached_pages(fd, 0, size), (size + PAGE - 1) / PAGE);
}

/* Lines of /proc/self/maps naming the kernel's AIO ring file. */
static int kernel_aio_rings(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;

	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "[aio]"))
			n++;
	fclose(f);
	return n;
}

static uint8_t *sent_buf(size_t len)
{
	uint8_t *b = malloc(len + GUARD);

	cr_assert_not_null(b);
	memset(b, SENT, len + GUARD);
	return b;
}

/* ------------------------------------------------------------------------ */
/* Cached reads only: done inside io_submit, whatever their number. */

static void cached_reads(int n, int ctx_events)
{
	const size_t size = 1 << 20;
	int fd = t_file(size, 31);
	io_context_t ctx = t_ctx(ctx_events);
	struct iocb *cb = calloc((size_t)n, sizeof(*cb));
	struct iocb **list = calloc((size_t)n, sizeof(*list));
	struct io_event *ev = calloc((size_t)n + 1, sizeof(*ev));
	uint8_t *bufs = malloc((size_t)n * PAGE);
	struct timespec zero = { 0, 0 };
	int rings = kernel_aio_rings();

	cr_assert(cb && list && ev && bufs);
	pin(fd, size);
	for (int round = 0; round < 3; round++) {
		memset(bufs, SENT, (size_t)n * PAGE);
		for (int i = 0; i < n; i++) {
			long long off = (long long)((i * 37 + round * 101) % 250) * PAGE + i % 61;

			io_prep_pread(&cb[i], fd, bufs + (size_t)i * PAGE, PAGE, off);
			cb[i].data = (void *)(uintptr_t)(0x1000 + i);
			list[i] = &cb[i];
		}
		T_EXPECT(io_submit(ctx, n, list), n);
		/* The kernel's promise: cached, so done when io_submit returns. */
		T_EXPECT(io_getevents(ctx, 0, n + 1, ev, &zero), n);
		for (int i = 0; i < n; i++) {
			long k = (struct iocb *)ev[i].obj - cb;

			cr_assert(k >= 0 && k < n, "event %d: obj %p", i, (void *)ev[i].obj);
			cr_assert_eq((uintptr_t)ev[i].data, 0x1000 + (uintptr_t)k);
			cr_assert_eq((long)ev[i].res, PAGE, "read %ld: res %ld", k, (long)ev[i].res);
			cr_assert_eq((long)ev[i].res2, 0);
			t_check(bufs + (size_t)k * PAGE, PAGE, (uint64_t)cb[k].u.c.offset, 31);
		}
	}
	/* The drop-in made its first attempts in the kernel's AIO, on a
	 * context of its own (the kernel run made one for the test). */
	if (t_shim())
		cr_assert_gt(kernel_aio_rings(), rings, "no kernel AIO context: the reads were not batched");
	T_DONE(ctx, fd);
	free(cb);
	free(list);
	free(ev);
	free(bufs);
}

Test(batch, cached_reads_of_one_call_done_in_it)
{
	cached_reads(32, 64);
}

/* More than the engine takes in one batch (64). */
Test(batch, more_reads_than_one_batch)
{
	cached_reads(150, 256);
}

/* An iocb refused at submit (a bad fd) in the middle of cached reads: the
 * count before it, their events, and nothing of the ones after it touched;
 * submitted again from there, the kernel's error for it. */
Test(batch, refused_iocb_ends_the_call_untouched)
{
	enum { N = 100, BAD = 40 };
	const size_t size = 1 << 20;
	int fd = t_file(size, 32);
	io_context_t ctx = t_ctx(128);
	static struct iocb cb[N];
	struct iocb *list[N];
	static struct io_event ev[N + 1];
	static uint8_t bufs[N][PAGE];
	struct timespec zero = { 0, 0 };

	pin(fd, size);
	memset(bufs, SENT, sizeof(bufs));
	for (int i = 0; i < N; i++) {
		io_prep_pread(&cb[i], fd, bufs[i], PAGE, (long long)(i * 2) * PAGE + 5);
		list[i] = &cb[i];
	}
	cb[BAD].aio_fildes = -1;
	T_EXPECT(io_submit(ctx, N, list), BAD);
	T_EXPECT(io_getevents(ctx, 0, N + 1, ev, &zero), BAD);
	for (int i = 0; i < BAD; i++) {
		long k = (struct iocb *)ev[i].obj - cb;

		cr_assert(k >= 0 && k < BAD, "event %d: obj %p", i, (void *)ev[i].obj);
		cr_assert_eq((long)ev[i].res, PAGE);
		t_check(bufs[k], PAGE, (uint64_t)k * 2 * PAGE + 5, 32);
	}
	for (int i = BAD; i < N; i++)
		for (int b = 0; b < PAGE; b++)
			cr_assert_eq(bufs[i][b], SENT, "iocb %d after the refused one: byte %d written", i, b);
	T_EXPECT(io_submit(ctx, N - BAD, list + BAD), -EBADF);
	T_EXPECT(io_submit(ctx, N - BAD - 1, list + BAD + 1), N - BAD - 1);
	T_EXPECT(io_getevents(ctx, 0, N + 1, ev, &zero), N - BAD - 1);
	for (int i = 0; i < N - BAD - 1; i++) {
		long k = (struct iocb *)ev[i].obj - cb;

		cr_assert(k > BAD && k < N, "event %d: obj %p", i, (void *)ev[i].obj);
		cr_assert_eq((long)ev[i].res, PAGE);
		t_check(bufs[k], PAGE, (uint64_t)k * 2 * PAGE + 5, 32);
	}
	for (int b = 0; b < PAGE; b++)
		cr_assert_eq(bufs[BAD][b], SENT);
	T_DONE(ctx, fd);
}

/* ------------------------------------------------------------------------ */
/* A mixed call, and the kernel's answer to the same call. */

enum { HOTF, EOFF, COLDF, NF };
#define NMIX 49
#define POFF ((2 << 20) + (1 << 19) + 200)  /* the partly cached read, in the cold file */
#define WOFF (256 * 1024)       /* the write's page in the hot file */
#define WSEED 99

struct mix {
	int fd[NF];
	size_t size[NF];
	unsigned seed[NF];
	struct iocb cb[NMIX], *list[NMIX];
	uint8_t *buf[NMIX];             /* PREAD, PWRITE: len + GUARD */
	struct iovec iov[NMIX][3];      /* PREADV */
	int iovcnt[NMIX];
	size_t len[NMIX];
	long want[NMIX];
	int file[NMIX];
	bool cold[NMIX];                /* may complete after io_submit returns */
	bool after_write[NMIX];         /* reads the written page's new bytes */
	bool foreign[NMIX];             /* buf is a mapping the kernel cannot write */
	uint8_t *none;                  /* PROT_NONE */
};

static long count(const struct mix *m, int f, long long off, size_t len)
{
	if ((size_t)off >= m->size[f])
		return 0;
	return (long)(m->size[f] - (size_t)off < len ? m->size[f] - (size_t)off : len);
}

static void mix_read(struct mix *m, int i, int f, long long off, size_t len)
{
	m->buf[i] = sent_buf(len);
	m->len[i] = len;
	m->file[i] = f;
	m->want[i] = count(m, f, off, len);
	io_prep_pread(&m->cb[i], m->fd[f], m->buf[i], len, off);
}

static void mix_readv(struct mix *m, int i, int f, long long off, const size_t *lens, int n)
{
	size_t total = 0;

	for (int k = 0; k < n; k++) {
		m->iov[i][k] = (struct iovec){ sent_buf(lens[k]), lens[k] };
		total += lens[k];
	}
	m->iovcnt[i] = n;
	m->len[i] = total;
	m->file[i] = f;
	m->want[i] = count(m, f, off, total);
	io_prep_preadv(&m->cb[i], m->fd[f], m->iov[i], n, off);
}

static void mix_fault(struct mix *m, int i, int f, long long off)
{
	m->buf[i] = m->none;
	m->foreign[i] = true;
	m->len[i] = PAGE;
	m->file[i] = f;
	m->want[i] = -EFAULT;
	io_prep_pread(&m->cb[i], m->fd[f], m->none, PAGE, off);
}

/* The iocbs, with fresh buffers. */
static void mix_prep(struct mix *m)
{
	static const size_t v3[3] = { 100, 3000, 5000 }, v2[2] = { 50, 50 };
	int i = 0;

	memset(m->cb, 0, sizeof(m->cb));
	memset(m->iovcnt, 0, sizeof(m->iovcnt));
	memset(m->cold, 0, sizeof(m->cold));
	memset(m->after_write, 0, sizeof(m->after_write));
	memset(m->foreign, 0, sizeof(m->foreign));
	for (int k = 0; k < 16; k++, i++)
		mix_read(m, i, HOTF, (long long)(k * 13) * PAGE + k, PAGE);
	mix_read(m, i++, EOFF, 10000, PAGE);                    /* at EOF: 0 */
	mix_read(m, i++, EOFF, 9000, PAGE);                     /* across it: 1000 */
	mix_read(m, i++, EOFF, 1LL << 40, PAGE);                /* far past it: 0 */
	mix_fault(m, i++, HOTF, 5 * PAGE);                      /* -EFAULT in the event */
	m->cold[i] = true;
	mix_read(m, i++, COLDF, (1 << 20) + 100, 16384);
	m->cold[i] = true;                                      /* its first page cached, the rest not */
	mix_read(m, i++, COLDF, POFF, 16384);
	mix_readv(m, i++, HOTF, 12345, v3, 3);
	mix_read(m, i++, HOTF, WOFF - 100, PAGE + 200);         /* before the write: old bytes */
	m->buf[i] = sent_buf(PAGE);                             /* the write */
	t_fill(m->buf[i], PAGE, WOFF, WSEED);
	m->len[i] = PAGE;
	m->file[i] = HOTF;
	m->want[i] = PAGE;
	io_prep_pwrite(&m->cb[i], m->fd[HOTF], m->buf[i], PAGE, WOFF);
	i++;
	m->after_write[i] = true;
	mix_read(m, i++, HOTF, WOFF, PAGE);                     /* after it: new bytes */
	m->cold[i] = true;
	mix_read(m, i++, COLDF, 3 << 20, PAGE);
	m->cold[i] = true;
	mix_fault(m, i++, COLDF, 2 << 20);
	for (int k = 0; k < 20; k++, i++)
		mix_read(m, i, HOTF, (long long)(200 - k * 7) * PAGE + 3 * k, PAGE);
	mix_readv(m, i++, EOFF, 9950, v2, 2);                   /* across EOF: 50 */
	cr_assert_eq(i, NMIX);
	for (i = 0; i < NMIX; i++) {
		m->cb[i].data = (void *)(uintptr_t)(0x2000 + i);
		m->list[i] = &m->cb[i];
	}
}

static void mix_free(struct mix *m)
{
	for (int i = 0; i < NMIX; i++) {
		if (!m->foreign[i])
			free(m->buf[i]);
		m->buf[i] = NULL;
		for (int k = 0; k < m->iovcnt[i]; k++)
			free(m->iov[i][k].iov_base);
		m->iovcnt[i] = 0;
	}
}

/* Bring the one page holding off into the cache, no readahead around it. */
static void warm_page(int fd, long long off)
{
	char path[64];
	uint8_t page[PAGE];

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	int rfd = open(path, O_RDONLY | O_CLOEXEC);
	cr_assert_geq(rfd, 0);
	cr_assert_eq(posix_fadvise(rfd, 0, 0, POSIX_FADV_RANDOM), 0);
	cr_assert_eq(pread(rfd, page, PAGE, off / PAGE * PAGE), PAGE);
	close(rfd);
}

/* The file state the call starts from: the written page as it was, the
 * cold file out of the cache but for the page of the partly cached read,
 * the others cached. */
static void mix_reset(struct mix *m)
{
	uint8_t page[PAGE];

	t_fill(page, PAGE, WOFF, m->seed[HOTF]);
	cr_assert_eq(pwrite(m->fd[HOTF], page, PAGE, WOFF), PAGE);
	t_cold(m->fd[COLDF]);
	warm_page(m->fd[COLDF], POFF);
	cr_assert_eq(t_cached_pages(m->fd[COLDF], 0, m->size[COLDF]), 1);
	cr_assert_eq(t_cached_pages(m->fd[HOTF], 0, m->size[HOTF]), m->size[HOTF] / PAGE);
	cr_assert_eq(t_cached_pages(m->fd[EOFF], 0, m->size[EOFF]), (m->size[EOFF] + PAGE - 1) / PAGE);
}

/* The bytes iocb i read, concatenated, with the sentinels past each
 * buffer checked; NULL for a write or a foreign buffer. */
static uint8_t *mix_bytes(const struct mix *m, int i)
{
	uint8_t *out;
	size_t at = 0;

	if (m->foreign[i] || m->cb[i].aio_lio_opcode == IO_CMD_PWRITE)
		return NULL;
	out = malloc(m->len[i] ? m->len[i] : 1);
	cr_assert_not_null(out);
	if (!m->iovcnt[i]) {
		memcpy(out, m->buf[i], m->len[i]);
		for (int g = 0; g < GUARD; g++)
			cr_assert_eq(m->buf[i][m->len[i] + (size_t)g], SENT, "iocb %d: guard written", i);
		return out;
	}
	for (int k = 0; k < m->iovcnt[i]; k++) {
		memcpy(out + at, m->iov[i][k].iov_base, m->iov[i][k].iov_len);
		for (int g = 0; g < GUARD; g++)
			cr_assert_eq(((uint8_t *)m->iov[i][k].iov_base)[m->iov[i][k].iov_len + (size_t)g],
				     SENT, "iocb %d: iovec %d's guard written", i, k);
		at += m->iov[i][k].iov_len;
	}
	return out;
}

/* Each iocb's res and bytes against what it must give. */
static void mix_check(const struct mix *m, const long *res, const char *who)
{
	for (int i = 0; i < NMIX; i++) {
		cr_assert_eq(res[i], m->want[i], "%s: iocb %d: res %ld, want %ld", who, i, res[i],
			     m->want[i]);
		uint8_t *got = mix_bytes(m, i);
		if (!got)
			continue;
		long long off = m->cb[i].u.c.offset;
		size_t n = res[i] > 0 ? (size_t)res[i] : 0;
		for (size_t k = 0; k < n; k++) {
			uint64_t o = (uint64_t)off + k;
			bool written = m->after_write[i] && o >= WOFF && o < WOFF + PAGE;
			uint8_t want = t_byte(o, written ? WSEED : m->seed[m->file[i]]);

			cr_assert_eq(got[k], want, "%s: iocb %d: byte %zu (offset %llu) is %#x, want %#x",
				     who, i, k, (unsigned long long)o, got[k], want);
		}
		for (size_t k = n; k < m->len[i]; k++)
			cr_assert_eq(got[k], SENT, "%s: iocb %d: byte %zu past the count written", who, i, k);
		free(got);
	}
}

/* Reap the mixed call's NMIX events into res[] by iocb. */
static void mix_collect(const struct mix *m, const struct io_event *ev, int n, long *res, int *seen)
{
	for (int e = 0; e < n; e++) {
		long i = (struct iocb *)ev[e].obj - m->cb;

		cr_assert(i >= 0 && i < NMIX, "event %d: obj %p", e, (void *)ev[e].obj);
		cr_assert_eq(seen[i], 0, "iocb %ld: two events", i);
		cr_assert_eq((uintptr_t)ev[e].data, 0x2000 + (uintptr_t)i);
		cr_assert_eq((long)ev[e].res2, 0);
		seen[i] = 1;
		res[i] = (long)ev[e].res;
	}
}

/* libc's syscall(): the kernel's io_* even where the drop-in exports its
 * own syscall() in front of it. */
typedef long (*syscall_fn)(long, ...);

static syscall_fn libc_syscall(void)
{
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	Dl_info info;

	cr_assert_not_null(libc, "dlopen libc.so.6: %s", dlerror());
	syscall_fn fn = (syscall_fn)dlsym(libc, "syscall");
	cr_assert_not_null(fn);
	cr_assert(dladdr((void *)fn, &info) && info.dli_fname && strstr(info.dli_fname, "libc"),
		  "syscall comes from %s", info.dli_fname ? info.dli_fname : "?");
	dlclose(libc);
	return fn;
}

/* The call on the kernel's own AIO: res[] by iocb. */
static void kernel_run(struct mix *m, long *res)
{
	syscall_fn ks = libc_syscall();
	unsigned long id = 0;      /* the kernel's aio_context_t */
	struct io_event ev[NMIX];
	int seen[NMIX] = { 0 }, got = 0;

	cr_assert_eq(ks(SYS_io_setup, 128L, &id), 0, "io_setup: %s", strerror(errno));
	cr_assert_eq(ks(SYS_io_submit, (long)id, (long)NMIX, m->list), NMIX);
	while (got < NMIX) {
		struct timespec ts = { T_WAIT_SEC, 0 };
		long r = ks(SYS_io_getevents, (long)id, 1L, (long)(NMIX - got), ev, &ts);

		cr_assert_gt(r, 0, "kernel io_getevents: %ld", r);
		mix_collect(m, ev, (int)r, res, seen);
		got += (int)r;
	}
	cr_assert_eq(ks(SYS_io_destroy, (long)id), 0);
}

Test(batch, mixed_call_as_the_kernel)
{
	struct mix *m = calloc(1, sizeof(*m));
	io_context_t ctx = t_ctx(128);
	struct io_event ev[NMIX + 1];
	struct timespec zero = { 0, 0 };
	long res[NMIX], kres[NMIX];
	int seen[NMIX] = { 0 };

	cr_assert_not_null(m);
	m->size[HOTF] = 1 << 20;
	m->size[EOFF] = 10000;
	m->size[COLDF] = 4 << 20;
	m->seed[HOTF] = 33;
	m->seed[EOFF] = 34;
	m->seed[COLDF] = 35;
	for (int f = 0; f < NF; f++)
		m->fd[f] = t_file(m->size[f], m->seed[f]);
	pin(m->fd[HOTF], m->size[HOTF]);
	pin(m->fd[EOFF], m->size[EOFF]);
	m->none = mmap(NULL, PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(m->none, MAP_FAILED);

	/* Through the library under test (the kernel's or the drop-in's). */
	mix_reset(m);
	mix_prep(m);
	T_EXPECT(io_submit(ctx, NMIX, m->list), NMIX);
	int now = T_CALL(io_getevents(ctx, 0, NMIX + 1, ev, &zero));
	cr_assert_geq(now, 0);
	mix_collect(m, ev, now, res, seen);
	/* What the page cache held, and what needed no I/O, is done when
	 * io_submit returns. */
	for (int i = 0; i < NMIX; i++)
		cr_assert(seen[i] || m->cold[i], "iocb %d (not cold) not done when io_submit returned", i);
	while (now < NMIX) {
		struct io_event more[NMIX];
		int r = T_CALL(io_getevents(ctx, 1, NMIX - now, more, NULL));

		cr_assert_gt(r, 0);
		mix_collect(m, more, r, res, seen);
		now += r;
	}
	T_EXPECT(io_getevents(ctx, 0, 1, ev, &zero), 0);
	mix_check(m, res, t_mode());
	mix_free(m);

	/* The same call on the kernel's AIO, from the same state. */
	mix_reset(m);
	mix_prep(m);
	kernel_run(m, kres);
	mix_check(m, kres, "kernel");
	for (int i = 0; i < NMIX; i++)
		cr_assert_eq(res[i], kres[i], "iocb %d: %s res %ld, the kernel's %ld", i, t_mode(),
			     res[i], kres[i]);
	mix_free(m);

	T_EXPECT(io_destroy(ctx), 0);
	munmap(m->none, PAGE);
	for (int f = 0; f < NF; f++)
		close(m->fd[f]);
	free(m);
}

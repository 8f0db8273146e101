/* SPDX-License-Identifier: MIT */
/*
 * fuzz_diff: the libaio drop-in against the kernel's AIO, on random iocbs.
 *
 *   fuzz_diff SHIM.so [--seed N] [--iterations N] [--long SECONDS] [-v]
 *
 * Two child processes run the same scenarios: one on the kernel's io_*
 * system calls, the other on the drop-in's io_* functions (dlopen of
 * SHIM.so). A scenario is a seeded batch of 1-6 iocbs over a fixed set of
 * files (regular files in several modes, O_PATH, a directory, pipes, a
 * socket, an eventfd, a memfd, a timerfd, /dev/null, O_DIRECT, closed and
 * negative fd numbers), with random opcodes, flags, reserved fields,
 * offsets, lengths, iovec counts, RESFD and buffers (good, unaligned, NULL,
 * unmapped, beyond the user address range). Each child reports io_submit's
 * result, every iocb's aio_key, the events (res, res2, data), a hash of its
 * buffers and of its files; the parent compares them and prints the seed
 * and the iocbs of any scenario where they differ. Exit 0 when nothing
 * differed, 1 otherwise, 2 on bad usage.
 *
 * Buffers live at different addresses in the two children: iocbs name
 * them by class and offset, and each child builds its own. The contexts
 * are recreated every CTX_EVERY scenarios so that fd numbers are reused
 * under a live context.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/aio_abi.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_CBS 6
#define ARENA (256 * 1024)
/* The iovec arrays are built in the arena's first IOV_AREA bytes, buffers
 * start after them: a read that runs on (a clamped length, say) runs into
 * the guard page, never into the vectors of a later iocb of the same call. */
#define IOV_AREA 16384
#define FILE_SIZE 65536
#define CTX_EVERY 64

enum fdk {
	FD_RDWR, FD_RDONLY, FD_APPEND, FD_PATH, FD_DIR, FD_PIPE_R, FD_PIPE_W, FD_SOCK,
	FD_EVENTFD, FD_MEMFD, FD_NULL, FD_DSYNC, FD_CLOSED, FD_NEG, FD_TIMERFD, FD_DIRECT,
	FD_N
};
static const char *const fd_names[FD_N] = {
	"rdwr", "rdonly", "append", "o_path", "dir", "pipe_r", "pipe_w", "sock",
	"eventfd", "memfd", "null", "dsync", "closed", "neg", "timerfd", "direct",
};

enum bufk { B_ARENA, B_NULL, B_MINUS1, B_KERNEL, B_4LVL, B_GUARD, B_N };
static const char *const buf_names[B_N] = { "arena", "null", "-1", "kernel", "2^47", "guard" };

/* One iocb as the parent describes it; each child turns it into a real one. */
struct d_iocb {
	uint16_t opcode;
	int16_t reqprio;
	uint8_t fd, resfd;      /* enum fdk */
	uint8_t buf;            /* enum bufk, for aio_buf (or the iovec array) */
	uint8_t niov;           /* iovecs built for a vectored op */
	uint32_t aio_flags;
	int32_t rw_flags;
	uint32_t reserved2;
	uint32_t buf_off;       /* into the arena */
	uint64_t nbytes;
	int64_t offset;
	uint64_t data;
	struct { uint8_t buf; uint32_t off; uint64_t len; } iov[8];
};

struct scenario {
	uint64_t seed;
	uint32_t n;             /* iocbs described */
	int32_t nr;             /* io_submit's nr */
	uint8_t null_at;        /* nr entries: a NULL iocb pointer at this index, or 0xff */
	uint8_t new_ctx;
	struct d_iocb cb[MAX_CBS];
};

struct result {
	int32_t crashed;
	int32_t setup;
	int32_t submit;
	int32_t nev;
	uint32_t key[MAX_CBS];
	struct { int32_t idx; int64_t res, res2; uint64_t data; } ev[MAX_CBS];
	int32_t pending;        /* accepted requests with no event (polls that wait) */
	uint64_t arena_hash, file_hash;
};

/* ---------------------------------------------------------------- rng */

static uint64_t rng_state;

static uint64_t rnd(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t below(uint64_t n)
{
	return n ? rnd() % n : 0;
}

static bool chance(unsigned pct)
{
	return below(100) < pct;
}

static uint64_t pick_len(void)
{
	static const uint64_t lens[] = { 0, 1, 7, 8, 100, 512, 4096, 4097, 8192, 65536,
					 1ull << 62, (uint64_t)-1, 0x7ffff000, 0x80000000ull };

	if (chance(40))
		return below(9000);
	return lens[below(sizeof(lens) / sizeof(lens[0]))];
}

static int64_t pick_offset(void)
{
	static const int64_t offs[] = { 0, 0, 0, 1, 512, 4096, FILE_SIZE - 1, FILE_SIZE,
					FILE_SIZE + 4096, -1, -4096, INT64_MAX, INT64_MAX - 100,
					1ll << 40 };

	if (chance(40))
		return (int64_t)below(FILE_SIZE + 8192);
	return offs[below(sizeof(offs) / sizeof(offs[0]))];
}

static uint8_t pick_fd(void)
{
	/* The regular file most often. */
	return chance(35) ? FD_RDWR : (uint8_t)below(FD_N);
}

static uint8_t pick_buf(void)
{
	return chance(85) ? B_ARENA : (uint8_t)(1 + below(B_N - 1));
}

static void gen(struct scenario *s, uint64_t seed, bool new_ctx)
{
	static const uint16_t ops[] = { 0, 1, 2, 3, 5, 7, 8 };

	memset(s, 0, sizeof(*s));
	rng_state = seed;
	s->seed = seed;
	s->new_ctx = new_ctx;
	s->n = 1 + (uint32_t)below(MAX_CBS);
	s->nr = (int32_t)s->n;
	s->null_at = 0xff;
	if (chance(3))
		s->nr = chance(50) ? -1 : 0;
	else if (chance(3))
		s->null_at = (uint8_t)below(s->n);
	for (uint32_t i = 0; i < s->n; i++) {
		struct d_iocb *d = &s->cb[i];

		d->opcode = chance(94) ? ops[below(7)] : (uint16_t)(chance(50) ? below(16) : rnd());
		d->fd = pick_fd();
		d->buf = pick_buf();
		d->buf_off = IOV_AREA + (uint32_t)(chance(50) ? below((ARENA - IOV_AREA) / 4096) * 4096 :
						    below(ARENA - IOV_AREA));
		d->nbytes = pick_len();
		d->offset = pick_offset();
		d->data = rnd();
		if (d->opcode == IOCB_CMD_PREADV || d->opcode == IOCB_CMD_PWRITEV) {
			d->niov = (uint8_t)below(9);
			d->nbytes = chance(90) ? d->niov : pick_len();
			for (unsigned k = 0; k < 8; k++) {
				d->iov[k].buf = chance(92) ? B_ARENA : pick_buf();
				d->iov[k].off = IOV_AREA + (uint32_t)below(ARENA - IOV_AREA);
				d->iov[k].len = chance(85) ? below(9000) : pick_len();
			}
		}
		if (d->opcode == IOCB_CMD_FSYNC || d->opcode == IOCB_CMD_FDSYNC ||
		    d->opcode == IOCB_CMD_POLL) {
			/* Mostly well-formed: the fields must be zero. */
			if (chance(80)) {
				d->buf = B_NULL;
				d->nbytes = 0;
				d->offset = 0;
			}
			if (d->opcode == IOCB_CMD_POLL && chance(80)) {
				static const uint16_t ev[] = { POLLIN, POLLOUT, POLLPRI, POLLIN | POLLOUT,
							       0, POLLRDNORM, POLLIN | POLLPRI };

				d->buf = B_ARENA;       /* aio_buf carries the events */
				d->buf_off = ev[below(7)];
			}
		}
		if (chance(25)) {
			static const int32_t fl[] = { 0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x30, 0x40,
						      0x80, 0x100, 0x200, 0x08 | 0x02, 0x1000000 };

			d->rw_flags = fl[below(sizeof(fl) / sizeof(fl[0]))];
		}
		if (chance(2))
			d->reserved2 = (uint32_t)rnd() | 1;
		if (chance(15))
			d->aio_flags |= IOCB_FLAG_RESFD;
		d->resfd = chance(80) ? FD_EVENTFD : (uint8_t)below(FD_N);
		if (chance(8)) {
			static const int16_t pr[] = { 2 << 13 | 4, 3 << 13, 0 << 13 | 1, (int16_t)(5 << 13), -1,
						      1 << 13 };

			d->aio_flags |= IOCB_FLAG_IOPRIO;
			d->reqprio = pr[below(6)];
		}
		if (chance(3))
			d->aio_flags |= (uint32_t)rnd() & ~3u;
	}
}

/* ------------------------------------------------------------- the child */

struct aio_ops {
	long (*setup)(unsigned nr, aio_context_t *ctx);
	long (*destroy)(aio_context_t ctx);
	long (*submit)(aio_context_t ctx, long nr, struct iocb **ios);
	long (*getevents)(aio_context_t ctx, long min_nr, long nr, struct io_event *ev,
			  struct timespec *ts);
};

static long k_setup(unsigned nr, aio_context_t *ctx)
{
	return syscall(SYS_io_setup, nr, ctx) < 0 ? -errno : 0;
}

static long k_destroy(aio_context_t ctx)
{
	return syscall(SYS_io_destroy, ctx) < 0 ? -errno : 0;
}

static long k_submit(aio_context_t ctx, long nr, struct iocb **ios)
{
	long r = syscall(SYS_io_submit, ctx, nr, ios);

	return r < 0 ? -errno : r;
}

static long k_getevents(aio_context_t ctx, long min_nr, long nr, struct io_event *ev,
			struct timespec *ts)
{
	long r = syscall(SYS_io_getevents, ctx, min_nr, nr, ev, ts);

	return r < 0 ? -errno : r;
}

/* The drop-in's io_* functions: libaio's signatures, io_context_t for the
 * context (the ring's address, as the kernel's aio_context_t is). */
static int (*s_setup)(int, void **);
static int (*s_destroy)(void *);
static int (*s_submit)(void *, long, struct iocb **);
static int (*s_getevents)(void *, long, long, struct io_event *, struct timespec *);

static long sh_setup(unsigned nr, aio_context_t *ctx)
{
	void *c = NULL;
	int r = s_setup((int)nr, &c);

	*ctx = (aio_context_t)(uintptr_t)c;
	return r;
}

static long sh_destroy(aio_context_t ctx)
{
	return s_destroy((void *)(uintptr_t)ctx);
}

static long sh_submit(aio_context_t ctx, long nr, struct iocb **ios)
{
	return s_submit((void *)(uintptr_t)ctx, nr, ios);
}

static long sh_getevents(aio_context_t ctx, long min_nr, long nr, struct io_event *ev,
			 struct timespec *ts)
{
	return s_getevents((void *)(uintptr_t)ctx, min_nr, nr, ev, ts);
}

struct child {
	struct aio_ops ops;
	char dir[4300];
	uint8_t *arena;         /* ARENA bytes, then a PROT_NONE guard page */
	int fds[FD_N];
	int peer[2];            /* the pipe's and the socket's other ends */
	aio_context_t ctx;
};

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

static void fill_file(int fd, size_t n)
{
	static uint8_t pat[FILE_SIZE];

	for (size_t i = 0; i < sizeof(pat); i++)
		pat[i] = (uint8_t)(i * 7 + (i >> 8));
	if (ftruncate(fd, 0) < 0 || pwrite(fd, pat, n, 0) != (ssize_t)n) {
		perror("fuzz_diff: fill");
		exit(3);
	}
}

static int must(int fd, const char *what)
{
	if (fd < 0) {
		fprintf(stderr, "fuzz_diff: %s: %s\n", what, strerror(errno));
		exit(3);
	}
	return fd;
}

static void close_fds(struct child *c)
{
	for (int i = 0; i < FD_N; i++)
		if (c->fds[i] >= 0 && i != FD_CLOSED && i != FD_NEG)
			close(c->fds[i]);
	if (c->peer[0] >= 0)
		close(c->peer[0]);
	if (c->peer[1] >= 0)
		close(c->peer[1]);
}

/* Every scenario starts from the same files, in the same states. */
static void open_fds(struct child *c)
{
	char path[4400];
	int p[2], sv[2], fd;
	uint64_t three = 3;

	snprintf(path, sizeof(path), "%s/f", c->dir);
	c->fds[FD_RDWR] = must(open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600), path);
	fill_file(c->fds[FD_RDWR], FILE_SIZE);
	c->fds[FD_RDONLY] = must(open(path, O_RDONLY | O_CLOEXEC), path);
	c->fds[FD_PATH] = must(open(path, O_PATH | O_CLOEXEC), path);
	c->fds[FD_DSYNC] = must(open(path, O_RDWR | O_DSYNC | O_CLOEXEC), path);
	/* O_DIRECT requests are asynchronous on the kernel too: on a file of
	 * their own, so that their timing cannot change what the buffered
	 * requests of the same call read. */
	snprintf(path, sizeof(path), "%s/d", c->dir);
	fd = must(open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600), path);
	fill_file(fd, FILE_SIZE);
	close(fd);
	c->fds[FD_DIRECT] = open(path, O_RDWR | O_DIRECT | O_CLOEXEC);
	if (c->fds[FD_DIRECT] < 0)
		c->fds[FD_DIRECT] = must(open(path, O_RDWR | O_CLOEXEC), path);
	snprintf(path, sizeof(path), "%s/a", c->dir);
	fd = must(open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600), path);
	fill_file(fd, 5000);
	close(fd);
	c->fds[FD_APPEND] = must(open(path, O_WRONLY | O_APPEND | O_CLOEXEC), path);
	c->fds[FD_DIR] = must(open(c->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), c->dir);
	must(pipe2(p, O_NONBLOCK | O_CLOEXEC), "pipe");
	c->fds[FD_PIPE_R] = p[0];
	c->peer[0] = p[1];
	if (write(p[1], c->arena + ARENA - 100, 100) != 100)
		exit(3);
	must(pipe2(p, O_NONBLOCK | O_CLOEXEC), "pipe");
	c->fds[FD_PIPE_W] = p[1];
	c->peer[1] = p[0];
	must(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), "socketpair");
	c->fds[FD_SOCK] = sv[0];
	if (write(sv[1], c->arena + ARENA - 100, 100) != 100)
		exit(3);
	/* Reads see the 100 bytes, then end of file. */
	close(sv[1]);
	c->fds[FD_EVENTFD] = must(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC), "eventfd");
	if (write(c->fds[FD_EVENTFD], &three, sizeof(three)) != 8)
		exit(3);
	c->fds[FD_MEMFD] = must(memfd_create("fuzz", MFD_CLOEXEC), "memfd");
	fill_file(c->fds[FD_MEMFD], 8192);
	c->fds[FD_NULL] = must(open("/dev/null", O_RDWR | O_CLOEXEC), "/dev/null");
	c->fds[FD_CLOSED] = 1000;
	c->fds[FD_NEG] = -1;
	c->fds[FD_TIMERFD] = must(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC),
				  "timerfd");
}

static void *buf_addr(struct child *c, uint8_t kind, uint32_t off)
{
	switch (kind) {
	case B_ARENA: return c->arena + (off % ARENA);
	case B_NULL: return NULL;
	case B_MINUS1: return (void *)-1;
	case B_KERNEL: return (void *)(uintptr_t)0xffffffff81000000ull;
	case B_4LVL: return (void *)(uintptr_t)0x800000000000ull;
	default: return c->arena + ARENA;   /* the guard page */
	}
}

static void run(struct child *c, const struct scenario *s, struct result *r)
{
	struct iocb cbs[MAX_CBS], *list[MAX_CBS + 1];
	struct io_event ev[MAX_CBS];
	struct iovec *iovs = (struct iovec *)c->arena;
	long got = 0, want;

	memset(r, 0, sizeof(*r));
	for (int i = 0; i < MAX_CBS; i++)
		r->ev[i].idx = -1;
	for (uint32_t i = 0; i < ARENA; i++)
		c->arena[i] = (uint8_t)(i * 13 + (i >> 9));
	if (s->new_ctx || !c->ctx) {
		if (c->ctx)
			c->ops.destroy(c->ctx);
		c->ctx = 0;
		r->setup = (int32_t)c->ops.setup(64, &c->ctx);
		if (r->setup)
			return;
	}
	close_fds(c);
	open_fds(c);
	for (uint32_t i = 0; i < s->n; i++) {
		const struct d_iocb *d = &s->cb[i];
		struct iocb *cb = &cbs[i];

		memset(cb, 0, sizeof(*cb));
		cb->aio_data = d->data;
		cb->aio_key = 0x5a5a;
		cb->aio_lio_opcode = d->opcode;
		cb->aio_reqprio = d->reqprio;
		cb->aio_fildes = (uint32_t)c->fds[d->fd];
		cb->aio_nbytes = d->nbytes;
		cb->aio_offset = d->offset;
		cb->aio_flags = d->aio_flags;
		cb->aio_resfd = (uint32_t)c->fds[d->resfd];
		cb->aio_rw_flags = d->rw_flags;
		cb->aio_reserved2 = d->reserved2;
		if (d->opcode == IOCB_CMD_PREADV || d->opcode == IOCB_CMD_PWRITEV) {
			struct iovec *v = iovs + i * 8;

			for (unsigned k = 0; k < 8; k++)
				v[k] = (struct iovec){ buf_addr(c, d->iov[k].buf, d->iov[k].off),
						       d->iov[k].len };
			cb->aio_buf = d->buf == B_ARENA ? (uint64_t)(uintptr_t)v :
				      (uint64_t)(uintptr_t)buf_addr(c, d->buf, 0);
		} else if (d->opcode == IOCB_CMD_POLL && d->buf == B_ARENA) {
			cb->aio_buf = d->buf_off;
		} else {
			cb->aio_buf = (uint64_t)(uintptr_t)buf_addr(c, d->buf, d->buf_off);
		}
		list[i] = cb;
	}
	if (s->null_at < s->n)
		list[s->null_at] = NULL;
	r->submit = (int32_t)c->ops.submit(c->ctx, s->nr, list);
	for (uint32_t i = 0; i < s->n; i++)
		r->key[i] = cbs[i].aio_key;
	want = r->submit > 0 ? r->submit : 0;
	/* What is not a poll completes; a poll may wait for good. */
	while (got < want) {
		struct timespec ts = { 0, 200 * 1000 * 1000 };
		long n;
		bool only_polls = true;

		for (long i = 0; i < want; i++) {
			bool seen = false;

			for (long k = 0; k < got; k++)
				seen |= ev[k].obj == (uint64_t)(uintptr_t)list[i];
			if (!seen && list[i] && list[i]->aio_lio_opcode != IOCB_CMD_POLL)
				only_polls = false;
		}
		if (!only_polls)
			ts.tv_sec = 20;
		n = c->ops.getevents(c->ctx, 1, want - got, ev + got, &ts);
		if (n <= 0)
			break;
		got += n;
	}
	r->nev = (int32_t)got;
	r->pending = (int32_t)(want - got);
	for (long k = 0; k < got; k++) {
		int idx = -1;

		for (uint32_t i = 0; i < s->n; i++)
			if (ev[k].obj == (uint64_t)(uintptr_t)&cbs[i])
				idx = (int)i;
		/* In iocb order, whatever order they came in. */
		if (idx >= 0) {
			r->ev[idx].idx = idx;
			r->ev[idx].res = ev[k].res;
			r->ev[idx].res2 = ev[k].res2;
			r->ev[idx].data = ev[k].data;
		}
	}
	if (r->pending) {
		/* Polls still waiting: a new context for the next scenario
		 * (destroy cancels them on both). */
		c->ops.destroy(c->ctx);
		c->ctx = 0;
	}
	r->arena_hash = fnv(0xcbf29ce484222325ull, c->arena + IOV_AREA, ARENA - IOV_AREA);
	if (getenv("FUZZ_DIFF_DUMP")) {
		/* For a look at one scenario's buffers: DIR/arena next to the files. */
		char path[4400];
		int fd;

		snprintf(path, sizeof(path), "%s/arena", c->dir);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fd >= 0 && write(fd, c->arena, ARENA) != ARENA)
			perror("fuzz_diff: dump");
		if (fd >= 0)
			close(fd);
	}
	{
		static uint8_t fb[FILE_SIZE + 16384];
		ssize_t n = pread(c->fds[FD_RDWR], fb, sizeof(fb), 0);
		uint64_t h = fnv(0xcbf29ce484222325ull, fb, n > 0 ? (size_t)n : 0);
		char path[4400];
		int fd;

		snprintf(path, sizeof(path), "%s/a", c->dir);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		n = pread(fd, fb, sizeof(fb), 0);
		h = fnv(h, fb, n > 0 ? (size_t)n : 0);
		close(fd);
		n = pread(c->fds[FD_MEMFD], fb, sizeof(fb), 0);
		r->file_hash = fnv(h, fb, n > 0 ? (size_t)n : 0);
	}
}

/* All n bytes of p through fd, read (out false) or written, across short
 * transfers and EINTR: 0, or -1 on an error or end of file. */
static int transfer(int fd, void *p, size_t n, bool out)
{
	uint8_t *b = p;

	while (n) {
		ssize_t k = out ? write(fd, b, n) : read(fd, b, n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		b += k;
		n -= (size_t)k;
	}
	return 0;
}

static int readn(int fd, void *p, size_t n)
{
	return transfer(fd, p, n, false);
}

static int writen(int fd, const void *p, size_t n)
{
	return transfer(fd, (void *)p, n, true);
}

static void child_main(const char *shim, const char *dir, int in, int out)
{
	struct child c;
	struct scenario s;
	struct result r;

	memset(&c, 0, sizeof(c));
	signal(SIGPIPE, SIG_IGN);
	signal(SIGXFSZ, SIG_IGN);
	snprintf(c.dir, sizeof(c.dir), "%s", dir);
	if (mkdir(c.dir, 0700) < 0 && errno != EEXIST)
		exit(3);
	c.arena = mmap(NULL, ARENA + 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);
	if (c.arena == MAP_FAILED || mprotect(c.arena + ARENA, 4096, PROT_NONE) < 0)
		exit(3);
	for (int i = 0; i < FD_N; i++)
		c.fds[i] = -1;
	c.peer[0] = c.peer[1] = -1;
	if (shim) {
		void *h = dlopen(shim, RTLD_NOW | RTLD_LOCAL);

		if (!h) {
			fprintf(stderr, "fuzz_diff: %s\n", dlerror());
			exit(3);
		}
		s_setup = (int (*)(int, void **))dlsym(h, "io_setup");
		s_destroy = (int (*)(void *))dlsym(h, "io_destroy");
		s_submit = (int (*)(void *, long, struct iocb **))dlsym(h, "io_submit");
		s_getevents = (int (*)(void *, long, long, struct io_event *, struct timespec *))
			dlvsym(h, "io_getevents", "LIBAIO_0.4");
		if (!s_setup || !s_destroy || !s_submit || !s_getevents)
			exit(3);
		c.ops = (struct aio_ops){ sh_setup, sh_destroy, sh_submit, sh_getevents };
	} else {
		c.ops = (struct aio_ops){ k_setup, k_destroy, k_submit, k_getevents };
	}
	while (readn(in, &s, sizeof(s)) == 0) {
		run(&c, &s, &r);
		if (writen(out, &r, sizeof(r)) < 0)
			break;
	}
	close_fds(&c);
	exit(0);
}

/* ------------------------------------------------------------- the parent */

struct worker {
	pid_t pid;
	int to, from;
};

static const char *g_shim;
static char g_base[4000];

static void spawn(struct worker *w, bool shim)
{
	int a[2], b[2];
	char dir[4200];

	if (pipe2(a, O_CLOEXEC) < 0 || pipe2(b, O_CLOEXEC) < 0)
		exit(3);
	snprintf(dir, sizeof(dir), "%s/%s", g_base, shim ? "shim" : "kernel");
	w->pid = fork();
	if (w->pid < 0)
		exit(3);
	if (w->pid == 0) {
		close(a[1]);
		close(b[0]);
		child_main(shim ? g_shim : NULL, dir, a[0], b[1]);
	}
	close(a[0]);
	close(b[1]);
	w->to = a[1];
	w->from = b[0];
}

static void reap_worker(struct worker *w)
{
	close(w->to);
	close(w->from);
	kill(w->pid, SIGKILL);
	waitpid(w->pid, NULL, 0);
}

/* Send a scenario and read the result; a crash is a result too. */
static void ask(struct worker *w, bool shim, const struct scenario *s, struct result *r)
{
	if (writen(w->to, s, sizeof(*s)) < 0 || readn(w->from, r, sizeof(*r)) < 0) {
		memset(r, 0, sizeof(*r));
		r->crashed = 1;
		reap_worker(w);
		spawn(w, shim);
	}
}

static void print_scenario(const struct scenario *s)
{
	printf("  seed %" PRIu64 ": io_submit(ctx, %d, list)%s\n", s->seed, s->nr,
	       s->null_at < s->n ? " with a NULL entry" : "");
	if (s->null_at < s->n)
		printf("    NULL at %u\n", s->null_at);
	for (uint32_t i = 0; i < s->n; i++) {
		const struct d_iocb *d = &s->cb[i];

		printf("    [%u] op %u fd %s buf %s+%u nbytes %#" PRIx64 " offset %" PRId64
		       " rw_flags %#x aio_flags %#x resfd %s reqprio %d reserved2 %#x",
		       i, d->opcode, fd_names[d->fd], buf_names[d->buf], d->buf_off, d->nbytes,
		       d->offset, (unsigned)d->rw_flags, d->aio_flags, fd_names[d->resfd],
		       d->reqprio, d->reserved2);
		if (d->opcode == IOCB_CMD_PREADV || d->opcode == IOCB_CMD_PWRITEV) {
			printf(" iov");
			for (unsigned k = 0; k < 8 && k < d->nbytes; k++)
				printf(" {%s+%u,%#" PRIx64 "}", buf_names[d->iov[k].buf],
				       d->iov[k].off, d->iov[k].len);
		}
		printf("\n");
	}
}

static void print_result(const char *who, const struct result *r, uint32_t n)
{
	printf("  %-6s crashed %d setup %d submit %d events %d pending %d arena %016" PRIx64
	       " files %016" PRIx64 "\n", who, r->crashed, r->setup, r->submit, r->nev,
	       r->pending, r->arena_hash, r->file_hash);
	for (uint32_t i = 0; i < n; i++)
		printf("         [%u] key %#x event %s res %" PRId64 " res2 %" PRId64 "\n", i,
		       r->key[i], r->ev[i].idx >= 0 ? "yes" : "no", r->ev[i].res, r->ev[i].res2);
}

/* The differences dropin/libaio/README.md lists, which a scenario may meet by
 * chance: reported as known, not as mismatches. Reads into overlapping
 * buffers, an eventfd read racing an fsync's signal (above). A zero-length
 * write with
 * RWF_NOWAIT to an ext4 file: the kernel's AIO calls the filesystem, which
 * refuses NOWAIT buffered writes (-EOPNOTSUPP in the event); no system call
 * can ask that without writing, and the drop-in completes it with 0. */
static bool same(const struct result *a, const struct result *b, uint32_t n);

/* Does any arena range a read may fill overlap another read's, or the
 * source of a write? Then the bytes there (and what the write puts in the
 * file) depend on the order the requests run in, which the kernel fixes (it
 * reads in io_submit, one iocb after the other) and the drop-in does not (a
 * read that misses the cache finishes later, on a worker). */
static bool overlapping_reads(const struct scenario *s)
{
	uint64_t lo[MAX_CBS * 8], hi[MAX_CBS * 8];
	bool rd[MAX_CBS * 8];
	unsigned n = 0;

	for (uint32_t i = 0; i < s->n; i++) {
		const struct d_iocb *d = &s->cb[i];
		bool read = d->opcode == IOCB_CMD_PREAD || d->opcode == IOCB_CMD_PREADV;

		if ((d->opcode == IOCB_CMD_PREAD || d->opcode == IOCB_CMD_PWRITE) &&
		    d->buf == B_ARENA) {
			rd[n] = read;
			lo[n] = d->buf_off;
			hi[n++] = d->buf_off + (d->nbytes < ARENA ? d->nbytes : ARENA);
		} else if (d->opcode == IOCB_CMD_PREADV || d->opcode == IOCB_CMD_PWRITEV) {
			for (unsigned k = 0; k < 8 && k < (uint32_t)d->nbytes; k++) {
				if (d->iov[k].buf != B_ARENA)
					continue;
				rd[n] = read;
				lo[n] = d->iov[k].off;
				hi[n++] = d->iov[k].off + (d->iov[k].len < ARENA ? d->iov[k].len : ARENA);
			}
		}
	}
	for (unsigned i = 0; i < n; i++)
		for (unsigned j = i + 1; j < n; j++)
			if ((rd[i] || rd[j]) && lo[i] < hi[j] && lo[j] < hi[i])
				return true;
	return false;
}

static bool eventfd_race(const struct scenario *s)
{
	bool signalling_sync = false;

	for (uint32_t i = 0; i < s->n; i++) {
		const struct d_iocb *d = &s->cb[i];

		if ((d->opcode == IOCB_CMD_FSYNC || d->opcode == IOCB_CMD_FDSYNC) &&
		    (d->aio_flags & IOCB_FLAG_RESFD) && d->resfd == FD_EVENTFD)
			signalling_sync = true;
		if (signalling_sync && d->fd == FD_EVENTFD &&
		    (d->opcode == IOCB_CMD_PREAD || d->opcode == IOCB_CMD_PREADV))
			return true;
	}
	return false;
}

static bool known_difference(const struct scenario *s, const struct result *a,
			     const struct result *b)
{
	struct result x = *a;

	/* Everything but the buffers agrees, and the reads overlap, or the
	 * eventfd is read while an fsync that signals it may still run (on
	 * the kernel too: its fsync is done by a work queue). */
	x.arena_hash = b->arena_hash;
	if (eventfd_race(s) && same(&x, b, s->n))
		return true;
	x.file_hash = b->file_hash;
	if (overlapping_reads(s) && same(&x, b, s->n))
		return true;
	for (uint32_t i = 0; i < s->n; i++) {
		const struct d_iocb *d = &s->cb[i];
		bool file = d->fd == FD_RDWR || d->fd == FD_APPEND || d->fd == FD_DSYNC;
		uint64_t total = d->nbytes;

		if (d->opcode == IOCB_CMD_PWRITEV) {
			/* The kernel takes the count as unsigned int. */
			uint32_t segs = (uint32_t)d->nbytes;

			total = 0;
			for (unsigned k = 0; k < segs && k < 8; k++)
				total |= d->iov[k].len;
			if (segs > 8)
				total = 1;
		}
		if (file && (d->rw_flags & 0x08) && !total &&
		    (d->opcode == IOCB_CMD_PWRITE || d->opcode == IOCB_CMD_PWRITEV))
			return true;
	}
	return false;
}

static bool same(const struct result *a, const struct result *b, uint32_t n)
{
	if (a->crashed || b->crashed || a->setup != b->setup || a->submit != b->submit ||
	    a->nev != b->nev || a->pending != b->pending || a->arena_hash != b->arena_hash ||
	    a->file_hash != b->file_hash)
		return false;
	for (uint32_t i = 0; i < n; i++) {
		if (a->key[i] != b->key[i] || a->ev[i].idx != b->ev[i].idx)
			return false;
		if (a->ev[i].idx >= 0 && (a->ev[i].res != b->ev[i].res ||
					  a->ev[i].res2 != b->ev[i].res2 ||
					  a->ev[i].data != b->ev[i].data))
			return false;
	}
	return true;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: fuzz_diff SHIM.so [--seed N] [--iterations N] [--long SECONDS] "
		"[--dir DIR] [-v]\n");
}

int main(int argc, char **argv)
{
	uint64_t seed = 1, iters = 2000, done = 0, bad = 0, known = 0;
	double secs = 0;
	bool verbose = false, fresh = true;
	const char *dir = getenv("FSAIO_TEST_BUILDDIR");
	struct worker wk, ws;
	struct timespec t0, t1;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seed") && i + 1 < argc)
			seed = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--iterations") && i + 1 < argc)
			iters = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--long") && i + 1 < argc)
			secs = strtod(argv[++i], NULL);
		else if (!strcmp(argv[i], "--dir") && i + 1 < argc)
			dir = argv[++i];
		else if (!strcmp(argv[i], "-v"))
			verbose = true;
		else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		} else if (!g_shim && argv[i][0] != '-')
			g_shim = argv[i];
		else {
			usage(stderr);
			return 2;
		}
	}
	if (!g_shim) {
		usage(stderr);
		return 2;
	}
	snprintf(g_base, sizeof(g_base), "%s/fuzz-diff-XXXXXX", dir ? dir : ".");
	if (!mkdtemp(g_base)) {
		perror("fuzz_diff: mkdtemp");
		return 3;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	spawn(&wk, false);
	spawn(&ws, true);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct scenario s;
		struct result rk, rs;

		if (secs > 0) {
			clock_gettime(CLOCK_MONOTONIC, &t1);
			if ((double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9 >= secs)
				break;
		} else if (done >= iters) {
			break;
		}
		if (secs > 0 && done && done % 5000 == 0)
			printf("fuzz_diff: %" PRIu64 " scenarios, %" PRIu64 " mismatches, %" PRIu64
			       " known differences so far\n", done, bad, known);
		gen(&s, seed + done, fresh || done % CTX_EVERY == 0);
		fresh = false;
		ask(&wk, false, &s, &rk);
		ask(&ws, true, &s, &rs);
		if (!same(&rk, &rs, s.n) && known_difference(&s, &rk, &rs)) {
			known++;
			fresh = true;
			if (verbose)
				printf("known difference, seed %" PRIu64 "\n", s.seed);
		} else if (!same(&rk, &rs, s.n)) {
			bad++;
			printf("MISMATCH seed %" PRIu64 "\n", s.seed);
			print_scenario(&s);
			print_result("kernel", &rk, s.n);
			print_result("shim", &rs, s.n);
			/* Both start the next scenario on new contexts: it is
			 * judged on its own. */
			fresh = true;
		} else if (verbose) {
			printf("ok seed %" PRIu64 " submit %d\n", s.seed, rk.submit);
		}
		done++;
	}
	reap_worker(&wk);
	reap_worker(&ws);
	{
		char cmd[4200 + 32];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g_base);
		if (getenv("FUZZ_DIFF_DUMP"))
			printf("fuzz_diff: files kept in %s\n", g_base);
		else if (system(cmd) != 0)
			fprintf(stderr, "fuzz_diff: could not remove %s\n", g_base);
	}
	printf("fuzz_diff: %" PRIu64 " scenarios from seed %" PRIu64 ", %" PRIu64
	       " mismatches, %" PRIu64 " known differences\n", done, seed, bad, known);
	return bad ? 1 : 0;
}

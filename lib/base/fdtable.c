/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: what the engine has learnt about each fd.
 *
 * One 64-bit atomic word per fd: flags (FSAIO__FD_*) in the low 32 bits,
 * kind in the next 8, a file's device readahead limit (ra_kb1) in the top
 * 24. Words live in chunks of FDT_CHUNK that are allocated on first use
 * and published with a release store, so the submit path reads a fd's
 * facts with two acquire loads and no lock. Flag changes (NOWAIT refused,
 * probe next time) are atomic or/and on the word.
 *
 * The facts (fstat + fcntl F_GETFL, and for a buffered file its device's
 * readahead limit, devra.c) are taken once. An fd number can be
 * closed and reused for another file behind the engine's back, so callers
 * re-read them (fsaio__fd_refresh) whenever a cached fact leads to a
 * refusal or the kernel answers in a way the cached kind cannot explain.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "devra.h"
#include "fdtable.h"
#include "req.h"

#define FDT_CHUNK 1024
#define FDT_CHUNKS 1024

int fsaio__fdtable_init(struct fsaio__fdtable *t)
{
	pthread_mutex_init(&t->lock, NULL);
	return 0;
}

void fsaio__fdtable_forget(struct fsaio__fdtable *t)
{
	for (unsigned i = 0; i < FDT_CHUNKS; i++)
		free(atomic_load(&t->chunks[i]));
}

void fsaio__fdtable_fini(struct fsaio__fdtable *t)
{
	fsaio__fdtable_forget(t);
	pthread_mutex_destroy(&t->lock);
}

static _Atomic uint64_t *slot(struct fsaio__fdtable *t, int fd, bool create)
{
	unsigned ci = (unsigned)fd / FDT_CHUNK;
	_Atomic uint64_t *c;

	if (ci >= FDT_CHUNKS)
		return NULL;
	c = atomic_load_explicit(&t->chunks[ci], memory_order_acquire);
	if (c || !create)
		return c ? &c[(unsigned)fd % FDT_CHUNK] : NULL;
	pthread_mutex_lock(&t->lock);
	c = atomic_load_explicit(&t->chunks[ci], memory_order_acquire);
	if (!c) {
		c = calloc(FDT_CHUNK, sizeof(*c));
		if (c)
			atomic_store_explicit(&t->chunks[ci], c, memory_order_release);
	}
	pthread_mutex_unlock(&t->lock);
	return c ? &c[(unsigned)fd % FDT_CHUNK] : NULL;
}

static uint64_t pack(struct fsaio__fdinfo fi)
{
	return (uint64_t)(fi.kind | fi.ra_kb1 << 8) << 32 | fi.flags;
}

static struct fsaio__fdinfo unpack(uint64_t w)
{
	return (struct fsaio__fdinfo){ .flags = (uint32_t)w, .kind = (uint32_t)(w >> 32) & 0xff,
				       .ra_kb1 = (uint32_t)(w >> 40) };
}

/* Anonymous inodes by name: which have the kernel's read_iter/write_iter.
 * eventfd, timerfd, signalfd and userfaultfd read only; the others
 * (inotify, epoll, io_uring, perf, ...) neither. */
uint32_t fsaio__anon_no_iter(int fd)
{
	char path[40], name[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, name, sizeof(name) - 1);
	if (n < 0)
		return 0;
	name[n] = 0;
	if (!strcmp(name, "anon_inode:[eventfd]") || !strcmp(name, "anon_inode:[timerfd]") ||
	    !strcmp(name, "anon_inode:[signalfd]") || !strcmp(name, "anon_inode:[userfaultfd]"))
		return FSAIO__FD_NO_WRITE_ITER;
	return FSAIO__FD_NO_READ_ITER | FSAIO__FD_NO_WRITE_ITER;
}

/* kiocb_set_rw_flags(): RWF_DONTCACHE needs the file's FOP_DONTCACHE,
 * which regular files of the disk filesystems (ext4, xfs, btrfs...) have
 * on Linux 6.18, and tmpfs, hugetlbfs, ramfs, proc and sysfs files, block
 * devices, pipes, sockets, character devices and anonymous inodes do not.
 * A filesystem this misjudges gets the kernel's own -EOPNOTSUPP, in the
 * event. */
bool fsaio__dontcache_refused(int fd)
{
	int saved = errno;
	struct statfs sf;
	struct stat st;
	bool refused;

	if (fstat(fd, &st) < 0)
		refused = false;        /* the fd's own error comes first */
	else if (!S_ISREG(st.st_mode))
		refused = true;
	else
		refused = fstatfs(fd, &sf) == 0 &&
			  (sf.f_type == TMPFS_MAGIC || sf.f_type == HUGETLBFS_MAGIC ||
			   sf.f_type == RAMFS_MAGIC || sf.f_type == PROC_SUPER_MAGIC ||
			   sf.f_type == SYSFS_MAGIC);
	errno = saved;
	return refused;
}

/* The memory devices (drivers/char/mem.c: /dev/null, zero, full, random,
 * urandom, mem, port) make data rather than wait for it: a blocking read
 * fills its count (or is EOF, /dev/null), while a RWF_NOWAIT one may stop
 * early when the CPU is wanted elsewhere. /dev/kmsg, on the same major,
 * returns one record per read. */
#define MEM_MAJOR 1
#define KMSG_MINOR 11

static bool reads_fill(const struct stat *st)
{
	return S_ISCHR(st->st_mode) && major(st->st_rdev) == MEM_MAJOR &&
	       minor(st->st_rdev) != KMSG_MINOR;
}

static int learn(int fd, struct fsaio__fdinfo *fi)
{
	struct stat st;
	int fl;

	/* Defined on every path: callers read it when -errno is 0, which the
	 * compiler cannot rule out. */
	*fi = (struct fsaio__fdinfo){ .flags = 0 };
	if (fstat(fd, &st) < 0)
		return -errno;
	fl = fcntl(fd, F_GETFL);
	if (fl < 0)
		return -errno;
	fi->flags = FSAIO__FD_VALID;
	if ((fl & O_ACCMODE) == O_RDONLY || (fl & O_ACCMODE) == O_RDWR)
		fi->flags |= FSAIO__FD_READ;
	if ((fl & O_ACCMODE) == O_WRONLY || (fl & O_ACCMODE) == O_RDWR)
		fi->flags |= FSAIO__FD_WRITE;
	if (fl & (O_SYNC | O_DSYNC))
		fi->flags |= FSAIO__FD_SYNC;
	if (fl & O_PATH) {
		fi->flags &= ~(uint32_t)(FSAIO__FD_READ | FSAIO__FD_WRITE);
		fi->flags |= FSAIO__FD_PATH;
	}
	if (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode)) {
		fi->flags |= FSAIO__FD_SEEKABLE;
		fi->kind = (fl & O_DIRECT) ? FSAIO__KIND_DIRECT : FSAIO__KIND_FILE;
		if (fi->kind == FSAIO__KIND_FILE)
			fi->ra_kb1 = fsaio__file_ra_kb(&st) + 1;
	} else if (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode) || S_ISCHR(st.st_mode) ||
		   !(st.st_mode & S_IFMT)) {
		/* No file type at all: an anonymous inode (eventfd, timerfd,
		 * signalfd, inotify...), pollable like a pipe. */
		fi->kind = FSAIO__KIND_POLLABLE;
		if (!reads_fill(&st))
			fi->flags |= FSAIO__FD_READS_READY;
		if (S_ISFIFO(st.st_mode))
			fi->flags |= FSAIO__FD_FIFO;
		if (S_ISSOCK(st.st_mode))
			fi->flags |= FSAIO__FD_SOCKET;
		if (!(st.st_mode & S_IFMT) && !(fl & O_PATH))
			fi->flags |= FSAIO__FD_ANON | fsaio__anon_no_iter(fd);
	} else {
		fi->kind = FSAIO__KIND_BLOCKING;
		if (S_ISDIR(st.st_mode))
			fi->flags |= FSAIO__FD_NO_READ_ITER | FSAIO__FD_NO_WRITE_ITER;
	}
	return 0;
}

int fsaio__fd_refresh(struct fsaio__fdtable *t, int fd, struct fsaio__fdinfo *out)
{
	_Atomic uint64_t *w;
	int ret = learn(fd, out);

	if (ret)
		return ret;
	w = slot(t, fd, true);
	if (w)
		atomic_store_explicit(w, pack(*out), memory_order_relaxed);
	return 0;
}

int fsaio__fd_get(struct fsaio__fdtable *t, int fd, struct fsaio__fdinfo *out)
{
	_Atomic uint64_t *w = slot(t, fd, false);
	uint64_t v = w ? atomic_load_explicit(w, memory_order_relaxed) : 0;

	if (v & FSAIO__FD_VALID) {
		*out = unpack(v);
		return 0;
	}
	return fsaio__fd_refresh(t, fd, out);
}

int fsaio__fd_fit(struct fsaio_req *r, struct fsaio__fdinfo fi)
{
	bool seekable = fi.flags & FSAIO__FD_SEEKABLE;

	if (fsaio__is_rw(r)) {
		if (!(fi.flags & (fsaio__is_write(r) ? FSAIO__FD_WRITE : FSAIO__FD_READ)))
			return -EBADF;
		if (r->offset < 0 && seekable)
			return -EINVAL;
	}
	r->method_ = fi.kind;
	r->run_fd_ = (uint32_t)r->fd | (seekable ? 0 : FSAIO__RUN_STREAM) |
		     ((fi.flags & FSAIO__FD_READS_READY) ? FSAIO__RUN_READY : 0);
	return 0;
}

int fsaio__fd_recheck(struct fsaio__fdtable *t, struct fsaio_req *r, struct fsaio__fdinfo *fi)
{
	int ret = fsaio__fd_refresh(t, r->fd, fi);

	return ret ? ret : fsaio__fd_fit(r, *fi);
}

bool fsaio__fd_changed(struct fsaio__fdtable *t, int fd, struct fsaio__fdinfo fi)
{
	struct fsaio__fdinfo now;

	/* A failed refresh is a change too: the caller re-checks and fails. */
	if (fsaio__fd_refresh(t, fd, &now))
		return true;
	return now.kind != fi.kind ||
	       (now.flags & ~FSAIO__FD_LEARNT) != (fi.flags & ~FSAIO__FD_LEARNT);
}

void fsaio__fd_set(struct fsaio__fdtable *t, int fd, uint32_t flags)
{
	_Atomic uint64_t *w = slot(t, fd, false);

	if (w && !(atomic_load_explicit(w, memory_order_relaxed) & flags))
		atomic_fetch_or_explicit(w, flags, memory_order_relaxed);
}

bool fsaio__fd_dontcache_refused(struct fsaio__fdtable *t, int fd, struct fsaio__fdinfo *fi)
{
	if (!(fi->flags & FSAIO__FD_DC_KNOWN)) {
		uint32_t learnt = FSAIO__FD_DC_KNOWN |
				  (fsaio__dontcache_refused(fd) ? FSAIO__FD_DC_REFUSED : 0);

		fsaio__fd_set(t, fd, learnt);
		fi->flags |= learnt;
	}
	return fi->flags & FSAIO__FD_DC_REFUSED;
}

void fsaio__fd_missed(struct fsaio__fdtable *t, int fd, struct fsaio__fdinfo fi)
{
	_Atomic uint64_t *w = slot(t, fd, false);

	if (!w)
		return;
	if (!(fi.flags & FSAIO__FD_PROBE_NEXT))
		atomic_fetch_or_explicit(w, FSAIO__FD_PROBE_NEXT, memory_order_relaxed);
	else if (fsaio__fd_misses(fi) < 7)
		atomic_fetch_add_explicit(w, FSAIO__FD_MISS_ONE, memory_order_relaxed);
}

void fsaio__fd_clear(struct fsaio__fdtable *t, int fd, uint32_t flags)
{
	_Atomic uint64_t *w = slot(t, fd, false);

	if (w && (atomic_load_explicit(w, memory_order_relaxed) & flags))
		atomic_fetch_and_explicit(w, ~(uint64_t)flags, memory_order_relaxed);
}

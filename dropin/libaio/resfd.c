/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: the eventfds of IOCB_FLAG_RESFD.
 *
 * The kernel takes a reference to the eventfd at submit (eventfd_ctx_fdget)
 * and signals it once the event is in the ring; we hold a duplicate
 * descriptor instead, so the program may close its own. A context keeps up
 * to RESFD_CACHE such duplicates, each with the program's number for it and
 * a count of the requests using it: a request that names the same eventfd
 * again (kcmp says the number still names that open file) uses the cached
 * duplicate, with no dup, no vetting and no close of its own. Where kcmp
 * cannot be used, or the cache is full of entries in use, a request holds a
 * duplicate of its own.
 *
 * Signals are coalesced per batch: once a batch's events are in the ring
 * (shim__deliver), each adds 1 to its eventfd's count in a list of the
 * posting thread, and shim__resfd_flush writes each count once, so the
 * eventfd's counter gains what the kernel's would, and only then wakes the
 * contexts' reapers (shim__deliver leaves that to it). A cache entry's user is let go only after its write,
 * so its descriptor is never closed before.
 *
 * Locks: the cache's entries change under ctx->lock; an entry's users is
 * atomic, raised under ctx->lock and lowered without it (an entry is
 * reused only at 0, under the lock). The pending list is the thread's own.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/kcmp.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "resfd.h"
#include "self.h"
#include "wake.h"

/* kcmp: 1 usable, -1 refused (ENOSYS, EPERM), 0 not tried yet. */
static _Atomic int kcmp_state;

/* eventfd_ctx_fdget(): EBADF for no file (or O_PATH), EINVAL for a file
 * that is not an eventfd. A new duplicate in *out. */
static int vet_and_dup(uint32_t fd, int *out)
{
	char path[40], link[32];
	struct stat st;
	ssize_t n;
	int dup;

	if ((int)fd < 0 || shim__fd_unusable((int)fd))
		return -EBADF;
	dup = fcntl((int)fd, F_DUPFD_CLOEXEC, 0);
	if (dup < 0)
		return errno == EBADF ? -EBADF : -errno;
	/* An eventfd is an anonymous inode: no file type bits. */
	if (fstat(dup, &st) < 0 || (st.st_mode & S_IFMT) != 0)
		goto notefd;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", dup);
	n = readlink(path, link, sizeof(link) - 1);
	if (n >= 0) {
		link[n] = 0;
		if (strcmp(link, "anon_inode:[eventfd]") != 0)
			goto notefd;
	}
	*out = dup;
	return 0;
notefd:
	(void)FSAIO__NOCANCEL(close(dup));
	return -EINVAL;
}

/* Whether the program's fd still names the open file our dup holds. */
static bool same_file(int fd, int dup)
{
	pid_t self = shim__self_pid();
	long r;

	if (atomic_load_explicit(&kcmp_state, memory_order_relaxed) < 0)
		return false;
	r = syscall(SYS_kcmp, self, self, KCMP_FILE, fd, dup);
	if (r < 0 && (errno == ENOSYS || errno == EPERM || errno == EACCES))
		atomic_store_explicit(&kcmp_state, -1, memory_order_relaxed);
	return r == 0;
}

/* The entry to put a new duplicate of fd in: a stale one for the same
 * number, a free one, or one nobody uses. ctx->lock held. */
static struct shim_efd *spare_entry(struct shim_ctx *c, int fd)
{
	for (unsigned i = 0; i < RESFD_CACHE; i++)
		if (c->efds[i].dup >= 0 && c->efds[i].fd == fd && !atomic_load(&c->efds[i].users))
			return &c->efds[i];
	for (unsigned i = 0; i < RESFD_CACHE; i++)
		if (c->efds[i].dup < 0)
			return &c->efds[i];
	for (unsigned i = 0; i < RESFD_CACHE; i++)
		if (!atomic_load(&c->efds[i].users))
			return &c->efds[i];
	return NULL;
}

int shim__resfd_take(struct shim_ctx *c, uint32_t fd, int *dup, struct shim_efd **entry)
{
	struct shim_efd *e = NULL;
	int ret, old = -1;

	*entry = NULL;
	pthread_mutex_lock(&c->lock);
	for (unsigned i = 0; i < RESFD_CACHE && !e; i++)
		if (c->efds[i].dup >= 0 && c->efds[i].fd == (int)fd)
			e = &c->efds[i];
	/* Held while we check: it cannot be reused meanwhile. */
	if (e)
		atomic_fetch_add(&e->users, 1);
	pthread_mutex_unlock(&c->lock);
	if (e) {
		if (same_file((int)fd, e->dup)) {
			*dup = e->dup;
			*entry = e;
			return 0;
		}
		atomic_fetch_sub(&e->users, 1);
	}
	ret = vet_and_dup(fd, dup);
	if (ret || atomic_load_explicit(&kcmp_state, memory_order_relaxed) < 0)
		return ret;
	pthread_mutex_lock(&c->lock);
	e = spare_entry(c, (int)fd);
	if (e) {
		old = e->dup;
		e->fd = (int)fd;
		e->dup = *dup;
		atomic_store(&e->users, 1);
		*entry = e;
	}
	pthread_mutex_unlock(&c->lock);
	if (old >= 0)
		(void)FSAIO__NOCANCEL(close(old));
	return 0;
}

/* Let go of n uses of dup: a cache entry's, or the request's own. */
static void release(int dup, struct shim_efd *e, uint32_t n)
{
	if (e)
		atomic_fetch_sub(&e->users, n);
	else
		(void)FSAIO__NOCANCEL(close(dup));
}

void shim__resfd_drop(int dup, struct shim_efd *e)
{
	release(dup, e, 1);
}

/* The posting thread's signals not yet written. */
#define PENDING_MAX 8
static __thread struct pending {
	struct shim_ctx *c;
	int dup;
	struct shim_efd *e;     /* NULL: the request's own duplicate */
	uint32_t n;
} pending[PENDING_MAX];
static __thread unsigned npending;

static void write_one(struct pending *p)
{
	uint64_t v = p->n;

	/* An eventfd write fails only when the counter would overflow, and
	 * then the reader is awake already. */
	if (FSAIO__NOCANCEL(write(p->dup, &v, sizeof(v))) < 0)
		v = 0;
	release(p->dup, p->e, p->n);
}

/* Whether an earlier pending signal is for the same context. */
static bool ctx_seen(unsigned i)
{
	for (unsigned j = 0; j < i; j++)
		if (pending[j].c == pending[i].c)
			return true;
	return false;
}

void shim__resfd_flush(void)
{
	int saved = errno;

	for (unsigned i = 0; i < npending; i++)
		write_one(&pending[i]);
	/* Reapers are woken after the eventfds are written, as the kernel's
	 * aio_complete signals before it wakes them: each context once. */
	for (unsigned i = 0; i < npending; i++)
		if (!ctx_seen(i))
			shim__wake(pending[i].c);
	npending = 0;
	errno = saved;
}

void shim__resfd_signal(struct shim_ctx *c, int dup, struct shim_efd *e)
{
	/* A duplicate of the request's own is unique to it: never merged. */
	for (unsigned i = 0; e && i < npending; i++) {
		if (pending[i].e == e) {
			pending[i].n++;
			return;
		}
	}
	if (npending == PENDING_MAX)
		shim__resfd_flush();
	pending[npending++] = (struct pending){ .c = c, .dup = dup, .e = e, .n = 1 };
}

void shim__resfd_init(struct shim_ctx *c)
{
	for (unsigned i = 0; i < RESFD_CACHE; i++) {
		c->efds[i].fd = -1;
		c->efds[i].dup = -1;
		atomic_init(&c->efds[i].users, 0);
	}
}

/* io_destroy, every request done: close the cached duplicates. */
void shim__resfd_fini(struct shim_ctx *c)
{
	for (unsigned i = 0; i < RESFD_CACHE; i++) {
		if (c->efds[i].dup >= 0)
			close(c->efds[i].dup);
		c->efds[i].dup = -1;
	}
}

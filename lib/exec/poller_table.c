/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: the poller's entries. An entry holds the requests parked on one
 * open file and the engine's own duplicate of it: the epoll key, the
 * descriptor the poller calls on, and what keeps the requests bound to the
 * file when the caller's number is closed or given to another file. Two
 * tables, by duplicate and by the caller's number, find an entry; a number
 * leads to its entry only while it still names the same file (kcmp, or the
 * inode where kcmp is denied). All under poller.lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/kcmp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "poller_table.h"

struct fsaio__pfd *fsaio__pfd_by_key(struct fsaio__poller *pl, int fd)
{
	return (unsigned)fd < pl->nfds ? pl->fds[fd] : NULL;
}

struct fsaio__pfd *fsaio__pfd_by_alias(struct fsaio__poller *pl, int fd)
{
	return (unsigned)fd < pl->nalias ? pl->alias[fd] : NULL;
}

/* tab[fd] of a table grown on demand: NULL when memory is short. */
static struct fsaio__pfd **cell(struct fsaio__pfd ***tab, unsigned *len, int fd)
{
	if ((unsigned)fd >= *len) {
		size_t n = *len ? *len : 64;
		struct fsaio__pfd **t;

		while (n <= (unsigned)fd)
			n *= 2;
		t = realloc(*tab, n * sizeof(*t));
		if (!t)
			return NULL;
		memset(t + *len, 0, (n - *len) * sizeof(*t));
		*tab = t;
		*len = (unsigned)n;
	}
	return &(*tab)[fd];
}

/* Whether fds a and b are the same open file: kcmp, or where it is denied
 * (seccomp profiles), the same inode. */
static bool same_file(int a, int b)
{
	pid_t pid = getpid();
	struct stat sa, sb;
	long r = syscall(SYS_kcmp, pid, pid, KCMP_FILE, a, b);

	if (r >= 0)
		return r == 0;
	return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 &&
	       sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino && sa.st_rdev == sb.st_rdev;
}

/* The entry for the file r's fd names now: the one made for that number
 * while it still names the same file, else a new one holding a duplicate.
 * NULL and *err set when no descriptor or memory is left. */
struct fsaio__pfd *fsaio__pfd_for(struct fsaio__poller *pl, const struct fsaio_req *r, int *err)
{
	struct fsaio__pfd *p = fsaio__pfd_by_alias(pl, r->fd), **key, **alias;
	int dupfd;

	if (p && same_file(r->fd, p->fd))
		return p;
	if (p) {
		/* The number was given to another file: p keeps its waiters. */
		p->alias = -1;
		pl->alias[r->fd] = NULL;
	}
	alias = cell(&pl->alias, &pl->nalias, r->fd);
	dupfd = alias ? fcntl(r->fd, F_DUPFD_CLOEXEC, 0) : -1;
	if (dupfd < 0) {
		*err = alias ? -errno : -ENOMEM;
		return NULL;
	}
	key = cell(&pl->fds, &pl->nfds, dupfd);
	p = key ? calloc(1, sizeof(*p)) : NULL;
	if (!p) {
		close(dupfd);
		*err = -ENOMEM;
		return NULL;
	}
	p->fd = dupfd;
	p->alias = r->fd;
	*key = p;
	*alias = p;
	return p;
}

bool fsaio__pfd_idle(const struct fsaio__pfd *p)
{
	return !p->head[DIR_READ] && !p->head[DIR_WRITE] && !p->head[DIR_POLL];
}

/* Drop an entry with no waiters: out of epoll and the tables. Its duplicate
 * is returned to be closed once poller.lock is released (closing the last
 * reference of a socket may block). */
int fsaio__pfd_drop(struct fsaio__poller *pl, struct fsaio__pfd *p)
{
	int fd = p->fd;

	if (p->registered)
		(void)epoll_ctl(pl->epfd, EPOLL_CTL_DEL, fd, NULL);
	pl->fds[fd] = NULL;
	if (p->alias >= 0 && pl->alias[p->alias] == p)
		pl->alias[p->alias] = NULL;
	free(p);
	return fd;
}

/* Entries and their duplicates (the thread is gone, nothing waits). */
void fsaio__pfd_free_all(struct fsaio__poller *pl)
{
	for (unsigned fd = 0; fd < pl->nfds; fd++) {
		if (pl->fds[fd]) {
			close(pl->fds[fd]->fd);
			free(pl->fds[fd]);
		}
	}
	free(pl->fds);
	free(pl->alias);
	pl->fds = pl->alias = NULL;
	pl->nfds = pl->nalias = 0;
}


/* SPDX-License-Identifier: MIT */
/* What the engine knows about each fd (fdtable.c). */
#ifndef FSAIO_FDTABLE_H
#define FSAIO_FDTABLE_H

#include <pthread.h>
#include <stdatomic.h>

#include "fdfacts.h"
#include "req.h"

/* What the engine knows about an fd: one atomic word per fd (fdtable.c). */
enum fsaio__kind {
	FSAIO__KIND_FILE = 0,   /* regular file or block device, buffered */
	FSAIO__KIND_POLLABLE,   /* pipe, FIFO, socket, tty, eventfd */
	FSAIO__KIND_DIRECT,     /* opened with O_DIRECT */
	FSAIO__KIND_BLOCKING,   /* anything else: run on a worker as is */
	FSAIO__KIND_MAX
};

enum {
	FSAIO__FD_VALID = 1u << 0,
	FSAIO__FD_READ = 1u << 1,       /* opened for reading */
	FSAIO__FD_WRITE = 1u << 2,      /* opened for writing */
	FSAIO__FD_NOWAIT_RBAD = 1u << 3, /* preadv2(RWF_NOWAIT) refused: don't try again */
	FSAIO__FD_NOWAIT_WBAD = 1u << 4, /* pwritev2(RWF_NOWAIT) refused */
	FSAIO__FD_PROBE_NEXT = 1u << 5, /* last inline attempt missed: probe first next time */
	FSAIO__FD_SEEKABLE = 1u << 6,
	FSAIO__FD_SYNC = 1u << 7,       /* opened O_SYNC or O_DSYNC: writes wait for the device */
	FSAIO__FD_ADV_RANDOM = 1u << 8, /* fsaio_fadvise(POSIX_FADV_RANDOM): no stream readahead */
	FSAIO__FD_ADV_SEQ = 1u << 9,    /* fsaio_fadvise(POSIX_FADV_SEQUENTIAL): a stream from the start */
	FSAIO__FD_FIFO = 1u << 10,      /* a pipe or FIFO: splice reaches it without blocking */
	FSAIO__FD_SOCKET = 1u << 11,
	FSAIO__FD_PATH = 1u << 16,      /* opened O_PATH: no I/O of any kind */
	/* 1u << 17, 1u << 18: FSAIO__FD_NO_READ_ITER, _NO_WRITE_ITER (fdfacts.h) */
	FSAIO__FD_ANON = 1u << 19,      /* an anonymous inode (eventfd, timerfd, signalfd, ...) */
	/* A blocking read returns what is ready, which may be less than asked
	 * (pipe, socket, tty, anonymous inode, a device that waits for data):
	 * a short count is its answer (fsaio__short_is_final). */
	FSAIO__FD_READS_READY = 1u << 20,
	/* Whether RWF_DONTCACHE is refused (fsaio__dontcache_refused), asked
	 * at the fd's first request that carries it. */
	FSAIO__FD_DC_KNOWN = 1u << 21,
	FSAIO__FD_DC_REFUSED = 1u << 22,
	/* Reads missed in a row since the last hit, saturating (a hint). */
	FSAIO__FD_MISS_ONE = 1u << 12,
	FSAIO__FD_MISS_MASK = 7u << 12,
	/* What the engine learnt by using the fd, not by asking the kernel. */
	FSAIO__FD_LEARNT = FSAIO__FD_NOWAIT_RBAD | FSAIO__FD_NOWAIT_WBAD | FSAIO__FD_PROBE_NEXT |
			   FSAIO__FD_ADV_RANDOM | FSAIO__FD_ADV_SEQ | FSAIO__FD_MISS_MASK |
			   FSAIO__FD_DC_KNOWN | FSAIO__FD_DC_REFUSED,
};

struct fsaio__fdinfo {
	uint32_t flags;         /* FSAIO__FD_* */
	uint32_t kind;          /* enum fsaio__kind */
	/* A buffered file's device read_ahead_kb + 1 (devra.c); 0 for other
	 * kinds. At most FSAIO__RA_MAX_KB + 1: 24 bits of the word. */
	uint32_t ra_kb1;
};

struct fsaio__fdtable {
	pthread_mutex_t lock;   /* serialises chunk allocation and refreshes */
	/* chunks[i] points to FDT_CHUNK atomic words; published with release,
	 * read with acquire; never freed before the context. */
	_Atomic(_Atomic uint64_t *) chunks[1024];
};

int fsaio__fdtable_init(struct fsaio__fdtable *t);
void fsaio__fdtable_fini(struct fsaio__fdtable *t);
void fsaio__fdtable_forget(struct fsaio__fdtable *t); /* forked child: free only */
/* Whether facts fi fit request r (access mode, offset on a seekable fd):
 * 0 and r set to run on them (method, descriptor), or -EBADF / -EINVAL. */
int fsaio__fd_fit(struct fsaio_req *r, struct fsaio__fdinfo fi);
/* Learn r's fd again into *fi and fit r to it: the one re-check of every
 * method's "the fd may name another file now". */
int fsaio__fd_recheck(struct fsaio__fdtable *t, struct fsaio_req *r, struct fsaio__fdinfo *fi);
/* Whether fd's facts differ from fi now (learning them again). */
bool fsaio__fd_changed(struct fsaio__fdtable *t, int fd, struct fsaio__fdinfo fi);
int fsaio__fd_get(struct fsaio__fdtable *t, int fd, struct fsaio__fdinfo *out);
int fsaio__fd_refresh(struct fsaio__fdtable *t, int fd, struct fsaio__fdinfo *out);
void fsaio__fd_set(struct fsaio__fdtable *t, int fd, uint32_t flags);
void fsaio__fd_clear(struct fsaio__fdtable *t, int fd, uint32_t flags);
/* Whether fd's file refuses RWF_DONTCACHE: asked once per fd and kept in
 * its facts (and in *fi). */
bool fsaio__fd_dontcache_refused(struct fsaio__fdtable *t, int fd, struct fsaio__fdinfo *fi);
/* A read on fd missed the cache: probe its next one first, and count the
 * streak (fi: the facts the read was started with). */
void fsaio__fd_missed(struct fsaio__fdtable *t, int fd, struct fsaio__fdinfo fi);
static inline unsigned fsaio__fd_misses(struct fsaio__fdinfo fi)
{
	return (fi.flags & FSAIO__FD_MISS_MASK) / FSAIO__FD_MISS_ONE;
}

#endif /* FSAIO_FDTABLE_H */

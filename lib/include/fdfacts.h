/* SPDX-License-Identifier: MIT */
/* What a file can do that fstat(2) does not tell: shared by the engine's fd
 * table and the libaio drop-in's iocb decoding. */
#ifndef FSAIO_FDFACTS_H
#define FSAIO_FDFACTS_H

#include <stdbool.h>
#include <stdint.h>

#define FSAIO__FD_NO_READ_ITER (1u << 17)   /* no read_iter (directory, inotify, epoll) */
#define FSAIO__FD_NO_WRITE_ITER (1u << 18)  /* no write_iter (directory, eventfd, timerfd, signalfd) */

/* FSAIO__FD_NO_READ_ITER / _NO_WRITE_ITER of an anonymous inode, by name. */
uint32_t fsaio__anon_no_iter(int fd);

/* Whether the kernel refuses RWF_DONTCACHE on fd's file (-EOPNOTSUPP), by
 * its kind and filesystem (fdtable.c). */
bool fsaio__dontcache_refused(int fd);

#endif /* FSAIO_FDFACTS_H */

/* SPDX-License-Identifier: MIT */
/*
 * libfsaio-posix-floor.so: the least a POSIX AIO can do for reads the page
 * cache holds, as the floor of the POSIX drop-in's hot path under a POSIX
 * AIO program such as fio's posixaio engine. aio_read reads inline with
 * pread(2) and keeps the result in the aiocb; aio_error and aio_return
 * hand it back; aio_suspend returns at once (everything is complete).
 * Nothing else: no writes, no notification, no lio_listio, no waiting, no
 * checks. A measuring stick for cached reads (bench/README.md), not a
 * POSIX AIO:
 *
 *   LD_PRELOAD=build/bench/libfsaio-posix-floor.so fio ... --ioengine=posixaio
 */
#include <aio.h>
#include <errno.h>
#include <unistd.h>

/* glibc's aiocb keeps the state in __error_code and __return_value. */
int floor_read(struct aiocb *cb)
{
	ssize_t n = pread(cb->aio_fildes, (void *)cb->aio_buf, cb->aio_nbytes, cb->aio_offset);

	cb->__error_code = n < 0 ? errno : 0;
	cb->__return_value = n;
	return 0;
}

int floor_unsupported(struct aiocb *cb)
{
	(void)cb;
	errno = ENOSYS;
	return -1;
}

int floor_fsync(int op, struct aiocb *cb)
{
	(void)op;
	return floor_unsupported(cb);
}

int floor_error(const struct aiocb *cb)
{
	return cb->__error_code;
}

ssize_t floor_return(struct aiocb *cb)
{
	return cb->__return_value;
}

int floor_suspend(const struct aiocb *const list[], int n, const struct timespec *timeout)
{
	(void)list;
	(void)n;
	(void)timeout;
	return 0;
}

int floor_cancel(int fd, struct aiocb *cb)
{
	(void)fd;
	(void)cb;
	return AIO_ALLDONE;
}

/* The names fio links against (aio.h maps them to the 64-bit ones). */
__asm__(".symver floor_read, aio_read64@@GLIBC_2.34");
__asm__(".symver floor_unsupported, aio_write64@@GLIBC_2.34");
__asm__(".symver floor_fsync, aio_fsync64@@GLIBC_2.34");
__asm__(".symver floor_error, aio_error64@@GLIBC_2.34");
__asm__(".symver floor_return, aio_return64@@GLIBC_2.34");
__asm__(".symver floor_suspend, aio_suspend64@@GLIBC_2.34");
__asm__(".symver floor_cancel, aio_cancel64@@GLIBC_2.34");

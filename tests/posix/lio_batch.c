/* SPDX-License-Identifier: MIT */
/*
 * lio_batch DIR LISTS: LISTS times, a lio_listio(LIO_WAIT) of NREQ reads of
 * 4 KiB, each on a block of its own, on a file of DIR whose pages were
 * dropped first; each block's bytes checked. Run under the POSIX drop-in
 * by lio_batch.sh, which counts the io_uring_enter calls the lists made.
 * Exit 0, or 1 with a message.
 */
#include <aio.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NREQ 32
#define BS 4096
#define STRIDE (64 * 1024)      /* blocks this far apart: no read merges with another */
#define FILE_SIZE (NREQ * STRIDE)

static unsigned char fill(size_t off)
{
	return (unsigned char)((off / BS) * 7 + 3);
}

int main(int argc, char **argv)
{
	static unsigned char buf[NREQ][BS];
	struct aiocb cbs[NREQ], *list[NREQ];
	char path[4096];
	int fd, lists;

	if (argc != 3)
		return fprintf(stderr, "usage: lio_batch DIR LISTS\n"), 1;
	lists = atoi(argv[2]);
	snprintf(path, sizeof(path), "%s/lio_batch.%d", argv[1], (int)getpid());
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return perror("open"), 1;
	unlink(path);
	for (size_t off = 0; off < FILE_SIZE; off += BS) {
		unsigned char b[BS];

		memset(b, fill(off), BS);
		if (pwrite(fd, b, BS, (off_t)off) != BS)
			return perror("pwrite"), 1;
	}
	if (fsync(fd) || posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM))
		return perror("fsync"), 1;
	for (int l = 0; l < lists; l++) {
		(void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
		for (int i = 0; i < NREQ; i++) {
			memset(&cbs[i], 0, sizeof(cbs[i]));
			cbs[i].aio_fildes = fd;
			cbs[i].aio_buf = buf[i];
			cbs[i].aio_nbytes = BS;
			cbs[i].aio_offset = (off_t)i * STRIDE;
			cbs[i].aio_lio_opcode = LIO_READ;
			list[i] = &cbs[i];
			memset(buf[i], 0, BS);
		}
		if (lio_listio(LIO_WAIT, list, NREQ, NULL))
			return perror("lio_listio"), 1;
		for (int i = 0; i < NREQ; i++) {
			size_t off = (size_t)i * STRIDE;

			if (aio_error(&cbs[i]) || aio_return(&cbs[i]) != BS)
				return fprintf(stderr, "read %d: error %d\n", i, aio_error(&cbs[i])), 1;
			for (int k = 0; k < BS; k++)
				if (buf[i][k] != fill(off))
					return fprintf(stderr, "read %d: wrong byte at %d\n", i, k), 1;
		}
	}
	close(fd);
	return 0;
}

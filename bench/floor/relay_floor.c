/* SPDX-License-Identifier: MIT */
/*
 * fsaio-relay-floor: what a program that sleeps on an eventfd for its AIO
 * completions (IOCB_FLAG_RESFD, as QEMU's aio=native does) can get from
 * any user-space engine, against the kernel's own AIO. 4 KiB O_DIRECT reads
 * in file order, DEPTH in flight, the reader sleeping in read(2) on an
 * eventfd between submissions:
 *
 *   kaio    io_submit with IOCB_FLAG_RESFD; the kernel signals the eventfd
 *   relay   io_uring, submitted by the reader; a relay thread waits for
 *           CQEs and writes their count to the eventfd (the least a
 *           user-space engine must do: someone other than the reader has
 *           to see the completion)
 *
 *   fsaio-relay-floor FILE [COUNT [DEPTH]]
 *
 * Prints IOPS, CPU microseconds and context switches per I/O of the whole
 * process for each, kaio and relay alternating twice.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <liburing.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define BS 4096

static int fd, efd;
static unsigned depth = 1;
static long count = 20000;
static char *bufs;
static struct io_uring ring;
static volatile int stop_relay;

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static uint64_t wait_efd(void)
{
	uint64_t v = 0;

	while (read(efd, &v, sizeof(v)) < 0 && errno == EINTR)
		;
	return v;
}

static void run_kaio(void)
{
	aio_context_t ctx = 0;
	struct iocb cb[64], *cbp;
	struct io_event ev[64];
	long sent = 0, done = 0;

	if (syscall(SYS_io_setup, 128, &ctx) < 0) {
		perror("io_setup");
		exit(1);
	}
	while (done < count) {
		while (sent < count && sent - done < (long)depth) {
			struct iocb *c = &cb[sent % depth];

			memset(c, 0, sizeof(*c));
			c->aio_lio_opcode = IOCB_CMD_PREAD;
			c->aio_fildes = (uint32_t)fd;
			c->aio_buf = (uint64_t)(uintptr_t)(bufs + (sent % depth) * BS);
			c->aio_nbytes = BS;
			c->aio_offset = (int64_t)sent * BS;
			c->aio_flags = IOCB_FLAG_RESFD;
			c->aio_resfd = (uint32_t)efd;
			cbp = c;
			if (syscall(SYS_io_submit, ctx, 1, &cbp) != 1) {
				perror("io_submit");
				exit(1);
			}
			sent++;
		}
		wait_efd();
		done += syscall(SYS_io_getevents, ctx, 0, 64, ev, NULL);
	}
	syscall(SYS_io_destroy, ctx);
}

static void *relay(void *arg)
{
	(void)arg;
	while (!stop_relay) {
		struct io_uring_cqe *cqe;
		unsigned head, n = 0;
		uint64_t v;

		if (io_uring_wait_cqe(&ring, &cqe) < 0)
			continue;
		io_uring_for_each_cqe(&ring, head, cqe)
			n++;
		io_uring_cq_advance(&ring, n);
		v = n;
		if (write(efd, &v, sizeof(v)) < 0)
			break;
	}
	return NULL;
}

static void run_relay(void)
{
	pthread_t th;
	long sent = 0, done = 0;

	if (io_uring_queue_init(128, &ring, 0) < 0) {
		fprintf(stderr, "io_uring_queue_init failed\n");
		exit(1);
	}
	stop_relay = 0;
	pthread_create(&th, NULL, relay, NULL);
	while (done < count) {
		while (sent < count && sent - done < (long)depth) {
			struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);

			io_uring_prep_read(sqe, fd, bufs + (sent % depth) * BS, BS, (uint64_t)sent * BS);
			io_uring_submit(&ring);
			sent++;
		}
		done += (long)wait_efd();
	}
	stop_relay = 1;
	io_uring_prep_nop(io_uring_get_sqe(&ring));
	io_uring_submit(&ring);
	pthread_join(th, NULL);
	io_uring_queue_exit(&ring);
}

static void measure(const char *name, void (*fn)(void))
{
	struct rusage a, b;
	double t0, t, cpu;

	getrusage(RUSAGE_SELF, &a);
	t0 = now();
	fn();
	t = now() - t0;
	getrusage(RUSAGE_SELF, &b);
	cpu = (double)(b.ru_utime.tv_sec - a.ru_utime.tv_sec + b.ru_stime.tv_sec - a.ru_stime.tv_sec) * 1e6 +
	      (double)(b.ru_utime.tv_usec - a.ru_utime.tv_usec + b.ru_stime.tv_usec - a.ru_stime.tv_usec);
	printf("%-6s depth %-3u %8.0f IOPS  %6.2f CPU us/IO  %5.2f csw/IO\n", name, depth,
	       (double)count / t, cpu / (double)count,
	       (double)(b.ru_nvcsw - a.ru_nvcsw + b.ru_nivcsw - a.ru_nivcsw) / (double)count);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: fsaio-relay-floor FILE [COUNT [DEPTH]]\n");
		return 2;
	}
	if (argc > 2)
		count = atol(argv[2]);
	if (argc > 3)
		depth = (unsigned)atoi(argv[3]);
	if (count <= 0 || depth < 1 || depth > 64) {
		fprintf(stderr, "fsaio-relay-floor: COUNT > 0, DEPTH 1..64\n");
		return 2;
	}
	fd = open(argv[1], O_RDONLY | O_DIRECT);
	efd = eventfd(0, 0);
	if (fd < 0 || efd < 0 || posix_memalign((void **)&bufs, BS, (size_t)depth * BS)) {
		perror(argv[1]);
		return 1;
	}
	for (int i = 0; i < 2; i++) {
		measure("kaio", run_kaio);
		measure("relay", run_relay);
	}
	return 0;
}

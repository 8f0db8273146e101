/* SPDX-License-Identifier: MIT */
/*
 * fsaio-relay-floor: what a program that sleeps on an eventfd for its AIO
 * completions (IOCB_FLAG_RESFD, as QEMU's aio=native does) can get from
 * any user-space engine, against the kernel's own AIO. 4 KiB O_DIRECT reads
 * (or writes) in file order, DEPTH in flight, the reader sleeping in
 * read(2) on an eventfd between submissions:
 *
 *   kaio    io_submit with IOCB_FLAG_RESFD; the kernel signals the eventfd
 *   relay   io_uring, submitted by the reader; a relay thread waits for
 *           CQEs and writes their count to the eventfd (the least a
 *           user-space engine must do: someone other than the reader has
 *           to see the completion)
 *   checked relay, plus what io_submit's contract costs a user-space engine
 *           per request: the eventfd number checked to still name the
 *           eventfd held (kcmp), the one-entry iovec copied with EFAULT
 *           for bad memory (process_vm_readv, as for IOCB_CMD_PREADV),
 *           and the fd bound to its file at submit (two FILES_UPDATE
 *           SQEs into a registered table, in the same io_uring_enter)
 *   krelay  the kernel's AIO, submitted by the reader without RESFD; a
 *           relay thread waits in io_getevents and writes the count to
 *           the eventfd (the relay, with the kernel's AIO as the engine)
 *
 * The reader takes its events from the AIO ring's memory, as QEMU does, so
 * kaio makes no io_getevents call. With "write", the requests are writes
 * of the same blocks instead of reads (they overwrite FILE's first
 * COUNT * 4 KiB: use a scratch file).
 *
 *   fsaio-relay-floor FILE [COUNT [DEPTH [read|write [coop] [poll]]]]
 *
 * With "coop", the io_uring relays' ring is made with
 * IORING_SETUP_COOP_TASKRUN, as libfsaio makes a ring whose completions
 * its thread relays. With "poll", the reader first watches its completions
 * in memory for up to POLL_NS before it sleeps on the eventfd, as QEMU's
 * event loop does by default: the relays then count their completions in
 * memory before they write the eventfd.
 *
 * Prints IOPS, CPU microseconds and context switches per I/O of the whole
 * process for each, the four in turn, twice.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <linux/kcmp.h>
#include <liburing.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define BS 4096
/* QEMU's default adaptive polling bound (poll-max-ns). */
#define POLL_NS 32768

static aio_context_t kctx;

static int fd, efd, efd_held;
static bool checked, writes, coop, poll_mode;
static unsigned depth = 1;
static long count = 20000;
static char *bufs;
static struct io_uring ring;
static volatile int stop_relay;
/* Completions a relay has passed on, counted before its eventfd write. */
static _Atomic long relayed;

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

/* The reader's wait for more completions: with "poll", watch for them in
 * memory for up to POLL_NS first, and sleep on the eventfd only if none
 * came. The eventfd's count may then be stale: callers recount. */
static void wait_events(bool (*ready)(void))
{
	if (poll_mode) {
		double end = now() + POLL_NS / 1e9;

		do {
			if (ready())
				return;
		} while (now() < end);
	}
	(void)wait_efd();
}

/* What the reader has taken of relayed. */
static long relay_done;

static bool relay_moved(void)
{
	return atomic_load(&relayed) != relay_done;
}

/* The kernel's AIO ring as it lies in memory at the context's address. */
struct aio_ring_head {
	unsigned id, nr, head, tail, magic, compat, incompat, header_length;
	struct io_event ev[];
};

/* Take every event the ring holds, from memory: how many. */
static long peek_ring(aio_context_t ctx)
{
	struct aio_ring_head *r = (struct aio_ring_head *)ctx;
	unsigned head = r->head, tail = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
	long n = (long)((tail + r->nr - head) % r->nr);

	__atomic_store_n(&r->head, tail, __ATOMIC_RELEASE);
	return n;
}

/* The iocb of request number sent, in its buffer; signalling efd if resfd. */
static struct iocb *prep_iocb(struct iocb *c, long sent, bool resfd)
{
	memset(c, 0, sizeof(*c));
	c->aio_lio_opcode = writes ? IOCB_CMD_PWRITE : IOCB_CMD_PREAD;
	c->aio_fildes = (uint32_t)fd;
	c->aio_buf = (uint64_t)(uintptr_t)(bufs + (sent % depth) * BS);
	c->aio_nbytes = BS;
	c->aio_offset = (int64_t)sent * BS;
	if (resfd) {
		c->aio_flags = IOCB_FLAG_RESFD;
		c->aio_resfd = (uint32_t)efd;
	}
	return c;
}

/* A fresh kernel AIO context in kctx. */
static void kaio_setup(void)
{
	kctx = 0;
	if (syscall(SYS_io_setup, 128, &kctx) < 0) {
		perror("io_setup");
		exit(1);
	}
}

/* Submit to the kernel, one io_submit per request, until depth are in
 * flight or all count are sent; *sent counts them. */
static void kaio_fill(struct iocb *cb, long *sent, long done, bool resfd)
{
	while (*sent < count && *sent - done < (long)depth) {
		struct iocb *cbp = prep_iocb(&cb[*sent % depth], *sent, resfd);
		if (syscall(SYS_io_submit, kctx, 1, &cbp) != 1) {
			perror("io_submit");
			exit(1);
		}
		(*sent)++;
	}
}

static bool kaio_ready(void)
{
	struct aio_ring_head *r = (struct aio_ring_head *)kctx;

	return __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE) != r->head;
}

static void run_kaio(void)
{
	struct iocb cb[64];
	long sent = 0, done = 0;

	kaio_setup();
	while (done < count) {
		kaio_fill(cb, &sent, done, true);
		wait_events(kaio_ready);
		done += peek_ring(kctx);
	}
	syscall(SYS_io_destroy, kctx);
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
		io_uring_for_each_cqe(&ring, head, cqe) {
			if (cqe->res != BS && !stop_relay) {
				fprintf(stderr, "fsaio-relay-floor: a read gave %d\n", cqe->res);
				exit(1);
			}
			n++;
		}
		io_uring_cq_advance(&ring, n);
		atomic_fetch_add(&relayed, (long)n);
		v = n;
		if (write(efd, &v, sizeof(v)) < 0)
			break;
	}
	return NULL;
}

static int slot_fd[64] = { [0 ... 63] = -1 };
static const int no_file = -1;

/* The per-request work of the checked relay; the slot to read from. */
static int check_and_bind(long slot, char *buf)
{
	static pid_t self;
	struct iovec user = { buf, BS }, copy, local = { &copy, sizeof(copy) },
		     remote = { &user, sizeof(user) };
	struct io_uring_sqe *sqe;

	if (!self)
		self = getpid();
	if (syscall(SYS_kcmp, self, self, KCMP_FILE, efd, efd_held) != 0 ||
	    process_vm_readv(self, &local, 1, &remote, 1, 0) != sizeof(copy)) {
		perror("check");
		exit(1);
	}
	slot_fd[slot] = fd;
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_files_update(sqe, (int *)&no_file, 1, (int)slot);
	sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_files_update(sqe, &slot_fd[slot], 1, (int)slot);
	sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
	return (int)slot;
}

static void run_relay(void)
{
	pthread_t th;
	long sent = 0, done = 0;

	if (io_uring_queue_init(256, &ring, coop ? IORING_SETUP_COOP_TASKRUN : 0) < 0) {
		fprintf(stderr, "io_uring_queue_init failed\n");
		exit(1);
	}
	stop_relay = 0;
	atomic_store(&relayed, 0);
	pthread_create(&th, NULL, relay, NULL);
	if (checked && io_uring_register_files(&ring, slot_fd, 64) < 0) {
		fprintf(stderr, "io_uring_register_files failed\n");
		exit(1);
	}
	while (done < count) {
		while (sent < count && sent - done < (long)depth) {
			struct io_uring_sqe *sqe;
			char *buf = bufs + (sent % depth) * BS;
			int file = fd;

			if (checked)
				file = check_and_bind(sent % depth, buf);
			sqe = io_uring_get_sqe(&ring);
			if (writes)
				io_uring_prep_write(sqe, file, buf, BS, (uint64_t)sent * BS);
			else
				io_uring_prep_read(sqe, file, buf, BS, (uint64_t)sent * BS);
			if (checked)
				sqe->flags |= IOSQE_FIXED_FILE;
			io_uring_submit(&ring);
			sent++;
		}
		relay_done = done;
		wait_events(relay_moved);
		done = atomic_load(&relayed);
	}
	stop_relay = 1;
	io_uring_prep_nop(io_uring_get_sqe(&ring));
	io_uring_submit(&ring);
	pthread_join(th, NULL);
	io_uring_queue_exit(&ring);
}

static void *krelay_thread(void *arg)
{
	struct io_event ev[64];

	(void)arg;
	while (!stop_relay) {
		long n = syscall(SYS_io_getevents, kctx, 1, 64, ev, NULL);
		uint64_t v = (uint64_t)n;

		if (n <= 0)
			continue;
		for (long i = 0; i < n; i++) {
			if (ev[i].res != BS && !stop_relay) {
				fprintf(stderr, "fsaio-relay-floor: a request gave %lld\n",
					(long long)ev[i].res);
				exit(1);
			}
		}
		atomic_fetch_add(&relayed, n);
		if (write(efd, &v, sizeof(v)) < 0)
			break;
	}
	return NULL;
}

static void run_krelay(void)
{
	struct iocb cb[64], *cbp, stop;
	pthread_t th;
	long sent = 0, done = 0;

	kaio_setup();
	stop_relay = 0;
	atomic_store(&relayed, 0);
	pthread_create(&th, NULL, krelay_thread, NULL);
	while (done < count) {
		kaio_fill(cb, &sent, done, false);
		relay_done = done;
		wait_events(relay_moved);
		done = atomic_load(&relayed);
	}
	/* One last request wakes the relay to see stop_relay. */
	stop_relay = 1;
	cbp = prep_iocb(&stop, 0, false);
	syscall(SYS_io_submit, kctx, 1, &cbp);
	pthread_join(th, NULL);
	syscall(SYS_io_destroy, kctx);
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
	printf("%-7s %s depth %-3u %8.0f IOPS  %6.2f CPU us/IO  %5.2f csw/IO\n", name, writes ? "write" : "read", depth,
	       (double)count / t, cpu / (double)count,
	       (double)(b.ru_nvcsw - a.ru_nvcsw + b.ru_nivcsw - a.ru_nivcsw) / (double)count);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: fsaio-relay-floor FILE [COUNT [DEPTH [read|write [coop] [poll]]]]\n");
		return 2;
	}
	if (argc > 2)
		count = atol(argv[2]);
	if (argc > 3)
		depth = (unsigned)atoi(argv[3]);
	if (argc > 4)
		writes = !strcmp(argv[4], "write");
	for (int i = 5; i < argc; i++) {
		coop |= !strcmp(argv[i], "coop");
		poll_mode |= !strcmp(argv[i], "poll");
	}
	if (count <= 0 || depth < 1 || depth > 64) {
		fprintf(stderr, "fsaio-relay-floor: COUNT > 0, DEPTH 1..64\n");
		return 2;
	}
	fd = open(argv[1], (writes ? O_RDWR : O_RDONLY) | O_DIRECT);
	efd = eventfd(0, 0);
	if (fd < 0 || efd < 0 || posix_memalign((void **)&bufs, BS, (size_t)depth * BS)) {
		perror(argv[1]);
		return 1;
	}
	efd_held = dup(efd);
	for (int i = 0; i < 2; i++) {
		measure("kaio", run_kaio);
		checked = false;
		measure("relay", run_relay);
		checked = true;
		measure("checked", run_relay);
		measure("krelay", run_krelay);
	}
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * Helpers of the I/O priority and RWF_DONTCACHE tests (native and drop-in),
 * header-only so that both suites' helper libraries can have them.
 *
 * A read held in the engine: its buffer is a page registered with
 * userfaultfd(2), so the thread that copies the file's bytes into it
 * faults and waits, inside its blocking preadv2, until the test lets it
 * go. While it waits, the test knows which thread it is (the fault's
 * thread id) and can ask the kernel what I/O priority that thread has
 * (ioprio_get) before releasing it.
 *
 * The kernel's own AIO, by raw system call, for comparisons (not with
 * T_PRIO_NO_KAIO).
 */
#ifndef T_PRIO_H
#define T_PRIO_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define T_IOPRIO(class, level) ((uint16_t)((class) << 13 | (level)))
#define T_IOPRIO_RT 1
#define T_IOPRIO_BE 2
#define T_IOPRIO_IDLE 3
#define T_WHO_PROCESS 1
#ifndef RWF_DONTCACHE
#define RWF_DONTCACHE 0x00000080
#endif

static inline int t_ioprio_of(pid_t tid)
{
	long v = syscall(SYS_ioprio_get, T_WHO_PROCESS, (int)tid);

	return v < 0 ? -errno : (int)v;
}

/* Thread tid's name (comm), or "" when it is gone. */
static inline void t_thread_name(pid_t tid, char *name, size_t len)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/comm", (int)tid);
	name[0] = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, name, len - 1);
	close(fd);
	name[n > 0 ? n : 0] = 0;
	if (n > 0 && name[n - 1] == '\n')
		name[n - 1] = 0;
}

/* How many of this process's fsaio-* threads run at I/O priority prio now
 * (ioprio_get over /proc/self/task); *seen: whether tid is one of them. */
static inline unsigned t_engine_threads_at(int prio, pid_t tid, bool *seen)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	unsigned n = 0;

	*seen = false;
	if (!d)
		return 0;
	while ((e = readdir(d))) {
		pid_t t = (pid_t)atoi(e->d_name);
		char name[32];

		if (t <= 0)
			continue;
		t_thread_name(t, name, sizeof(name));
		if (strncmp(name, "fsaio-", 6) || t_ioprio_of(t) != prio)
			continue;
		n++;
		if (t == tid)
			*seen = true;
	}
	closedir(d);
	return n;
}

/* A page whose first touch by the kernel's copy waits for the test. */
struct t_held {
	int uffd;
	char *page;
	size_t size;
};

/* 0, or -errno where userfaultfd is refused (not privileged, no kernel
 * support, a seccomp filter): the caller skips. */
static inline int t_held_init(struct t_held *h)
{
	struct uffdio_api api = { .api = UFFD_API, .features = UFFD_FEATURE_THREAD_ID };
	struct uffdio_register reg;

	h->size = (size_t)sysconf(_SC_PAGESIZE);
	h->page = MAP_FAILED;
	h->uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (h->uffd < 0)
		return -errno;
	if (ioctl(h->uffd, UFFDIO_API, &api) < 0) {
		int e = errno;

		close(h->uffd);
		return -e;
	}
	h->page = mmap(NULL, h->size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (h->page == MAP_FAILED)
		return -errno;
	reg.range.start = (uintptr_t)h->page;
	reg.range.len = h->size;
	reg.mode = UFFDIO_REGISTER_MODE_MISSING;
	if (ioctl(h->uffd, UFFDIO_REGISTER, &reg) < 0)
		return -errno;
	return 0;
}

/* Wait up to ms for the page's fault: the faulting thread's id, or 0. */
static inline pid_t t_held_wait(struct t_held *h, int ms)
{
	struct pollfd p = { h->uffd, POLLIN, 0 };
	struct uffd_msg m;

	for (;;) {
		int n = poll(&p, 1, ms);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return 0;
		if (read(h->uffd, &m, sizeof(m)) == (ssize_t)sizeof(m) &&
		    m.event == UFFD_EVENT_PAGEFAULT)
			return (pid_t)m.arg.pagefault.feat.ptid;
	}
}

/* Let the faulting copy go on: the page is mapped (zeroed) for it. */
static inline void t_held_release(struct t_held *h)
{
	struct uffdio_zeropage z = { .range = { (uintptr_t)h->page, h->size }, .mode = 0 };

	(void)ioctl(h->uffd, UFFDIO_ZEROPAGE, &z);
}

/* Hold the page again for the next round: unmapped, still registered. */
static inline void t_held_rearm(struct t_held *h)
{
	(void)madvise(h->page, h->size, MADV_DONTNEED);
}

static inline void t_held_fini(struct t_held *h)
{
	munmap(h->page, h->size);
	close(h->uffd);
}

#ifndef T_PRIO_NO_KAIO   /* the drop-in's tests have libaio's <libaio.h> instead */
#include <linux/aio_abi.h>

/* One iocb on the kernel's own AIO (raw system calls): the event's res, or
 * io_submit's -errno when it refused the iocb. */
static inline long t_kaio(int fd, int op, void *buf, size_t len, int64_t off, int rw_flags,
			  bool has_prio, uint16_t prio)
{
	aio_context_t c = 0;
	struct iocb cb, *list[1] = { &cb };
	struct io_event ev;
	long r;

	if (syscall(SYS_io_setup, 4, &c) < 0)
		return -1000 - errno;
	memset(&cb, 0, sizeof(cb));
	cb.aio_fildes = (uint32_t)fd;
	cb.aio_lio_opcode = (uint16_t)op;
	cb.aio_buf = (uint64_t)(uintptr_t)buf;
	cb.aio_nbytes = len;
	cb.aio_offset = off;
	cb.aio_rw_flags = rw_flags;
	if (has_prio) {
		cb.aio_flags = IOCB_FLAG_IOPRIO;
		cb.aio_reqprio = (int16_t)prio;
	}
	r = syscall(SYS_io_submit, c, 1L, list);
	if (r < 0) {
		r = -errno;
	} else {
		struct timespec ts = { 30, 0 };

		r = syscall(SYS_io_getevents, c, 1L, 1L, &ev, &ts) == 1 ? (long)ev.res : -ETIMEDOUT;
	}
	syscall(SYS_io_destroy, c);
	return r;
}
#endif

#endif /* T_PRIO_H */

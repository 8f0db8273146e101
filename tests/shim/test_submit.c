/* SPDX-License-Identifier: MIT */
/*
 * io_submit: what is refused at submit and with which errno, order of
 * processing, aio_key, and -EAGAIN when the context is full.
 */
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include "t_aio.h"

#ifndef RWF_NOWAIT
#define RWF_NOWAIT 0x08
#endif
#define T_RWF_APPEND 0x10
#define T_RWF_NOAPPEND 0x20
#define T_RWF_ATOMIC 0x40

TestSuite(submit, .init = t_setup, .fini = t_teardown);

static char buf[8192];

T_AIO_FIXTURE(65536, 5)

/* Submit one iocb that must be refused with err, and nothing may arrive. */
static void refused(struct iocb *cb, int err)
{
	struct io_event ev;
	struct timespec zero = { 0, 0 };

	T_EXPECT(t_submit1(ctx, cb), err);
	T_EXPECT(io_getevents(ctx, 0, 1, &ev, &zero), 0);
}

Test(submit, bad_fd, .init = setup, .fini = teardown)
{
	struct iocb cb;
	int wr = open("/dev/null", O_WRONLY), rd;
	char path[4096];

	io_prep_pread(&cb, -1, buf, 16, 0);
	refused(&cb, -EBADF);
	io_prep_pread(&cb, 1000, buf, 16, 0);
	refused(&cb, -EBADF);
	/* Wrong access mode. */
	rd = t_file_path(4096, 6, path, sizeof(path));
	close(rd);
	rd = open(path, O_RDONLY);
	io_prep_pwrite(&cb, rd, buf, 16, 0);
	refused(&cb, -EBADF);
	close(wr);
	wr = open(path, O_WRONLY);
	io_prep_pread(&cb, wr, buf, 16, 0);
	refused(&cb, -EBADF);
	/* EBADF before an offset the kernel would refuse: the mode is checked first. */
	io_prep_pwrite(&cb, rd, buf, 16, -1);
	refused(&cb, -EBADF);
	close(rd);
	close(wr);
}

Test(submit, bad_opcodes, .init = setup, .fini = teardown)
{
	static const short ops[] = { 4, IO_CMD_NOOP, 9, 42, -1 };
	struct iocb cb;

	for (unsigned i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		io_prep_pread(&cb, fd, buf, 16, 0);
		cb.aio_lio_opcode = ops[i];
		refused(&cb, -EINVAL);
	}
}

Test(submit, bad_offsets_and_sizes, .init = setup, .fini = teardown)
{
	struct iocb cb;

	io_prep_pread(&cb, fd, buf, 16, -1);
	refused(&cb, -EINVAL);
	io_prep_pwrite(&cb, fd, buf, 16, -4096);
	refused(&cb, -EINVAL);
	io_prep_pread(&cb, fd, buf, 100, 0x7fffffffffffffffLL - 10);
	refused(&cb, -EINVAL);
	io_prep_pread(&cb, fd, buf, (size_t)-1, 0);
	refused(&cb, -EINVAL);
}

Test(submit, reserved_field, .init = setup, .fini = teardown)
{
	struct iocb cb;

	io_prep_pread(&cb, fd, buf, 16, 0);
	cb.u.c.__pad3 = 1;      /* the kernel's aio_reserved2 */
	refused(&cb, -EINVAL);
}

Test(submit, unknown_rw_flags, .init = setup, .fini = teardown)
{
	struct iovec iov = { buf, 16 };
	struct iocb cb;

	for (int bit = 9; bit < 32; bit++) {
		io_prep_preadv2(&cb, fd, &iov, 1, 0, (int)(1u << bit));
		refused(&cb, -EOPNOTSUPP);
	}
	io_prep_pwritev2(&cb, fd, &iov, 1, 0, T_RWF_APPEND | T_RWF_NOAPPEND);
	refused(&cb, -EINVAL);
	/* Atomic writes need O_DIRECT on a device that has them. */
	io_prep_preadv2(&cb, fd, &iov, 1, 0, T_RWF_ATOMIC);
	refused(&cb, -EOPNOTSUPP);
	/* The flags this kernel knows are accepted. */
	io_prep_preadv2(&cb, fd, &iov, 1, 0, 0x01 | 0x02 | 0x04 | 0x80);
	cr_assert_eq(t_do(ctx, &cb), 16);
}

Test(submit, unknown_aio_flags_ignored, .init = setup, .fini = teardown)
{
	struct iocb cb;

	io_prep_pread(&cb, fd, buf, 16, 0);
	cb.u.c.flags = 0xf0;
	cr_assert_eq(t_do(ctx, &cb), 16);
}

Test(submit, ioprio, .init = setup, .fini = teardown)
{
	struct iocb cb;

	io_prep_pread(&cb, fd, buf, 16, 0);
	cb.u.c.flags = 2;               /* IOCB_FLAG_IOPRIO */
	cb.aio_reqprio = 2 << 13 | 4;   /* best effort, level 4 */
	cr_assert_eq(t_do(ctx, &cb), 16);
	cb.aio_reqprio = 0 << 13 | 1;   /* class NONE with a level */
	refused(&cb, -EINVAL);
	cb.aio_reqprio = (short)(5 << 13);
	refused(&cb, -EINVAL);
	/* Without the flag, aio_reqprio is not looked at. */
	cb.u.c.flags = 0;
	cr_assert_eq(t_do(ctx, &cb), 16);
}

Test(submit, iovec_limits, .init = setup, .fini = teardown)
{
	static struct iovec iov[1025];
	struct iocb cb;
	void *gone = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	for (int i = 0; i < 1025; i++)
		iov[i] = (struct iovec){ buf + i % 4096, 1 };
	io_prep_preadv(&cb, fd, iov, 1025, 0);
	refused(&cb, -EINVAL);
	io_prep_preadv(&cb, fd, iov, 1024, 0);
	cr_assert_eq(t_do(ctx, &cb), 1024);
	io_prep_preadv(&cb, fd, iov, 0, 0);
	cr_assert_eq(t_do(ctx, &cb), 0);
	iov[1].iov_len = (size_t)-1;
	io_prep_preadv(&cb, fd, iov, 2, 0);
	refused(&cb, -EINVAL);
	/* A vector the kernel cannot read. */
	io_prep_preadv(&cb, fd, gone, 2, 0);
	refused(&cb, -EFAULT);
	/* A buffer outside user space is refused at submit ... */
	io_prep_pread(&cb, fd, (void *)0xffff800000000000ull, 4096, 0);
	refused(&cb, -EFAULT);
}

Test(submit, fsync_and_poll_fields, .init = setup, .fini = teardown)
{
	struct iocb cb;
	int p[2];

	cr_assert_eq(pipe(p), 0);
	io_prep_fsync(&cb, fd);
	cb.u.c.nbytes = 1;
	refused(&cb, -EINVAL);
	io_prep_fdsync(&cb, fd);
	cb.u.c.offset = 4096;
	refused(&cb, -EINVAL);
	/* A pipe has no fsync. */
	io_prep_fsync(&cb, p[0]);
	refused(&cb, -EINVAL);
	io_prep_poll(&cb, p[0], POLLIN);
	cb.u.c.offset = 1;
	refused(&cb, -EINVAL);
	io_prep_poll(&cb, p[0], POLLIN);
	cb.u.c.buf = (void *)(uintptr_t)0x10001;        /* events past 16 bits */
	refused(&cb, -EINVAL);
	t_close_pair(p);
}

/* The resfd is looked up before anything else about the request. */
Test(submit, bad_resfd, .init = setup, .fini = teardown)
{
	struct iocb cb;

	io_prep_pread(&cb, fd, buf, 16, 0);
	io_set_eventfd(&cb, fd);        /* a file, not an eventfd */
	refused(&cb, -EINVAL);
	io_prep_pread(&cb, fd, buf, 16, 0);
	io_set_eventfd(&cb, 999);
	refused(&cb, -EBADF);
}

/* aio_key is set to 0 once the fd is known good, even if the iocb is then
 * refused; a bad fd leaves it alone. */
Test(submit, aio_key, .init = setup, .fini = teardown)
{
	struct iocb cb;

	io_prep_pread(&cb, fd, buf, 16, 0);
	cb.key = 77;
	cr_assert_eq(t_do(ctx, &cb), 16);
	cr_assert_eq(cb.key, 0);
	io_prep_pread(&cb, fd, buf, 16, 0);
	cb.aio_lio_opcode = IO_CMD_NOOP;
	cb.key = 77;
	refused(&cb, -EINVAL);
	cr_assert_eq(cb.key, 0);
	io_prep_pread(&cb, 999, buf, 16, 0);
	cb.aio_lio_opcode = IO_CMD_NOOP;
	cb.key = 77;
	refused(&cb, -EBADF);
	cr_assert_eq(cb.key, 77);
}

/* In order, stopping at the first bad iocb: the count of those accepted,
 * or the first one's error. Nothing after the bad one is done. */
Test(submit, stops_at_first_bad, .init = setup, .fini = teardown)
{
	struct iocb cb[4], *list[4] = { &cb[0], &cb[1], &cb[2], &cb[3] };
	struct io_event ev[4];
	struct timespec zero = { 0, 0 };
	char wbuf[512], back[512];

	memset(wbuf, 'W', sizeof(wbuf));
	io_prep_pread(&cb[0], fd, buf, 4096, 0);
	io_prep_pread(&cb[1], fd, buf + 4096, 4096, 4096);
	io_prep_pread(&cb[2], fd, buf, 16, -1);                 /* bad */
	io_prep_pwrite(&cb[3], fd, wbuf, sizeof(wbuf), 8192);   /* never done */
	T_EXPECT(io_submit(ctx, 4, list), 2);
	t_reap(ctx, 2, ev);
	cr_assert_eq(ev[0].res + ev[1].res, 8192);
	T_EXPECT(io_getevents(ctx, 0, 4, ev, &zero), 0);
	cr_assert_eq(pread(fd, back, sizeof(back), 8192), (ssize_t)sizeof(back));
	t_check(back, sizeof(back), 8192, 5);

	T_EXPECT(io_submit(ctx, 2, &list[2]), -EINVAL);
	T_EXPECT(io_submit(ctx, 0, list), 0);
	T_EXPECT(io_submit(ctx, -1, list), -EINVAL);
	T_EXPECT(io_getevents(ctx, 0, 4, ev, &zero), 0);
}

/* Full: in flight plus unreaped reaches the ring's room; reaping frees it. */
Test(submit, eagain_when_full, .init = setup, .fini = teardown)
{
	io_context_t small = t_ctx(4);
	struct t_aio_ring *ring = (void *)small;
	struct io_event *ev = calloc(ring->nr, sizeof(*ev));
	struct iocb *cbs = calloc(ring->nr, sizeof(*cbs));
	struct timespec zero = { 0, 0 };
	unsigned n = 0;
	int r;

	for (;;) {
		io_prep_pread(&cbs[n], fd, buf, 1, 0);
		r = T_CALL(t_submit1(small, &cbs[n]));
		if (r != 1)
			break;
		n++;
		cr_assert_lt(n, ring->nr, "accepted more than the ring holds");
	}
	cr_assert_eq(r, -EAGAIN);
	cr_assert_geq(n, 4, "full after %u of 4 requests", n);
	/* Reaping one makes room for one. */
	T_EXPECT(io_getevents(small, 1, 1, ev, &zero), 1);
	io_prep_pread(&cbs[n], fd, buf, 1, 0);
	T_EXPECT(t_submit1(small, &cbs[n]), 1);
	t_reap(small, n, ev);
	for (unsigned i = 0; i < n; i++)
		cr_assert_eq(ev[i].res, 1);
	T_EXPECT(io_destroy(small), 0);
	free(ev);
	free(cbs);
}

/* The kernel copies the iocb: the caller may reuse it at once. */
Test(submit, iocb_reusable_after_submit, .init = setup, .fini = teardown)
{
	struct iocb cb, *list[1] = { &cb };
	struct io_event ev[2];
	char a[4096], b[4096];

	io_prep_pread(&cb, fd, a, sizeof(a), 0);
	cb.data = (void *)0xa;
	T_EXPECT(io_submit(ctx, 1, list), 1);
	io_prep_pread(&cb, fd, b, sizeof(b), 8192);
	cb.data = (void *)0xb;
	T_EXPECT(io_submit(ctx, 1, list), 1);
	memset(&cb, 0xff, sizeof(cb));
	t_reap(ctx, 2, ev);
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(ev[i].res, 4096);
		cr_assert_eq((void *)ev[i].obj, (void *)&cb);
	}
	cr_assert(ev[0].data != ev[1].data);
	t_check(a, sizeof(a), 0, 5);
	t_check(b, sizeof(b), 8192, 5);
}

/* SPDX-License-Identifier: MIT */
/*
 * O_DIRECT descriptors keep working, in the same completion stream as
 * buffered ones.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "t_aio.h"

TestSuite(direct, .init = t_setup, .fini = t_teardown);

Test(direct, mixed_with_buffered)
{
	enum { SZ = 64 * 1024 };
	io_context_t ctx = t_ctx(16);
	char path[4096];
	int fd = t_file_path(1 << 20, 70, path, sizeof(path)), dfd;
	void *w = NULL, *r1 = NULL, *r2 = NULL;
	char b[4096];
	struct iocb cb[3], *list[3] = { &cb[0], &cb[1], &cb[2] };
	struct io_event ev[3];

	cr_assert_eq(fsync(fd), 0);
	dfd = open(path, O_RDWR | O_DIRECT);
	if (dfd < 0)
		cr_skip_test("O_DIRECT refused here: %s", strerror(errno));
	cr_assert_eq(posix_memalign(&w, 4096, SZ), 0);
	cr_assert_eq(posix_memalign(&r1, 4096, SZ), 0);
	cr_assert_eq(posix_memalign(&r2, 4096, SZ), 0);
	t_fill(w, SZ, 512 * 1024, 71);
	io_prep_pwrite(&cb[0], dfd, w, SZ, 512 * 1024);
	io_prep_pread(&cb[1], dfd, r1, SZ, 0);
	io_prep_pread(&cb[2], fd, b, sizeof(b), 4096);
	T_EXPECT(io_submit(ctx, 3, list), 3);
	t_reap(ctx, 3, ev);
	for (int i = 0; i < 3; i++) {
		struct iocb *o = (struct iocb *)ev[i].obj;

		cr_assert_eq(ev[i].res, o == &cb[2] ? 4096 : SZ);
	}
	t_check(r1, SZ, 0, 70);
	t_check(b, sizeof(b), 4096, 70);
	io_prep_pread(&cb[0], dfd, r2, SZ, 512 * 1024);
	cr_assert_eq(t_do(ctx, &cb[0]), SZ);
	t_check(r2, SZ, 512 * 1024, 71);
	/* Misaligned O_DIRECT: the filesystem's EINVAL, in the event. */
	io_prep_pread(&cb[0], dfd, (char *)r2 + 1, 4096, 0);
	cr_assert_eq(t_do(ctx, &cb[0]), -EINVAL);
	T_EXPECT(io_destroy(ctx), 0);
	free(w);
	free(r1);
	free(r2);
	close(dfd);
	close(fd);
}

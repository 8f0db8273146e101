/* SPDX-License-Identifier: MIT */
/*
 * The fault suite's helpers: see f_helpers.h. Per test process state, as
 * in t_helpers.c; everything here runs on the test's own thread.
 */
#include "f_helpers.h"
#include "f_loop.h"

#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

const uint32_t f_backends[2] = { FSAIO_BACKEND_THREADS, FSAIO_BACKEND_URING };

const char *f_backend_name(uint32_t b)
{
	return b == FSAIO_BACKEND_URING ? "uring" : b == FSAIO_BACKEND_THREADS ? "threads" : "auto";
}

void f_skip(const char *fmt, ...)
{
	va_list ap;

	printf("SKIP: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(NULL);
	f_teardown();
	_exit(T_SKIP_STATUS);
}

void f_op_prep(struct f_op *o, unsigned i, int rfd, int wfd, uint8_t *buf,
	       size_t rlen, size_t wlen, unsigned wseed)
{
	o->kind = i % 8 == 7 ? 2 : i % 4 == 3 ? 1 : 0;
	o->nev = 0;
	if (o->kind == 0) {
		memset(buf, 0xee, rlen);
		fsaio_prep_pread(&o->r, rfd, buf, rlen, (int64_t)i * 160 * KiB);
	} else if (o->kind == 1) {
		t_fill_pattern(buf, wlen, (uint64_t)i * wlen, wseed);
		fsaio_prep_pwrite(&o->r, wfd, buf, wlen, (int64_t)(i * wlen));
	} else {
		fsaio_prep_fsync(&o->r, wfd);
	}
	o->r.user_data = o;
}

bool f_res_ok(int64_t res, uint64_t len, const int *errs)
{
	if (res >= 0)
		return (uint64_t)res <= len;
	for (; errs && *errs; errs++)
		if (res == -*errs)
			return true;
	return false;
}

/* Run mkfs.ext4 on the image: 0, or -1 when the program is not there. */
static int mkfs(const char *img)
{
	pid_t pid = f_mkfs_start(img);

	cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
	int st = t_waitpid_bounded(pid, 60000);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 127)
		return -1;
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "mkfs.ext4 %s failed (status %#x)", img, st);
	return 0;
}

/* Attach img to a free loop device with autoclear: the device detaches
 * itself once nothing holds it. Other programs may take the free device
 * between asking and attaching, hence the retries. */
static void attach(struct f_fs *fs)
{
	int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	if (ctl < 0)
		f_skip("no loop devices (/dev/loop-control: %s)", strerror(errno));
	int imgfd = open(fs->img, O_RDWR | O_CLOEXEC);
	cr_assert_geq(imgfd, 0, "open %s: %s", fs->img, strerror(errno));

	for (int tries = 0; tries < 100; tries++) {
		enum f_loop_fail why;
		int lfd = f_loop_attach_once(ctl, imgfd, fs->dev, sizeof(fs->dev), &why);

		if (lfd >= 0) {
			fs->loopfd = lfd;
			close(imgfd);
			close(ctl);
			return;
		}
		if (why == F_LOOP_NOFREE)
			f_skip("no free loop device (LOOP_CTL_GET_FREE: %s)", strerror(errno));
		if (why == F_LOOP_NOOPEN) {
			/* udev may not have made the node yet. */
			t_sleep_ms(10);
			continue;
		}
		if (errno != EBUSY)
			f_skip("cannot attach a loop device (LOOP_CONFIGURE: %s)", strerror(errno));
	}
	cr_assert_fail("no loop device could be attached in 100 tries");
}

static void do_mount(struct f_fs *fs)
{
	if (mount(fs->dev, fs->mnt, "ext4", 0, NULL) < 0) {
		if (errno == ENODEV)
			f_skip("the kernel has no ext4");
		cr_assert_fail("mount %s on %s: %s", fs->dev, fs->mnt, strerror(errno));
	}
	fs->mounted = true;
	fs->rootfd = open(fs->mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_assert_geq(fs->rootfd, 0, "open %s: %s", fs->mnt, strerror(errno));
}

/* The file systems mounted by this test, for f_teardown. */
static struct f_fs *f_mounted[8];
static unsigned f_nmounted;

void f_teardown(void)
{
	for (unsigned i = 0; i < f_nmounted; i++) {
		struct f_fs *fs = f_mounted[i];
		if (fs->rootfd >= 0)
			close(fs->rootfd);
		fs->rootfd = -1;
		if (fs->mounted)
			umount2(fs->mnt, MNT_DETACH);
		fs->mounted = false;
		rmdir(fs->mnt);
		unlink(fs->img);
		if (fs->loopfd >= 0)
			close(fs->loopfd);
		fs->loopfd = -1;
	}
	f_nmounted = 0;
	t_teardown();
}

void f_fs_mount(struct f_fs *fs, unsigned mib)
{
	static bool own_ns;

	memset(fs, 0, sizeof(*fs));
	fs->loopfd = fs->rootfd = -1;
	cr_assert_lt(f_nmounted, sizeof(f_mounted) / sizeof(f_mounted[0]));
	f_mounted[f_nmounted++] = fs;
	if (geteuid() != 0)
		f_skip("needs root (loop devices and mount)");
	if (!own_ns) {
		/* A mount namespace of the process's own: its mounts go with it. */
		if (unshare(CLONE_NEWNS) < 0)
			f_skip("no mount namespace (unshare: %s)", strerror(errno));
		cr_assert_eq(mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL), 0,
			     "making / private: %s", strerror(errno));
		own_ns = true;
	}
	static unsigned seq;
	snprintf(fs->img, sizeof(fs->img), "%s/ext4-%u.img", t_dir(), seq);
	snprintf(fs->mnt, sizeof(fs->mnt), "%s/mnt-%u", t_dir(), seq);
	seq++;
	int fd = open(fs->img, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0, "create %s: %s", fs->img, strerror(errno));
	cr_assert_eq(ftruncate(fd, (off_t)mib * MiB), 0);
	close(fd);
	if (mkfs(fs->img) < 0)
		f_skip("no mkfs.ext4 (e2fsprogs)");
	attach(fs);
	/* The device holds the image open; its name is not needed any more. */
	unlink(fs->img);
	cr_assert_eq(mkdir(fs->mnt, 0700), 0, "mkdir %s: %s", fs->mnt, strerror(errno));
	do_mount(fs);
}

void f_fs_shutdown(struct f_fs *fs)
{
	uint32_t how = F_GOING_FLAGS_NOLOGFLUSH;

	cr_assert_eq(ioctl(fs->rootfd, EXT4_IOC_SHUTDOWN, &how), 0,
		     "EXT4_IOC_SHUTDOWN: %s", strerror(errno));
}

void f_fs_unmount(struct f_fs *fs)
{
	if (fs->rootfd >= 0)
		close(fs->rootfd);
	fs->rootfd = -1;
	if (fs->mounted) {
		/* Lazy: an fd the test still holds must not make it fail. */
		cr_assert_eq(umount2(fs->mnt, MNT_DETACH), 0, "umount %s: %s", fs->mnt, strerror(errno));
		fs->mounted = false;
	}
}

void f_fs_remount(struct f_fs *fs)
{
	f_fs_unmount(fs);
	do_mount(fs);
}

int f_fs_open(struct f_fs *fs, const char *name, int flags)
{
	int fd = openat(fs->rootfd, name, flags | O_CLOEXEC, 0600);

	cr_assert_geq(fd, 0, "open %s/%s: %s", fs->mnt, name, strerror(errno));
	return fd;
}

int f_fs_file(struct f_fs *fs, const char *name, size_t size, unsigned seed)
{
	int fd = f_fs_open(fs, name, O_RDWR | O_CREAT | O_TRUNC);
	uint8_t *buf = malloc(MiB);

	cr_assert_not_null(buf);
	for (size_t off = 0; off < size; off += MiB) {
		size_t n = size - off < MiB ? size - off : MiB;
		t_fill_pattern(buf, n, off, seed);
		cr_assert_eq(pwrite(fd, buf, n, (off_t)off), (ssize_t)n, "write %s: %s", name, strerror(errno));
	}
	free(buf);
	cr_assert_eq(fsync(fd), 0, "fsync %s: %s", name, strerror(errno));
	return fd;
}

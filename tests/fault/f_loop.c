/* SPDX-License-Identifier: MIT */
/*
 * Loop-device ext4 images: see f_loop.h.
 */
#include "f_loop.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

pid_t f_mkfs_start(const char *img)
{
	pid_t pid = fork();

	if (pid != 0)
		return pid;
	int null = open("/dev/null", O_WRONLY);
	if (null >= 0) {
		dup2(null, 1);
		dup2(null, 2);
	}
	/* 4 KiB blocks as on a real disk; everything initialised now, so no
	 * lazy-init thread writes during the test. */
	char *argv[] = { "mkfs.ext4", "-q", "-F", "-b", "4096",
			 "-E", "lazy_itable_init=0,lazy_journal_init=0,nodiscard",
			 (char *)img, NULL };
	setenv("PATH", "/usr/sbin:/sbin:/usr/bin:/bin", 1);
	execvp(argv[0], argv);
	_exit(127);
}

int f_loop_attach_once(int ctl, int imgfd, char *dev, size_t devlen, enum f_loop_fail *why)
{
	int n = ioctl(ctl, LOOP_CTL_GET_FREE);

	if (n < 0) {
		*why = F_LOOP_NOFREE;
		return -1;
	}
	snprintf(dev, devlen, "/dev/loop%d", n);
	/* Without udev nobody makes the node of a new device. */
	if (access(dev, F_OK) < 0)
		(void)mknod(dev, S_IFBLK | 0660, makedev(7, (unsigned)n));
	int lfd = open(dev, O_RDWR | O_CLOEXEC);
	if (lfd < 0) {
		*why = F_LOOP_NOOPEN;
		return -1;
	}
	struct loop_config cfg = { .fd = (uint32_t)imgfd };
	cfg.info.lo_flags = LO_FLAGS_AUTOCLEAR;
	if (ioctl(lfd, LOOP_CONFIGURE, &cfg) == 0)
		return lfd;
	int e = errno;
	close(lfd);
	errno = e;
	*why = F_LOOP_CONFIGURE;
	return -1;
}

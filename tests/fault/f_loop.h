/* SPDX-License-Identifier: MIT */
/*
 * Loop-device ext4 images, the steps the fault suite (f_helpers.c) and the
 * stress program (stress/stress_long.c) share. Plain C that asserts
 * nothing: each caller decides what a failure means (a failed test, a
 * skipped one, or plain files instead).
 */
#ifndef F_LOOP_H
#define F_LOOP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/types.h>

/* ext4's shutdown ioctl (fs/ext4/ext4.h; not in every uapi header set). */
#ifndef EXT4_IOC_SHUTDOWN
#define EXT4_IOC_SHUTDOWN _IOR('X', 125, uint32_t)
#endif
#define F_GOING_FLAGS_NOLOGFLUSH 0x2

/* Start mkfs.ext4 on the image, its output discarded: the child's pid, or
 * -1 (errno set) when fork failed. The child exits 127 when the program is
 * not there. */
pid_t f_mkfs_start(const char *img);

/* Why one attempt of f_loop_attach_once() failed. */
enum f_loop_fail {
	F_LOOP_NOFREE,          /* LOOP_CTL_GET_FREE failed: no device to take */
	F_LOOP_NOOPEN,          /* the device's node could not be opened (yet) */
	F_LOOP_CONFIGURE,       /* LOOP_CONFIGURE refused (EBUSY: taken meanwhile) */
};

/*
 * One attempt to attach imgfd to a free loop device with autoclear (the
 * device detaches itself once nothing holds it); the device's name goes to
 * dev. The device's fd, or -1 with errno set and *why saying which step
 * failed. Other programs may take the free device between asking and
 * attaching: callers try again.
 */
int f_loop_attach_once(int ctl, int imgfd, char *dev, size_t devlen, enum f_loop_fail *why);

#endif /* F_LOOP_H */

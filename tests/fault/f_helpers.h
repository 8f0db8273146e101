/* SPDX-License-Identifier: MIT */
/*
 * Helpers of the fault suite: real faults from real kernel objects.
 *
 * A test that needs a file system that can fail gets a fresh ext4 image on
 * a loop device, mounted in a mount namespace of the test process's own:
 * when the process ends, however it ends, the kernel drops the namespace,
 * the mount with it, and the loop device (attached with autoclear) detaches
 * itself. Nothing is left behind by a crash. The image and the mount point
 * live in the test's directory under the build tree.
 *
 * Such a test needs root, /dev/loop-control, ext4 and mkfs.ext4; without
 * one of them it is skipped with the reason on stdout (exit 77).
 */
#ifndef F_HELPERS_H
#define F_HELPERS_H

#include "t_helpers.h"

#include <limits.h>

#define KiB 1024u
#define MiB (1024u * 1024u)

struct f_fs {
	char img[PATH_MAX];     /* the image file (removed once attached) */
	char mnt[PATH_MAX];     /* the mount point */
	char dev[64];           /* /dev/loopN */
	int loopfd;             /* held open so the device outlives an unmount */
	int rootfd;             /* the mounted file system's root, for ioctls */
	bool mounted;
};

/* The fixture: t_setup, and f_teardown, which unmounts what the test
 * mounted and removes the mount points before t_teardown. */
void f_teardown(void);

/* End the test as skipped, with the reason on stdout. */
_Noreturn void f_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A fresh ext4 of mib MiB, mounted; needs t_setup() first. Skips the test
 * when the machine cannot give one. */
void f_fs_mount(struct f_fs *fs, unsigned mib);
/* Shut the file system down as if its disk had gone (EXT4_IOC_SHUTDOWN,
 * without flushing the journal): from now on every read, write and fsync
 * on it fails with EIO. */
void f_fs_shutdown(struct f_fs *fs);
/* Unmount and mount the same device again (the journal is replayed). */
void f_fs_remount(struct f_fs *fs);
/* Unmount; the device goes when the process ends. Idempotent. */
void f_fs_unmount(struct f_fs *fs);
/* A file on fs: size bytes of the pattern of seed, written back to disk,
 * opened O_RDWR. */
int f_fs_file(struct f_fs *fs, const char *name, size_t size, unsigned seed);
/* Open a file of fs again by name (after a remount). */
int f_fs_open(struct f_fs *fs, const char *name, int flags);

/* Whether res is a byte count in [0, len] or one of the listed -errnos
 * (a list ended by 0). */
bool f_res_ok(int64_t res, uint64_t len, const int *errs);

/* A request of the mixed batches of the limits and allocation tests. */
struct f_op {
	struct fsaio_req r;
	int kind;               /* 0 read, 1 write, 2 fsync */
	int nev;                /* events seen for it */
	int64_t res;
};
/* Request i of such a batch: an fsync of wfd (every 8th), a write of wlen
 * bytes of wseed's pattern at i * wlen (every 4th), else a read of rlen
 * bytes of rfd at i * 160 KiB into buf (filled with 0xee first). Its
 * user_data is o; nev is reset. */
void f_op_prep(struct f_op *o, unsigned i, int rfd, int wfd, uint8_t *buf,
	       size_t rlen, size_t wlen, unsigned wseed);

/* The backends a miss can go to, for the tests run once per backend. */
extern const uint32_t f_backends[2];
const char *f_backend_name(uint32_t b);

#endif /* F_HELPERS_H */

/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: the device's readahead limit, read from sysfs once per device.
 *
 * The engine clips its readahead(2) calls to it (the kernel cuts a larger
 * call to the file's ra_pages silently) and sizes stream windows by it.
 * The fd table asks once per fd, when it learns a file (fdtable.c), so a
 * miss's readahead pays no system call to find it. A small process-wide
 * cache of one atomic word per entry: major:minor in the high half, limit
 * KiB + 1 in the low half, so a reader never pairs one device with
 * another's limit; a collision only costs a second read of sysfs.
 */
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "devra.h"
#include "nocancel.h"

#define DEV_CACHE 16
static _Atomic uint64_t dev_cache[DEV_CACHE];

/* Reached from a submit that runs with the caller's cancellation enabled
 * (fsaio__submit_batch): open, read and close are cancellation points. */
static long read_kb(const char *path)
{
	char buf[32];
	ssize_t n;
	int cs = fsaio__nocancel_begin(), fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		fsaio__nocancel_end(cs);
		return -1;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	fsaio__nocancel_end(cs);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	return strtol(buf, NULL, 10);
}

static long sysfs_kb(unsigned maj, unsigned min)
{
	char p[96];
	long kb;

	/* The disk itself, or the disk above a partition; then the bdi, which
	 * also covers filesystems on no block device of their own. */
	snprintf(p, sizeof(p), "/sys/dev/block/%u:%u/queue/read_ahead_kb", maj, min);
	if ((kb = read_kb(p)) >= 0)
		return kb;
	snprintf(p, sizeof(p), "/sys/dev/block/%u:%u/../queue/read_ahead_kb", maj, min);
	if ((kb = read_kb(p)) >= 0)
		return kb;
	snprintf(p, sizeof(p), "/sys/class/bdi/%u:%u/read_ahead_kb", maj, min);
	return read_kb(p);
}

uint32_t fsaio__file_ra_kb(const struct stat *st)
{
	dev_t dev = S_ISBLK(st->st_mode) ? st->st_rdev : st->st_dev;
	uint64_t key = (uint64_t)((major(dev) & 0xfff) << 20 | (minor(dev) & 0xfffff));
	unsigned i = (unsigned)(key % DEV_CACHE);
	uint64_t w = atomic_load_explicit(&dev_cache[i], memory_order_relaxed);
	long kb;

	if (w && w >> 32 == key)
		return (uint32_t)(w & 0xffffffffu) - 1;
	kb = sysfs_kb(major(dev), minor(dev));
	if (kb < 0)
		kb = FSAIO__RA_DEFAULT_KB;
	if (kb > (long)FSAIO__RA_MAX_KB)
		kb = FSAIO__RA_MAX_KB;
	atomic_store_explicit(&dev_cache[i], key << 32 | (uint64_t)(kb + 1), memory_order_relaxed);
	return (uint32_t)kb;
}

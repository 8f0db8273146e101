/* SPDX-License-Identifier: MIT */
/* The readahead limit of the device a file lives on (devra.c). */
#ifndef FSAIO_DEVRA_H
#define FSAIO_DEVRA_H

#include <stdint.h>
#include <sys/stat.h>

/* When sysfs does not say: the kernel's own default. */
#define FSAIO__RA_DEFAULT_KB 128u
/* The largest limit kept (KiB): what fits the fd table's field. */
#define FSAIO__RA_MAX_KB 0xfffffeu

/* read_ahead_kb of the device holding the file st describes (a block
 * device node: the device itself), at most FSAIO__RA_MAX_KB; cached per
 * device, so sysfs is read once per device and process. */
uint32_t fsaio__file_ra_kb(const struct stat *st);

#endif /* FSAIO_DEVRA_H */

/* SPDX-License-Identifier: MIT */
/* kernel.c: the raw system call. */
#ifndef FSAIO_SHIM_KERNEL_H
#define FSAIO_SHIM_KERNEL_H

/* The kernel's answer as -errno, errno untouched; never through the
 * exported syscall(), which hands the io_* numbers to the drop-in. */
long shim__kernel(long nr, long a, long b, long c, long d, long e, long f);

#include "rawsys.h"

/* The drop-in exports its own syscall() only where it has the raw
 * instruction (syscall.c). */
#ifdef FSAIO_RAW_SYSCALL
#define SHIM_RAW_SYSCALL 1
#define shim__raw6 fsaio__raw6
#endif

#endif /* FSAIO_SHIM_KERNEL_H */

/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: the drop-in's own way to the kernel, for a context it did not
 * make and for FSAIO_SYSCALL=kernel: the syscall instruction where it is
 * known (rawsys.h), glibc's syscall() elsewhere, where the drop-in does
 * not export its own. A leaf.
 */

#include "kernel.h"

long shim__kernel(long nr, long a, long b, long c, long d, long e, long f)
{
	return fsaio__raw6(nr, a, b, c, d, e, f);
}

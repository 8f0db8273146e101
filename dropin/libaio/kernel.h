/* SPDX-License-Identifier: MIT */
/* kernel.c: the raw system call. */
#ifndef FSAIO_SHIM_KERNEL_H
#define FSAIO_SHIM_KERNEL_H

/* The kernel's answer as -errno, errno untouched; never through the
 * exported syscall(), which hands the io_* numbers to the drop-in. */
long shim__kernel(long nr, long a, long b, long c, long d, long e, long f);

#if defined(__x86_64__) && !defined(__ILP32__)
#define SHIM_RAW_SYSCALL 1

/* The syscall instruction with six arguments: the kernel's -errno. */
static inline long shim__raw6(long nr, long a, long b, long c, long d, long e, long f)
{
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}
#endif

#endif /* FSAIO_SHIM_KERNEL_H */

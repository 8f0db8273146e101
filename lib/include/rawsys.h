/* SPDX-License-Identifier: MIT */
/*
 * The kernel's own system call, never through an exported syscall(): the
 * libaio drop-in exports one that serves the io_* numbers itself, and the
 * engine it embeds must reach the real kernel AIO (rw_batch.c).
 */
#ifndef FSAIO_RAWSYS_H
#define FSAIO_RAWSYS_H

#include <errno.h>
#include <unistd.h>

#if defined(__x86_64__) && !defined(__ILP32__)
#define FSAIO_RAW_SYSCALL 1

/* The syscall instruction with six arguments: the kernel's -errno. */
static inline long fsaio__raw6(long nr, long a, long b, long c, long d, long e, long f)
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
#else
/* Elsewhere the drop-in exports no syscall() (kernel.c): glibc's is the
 * kernel's. */
static inline long fsaio__raw6(long nr, long a, long b, long c, long d, long e, long f)
{
	int saved = errno;
	long r = syscall(nr, a, b, c, d, e, f);

	if (r == -1)
		r = -errno;
	errno = saved;
	return r;
}
#endif

#endif /* FSAIO_RAWSYS_H */

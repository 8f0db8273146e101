/* SPDX-License-Identifier: MIT */
/*
 * usercopy.c: reading and writing the caller's memory with the kernel's
 * answer. A copy from or to an address that is unmapped, protected, or not
 * the program's returns -EFAULT instead of killing the program.
 */
#ifndef FSAIO_USERCOPY_H
#define FSAIO_USERCOPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The address off bytes into the caller's object at p, computed as an
 * integer: p may be any value, where pointer arithmetic on it could
 * overflow. */
#define FSAIO__USER_AT(p, off) ((void *)((uintptr_t)(p) + (uintptr_t)(off)))

/* Copy n bytes from src to dst, either of which may be the caller's:
 * 0, or -EFAULT when a byte of either could not be read or written (the
 * bytes before it may have been copied). */
int fsaio__copy_user(void *dst, const void *src, size_t n);

/* [p, p + n) can be read and written: 0 or -EFAULT. It touches one byte
 * of each page (writing back what it read), for memory that the engine
 * will write into later, such as a request. */
int fsaio__user_rw_ok(void *p, size_t n);

/* The fault handler is installed (the copies cost no system call). */
bool fsaio__user_faults_armed(void);

#endif /* FSAIO_USERCOPY_H */

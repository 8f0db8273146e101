/* SPDX-License-Identifier: MIT */
/* usermem.c: the caller's memory, judged and copied as the kernel would. */
#ifndef FSAIO_SHIM_USERMEM_H
#define FSAIO_SHIM_USERMEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* [p, p + len) lies inside the user address range. */
bool shim__user_ok(const void *p, uint64_t len);
/* The same, and not in the first page: for what the shim reads or writes
 * itself, so that NULL is EFAULT. */
bool shim__user_ptr_ok(const void *p, uint64_t len);
/* Copy n bytes from or to the caller's memory: -EFAULT instead of a fault. */
int shim__user_copy(void *dst, const void *src, size_t n, bool to_user);

#endif /* FSAIO_SHIM_USERMEM_H */

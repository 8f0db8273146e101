/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: the caller's memory, as the kernel's access_ok() and
 * copy_{from,to}_user() see it: a pointer outside the user address range
 * is EFAULT by its value alone, and a copy from or to the caller's memory
 * answers EFAULT instead of faulting (the engine's fault-safe copy,
 * lib/base/usercopy.c).
 *
 * The highest user address plus one is learnt once, at load, by asking for
 * a page above the 4-level limit: a kernel with 5-level paging grants it
 * (or has it mapped already), one without refuses any address there.
 * Written once by the constructor, read by any thread after.
 */
#include <errno.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "usercopy.h"
#include "usermem.h"

/* A range [addr, addr + len) is the caller's when addr + len <= limit. */
static uint64_t user_limit = 0x7ffffffff000ull;

__attribute__((constructor)) static void learn_user_limit(void)
{
	int caller_errno = errno;
#if defined(__x86_64__)
	void *want = (void *)(uintptr_t)0x800000000000ull;
	/* Raw calls: the kernel's answer is wanted, not a sanitizer's view of
	 * which addresses a program may map. */
	void *p = (void *)syscall(SYS_mmap, want, 4096, PROT_NONE,
				  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE | MAP_NORESERVE,
				  -1, 0);
	int saved = errno;

	if (p == want)
		syscall(SYS_munmap, p, 4096);
	if (p == want || (p == MAP_FAILED && saved == EEXIST))
		user_limit = 0x00fffffffffff000ull;
	else
		user_limit = 0x7ffffffff000ull;
#else
	/* Elsewhere the widest the kernel may grant (arm64 with 52-bit VAs). */
	user_limit = 1ull << 52;
#endif
	errno = caller_errno;
}

bool shim__user_ok(const void *p, uint64_t len)
{
	uint64_t a = (uint64_t)(uintptr_t)p;

	return a <= user_limit && len <= user_limit - a;
}

/* Never in the first page, which the kernel does not map (mmap_min_addr). */
bool shim__user_ptr_ok(const void *p, uint64_t len)
{
	return (uintptr_t)p >= 4096 && shim__user_ok(p, len);
}

/* Copy from or to the caller's memory: a pointer outside the user range by
 * its value, then the fault-safe copy (usercopy.h) for one that is not
 * mapped as the copy needs. */
int shim__user_copy(void *dst, const void *src, size_t n, bool to_user)
{
	if (!shim__user_ptr_ok(to_user ? dst : src, n))
		return -EFAULT;
	return fsaio__copy_user(dst, src, n);
}

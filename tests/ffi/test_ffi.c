/* SPDX-License-Identifier: MIT */
/*
 * test_ffi LIBFSAIO_FFI.SO: a foreign-function user's view of
 * libfsaio-ffi. The library is dlopen()ed as ctypes or cgo would load it;
 * each prep helper is looked up by name at its version (FSAIO_FFI_0), called
 * on a request full of garbage, and the request it builds must equal, byte
 * for byte, the one the header's inline helper builds from the same
 * garbage with the same arguments. The exported set must be exactly the
 * helpers listed here (the header's, checked by tests/ffi/exports.sh).
 * Exit 0 when all agree, 1 with one line per difference otherwise.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE             /* dlvsym */
#endif
#include <dlfcn.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>

#include "fsaio.h"

static unsigned char buf[64];
static struct iovec iov[3];
static int status;

/* Two requests of the same garbage, one for each side. */
static void garbage(struct fsaio_req *a, struct fsaio_req *b, unsigned char byte)
{
	memset(a, byte, sizeof(*a));
	memset(b, byte, sizeof(*b));
}

static void *helper(void *lib, const char *name)
{
	void *f = dlvsym(lib, name, "FSAIO_FFI_0");

	if (!f) {
		printf("test_ffi: %s@FSAIO_FFI_0 not found: %s\n", name, dlerror());
		status = 1;
	}
	return f;
}

static void same(const char *name, const struct fsaio_req *ffi, const struct fsaio_req *inl)
{
	if (memcmp(ffi, inl, sizeof(*ffi)) != 0) {
		printf("test_ffi: %s built a request unlike the inline helper's\n", name);
		status = 1;
	} else {
		printf("test_ffi: %s: the same %zu bytes as the inline helper\n", name, sizeof(*ffi));
	}
}

int main(int argc, char **argv)
{
	struct fsaio_req a, b;
	void *lib;

	if (argc != 2) {
		fprintf(stderr, "usage: test_ffi LIBFSAIO_FFI.SO\n");
		return 1;
	}
	lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		printf("test_ffi: %s\n", dlerror());
		return 1;
	}

	/* Each helper with arguments that reach every field it sets, from a
	 * different garbage byte each time (0xa5: every field nonzero). */
#define RW(name, ptr, n, off, byte) do { \
		void (*f)(struct fsaio_req *, int, __typeof__(ptr), __typeof__(n), int64_t) = \
			(void (*)(struct fsaio_req *, int, __typeof__(ptr), __typeof__(n), int64_t)) \
			helper(lib, #name); \
		if (f) { \
			garbage(&a, &b, byte); \
			f(&a, 7, ptr, n, off); \
			name(&b, 7, ptr, n, off); \
			same(#name, &a, &b); \
		} \
	} while (0)
	RW(fsaio_prep_pread, (void *)buf, sizeof(buf), (int64_t)1 << 40, 0xa5);
	RW(fsaio_prep_pwrite, (const void *)buf, (size_t)17, (int64_t)-1, 0x5a);
	RW(fsaio_prep_preadv, (const struct iovec *)iov, 3, (int64_t)4096, 0xff);
	RW(fsaio_prep_pwritev, (const struct iovec *)iov, -1, (int64_t)8192, 0x01);
#undef RW
#define SYNC(name, byte) do { \
		void (*f)(struct fsaio_req *, int) = (void (*)(struct fsaio_req *, int))helper(lib, #name); \
		if (f) { \
			garbage(&a, &b, byte); \
			f(&a, 2147483647); \
			name(&b, 2147483647); \
			same(#name, &a, &b); \
		} \
	} while (0)
	SYNC(fsaio_prep_fsync, 0xa5);
	SYNC(fsaio_prep_fdatasync, 0x3c);
#undef SYNC
	{
		void (*f)(struct fsaio_req *, int, short) =
			(void (*)(struct fsaio_req *, int, short))helper(lib, "fsaio_prep_poll");

		if (f) {
			garbage(&a, &b, 0xc3);
			f(&a, 3, (short)(POLLIN | POLLOUT | POLLPRI));
			fsaio_prep_poll(&b, 3, (short)(POLLIN | POLLOUT | POLLPRI));
			same("fsaio_prep_poll", &a, &b);
			garbage(&a, &b, 0xc3);
			f(&a, 3, (short)-1);
			fsaio_prep_poll(&b, 3, (short)-1);
			same("fsaio_prep_poll (all bits)", &a, &b);
		}
	}
	/* The header's private helper is not a symbol of the library. */
	if (dlsym(lib, "fsaio_prep__")) {
		printf("test_ffi: fsaio_prep__ is exported\n");
		status = 1;
	}
	dlclose(lib);
	return status;
}

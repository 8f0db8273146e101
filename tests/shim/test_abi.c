/* SPDX-License-Identifier: MIT */
/*
 * The ABI: struct layouts, the exported symbols and their versions, the
 * 0.1 compatibility forms, and the ring header behind io_context_t.
 */
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "t_aio.h"

_Static_assert(sizeof(struct iocb) == 64, "libaio's iocb is the kernel's 64 bytes");
_Static_assert(sizeof(struct io_event) == 32, "libaio's io_event is the kernel's 32 bytes");
_Static_assert(offsetof(struct iocb, aio_lio_opcode) == 16, "opcode at the kernel's offset");
_Static_assert(offsetof(struct iocb, u.c.buf) == 24, "aio_buf at the kernel's offset");
_Static_assert(offsetof(struct iocb, u.c.flags) == 56, "aio_flags at the kernel's offset");

TestSuite(abi, .init = t_setup, .fini = t_teardown);

/* "name@VER" or "name@@VER" for every defined dynamic symbol of an ELF file. */
static size_t dynsyms(const char *path, char out[][64], size_t max)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	const ElfW(Ehdr) *eh;
	const ElfW(Shdr) *sh, *dynsym = NULL, *versym = NULL, *verdef = NULL;
	const char *base;
	size_t n = 0;

	cr_assert_geq(fd, 0, "open %s", path);
	cr_assert_eq(fstat(fd, &st), 0);
	base = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	cr_assert_neq(base, MAP_FAILED);
	eh = (const void *)base;
	sh = (const void *)(base + eh->e_shoff);
	for (unsigned i = 0; i < eh->e_shnum; i++) {
		if (sh[i].sh_type == SHT_DYNSYM)
			dynsym = &sh[i];
		else if (sh[i].sh_type == SHT_GNU_versym)
			versym = &sh[i];
		else if (sh[i].sh_type == SHT_GNU_verdef)
			verdef = &sh[i];
	}
	cr_assert(dynsym && versym && verdef, "%s has no symbol versions", path);
	const char *strtab = base + sh[dynsym->sh_link].sh_offset;
	const ElfW(Sym) *syms = (const void *)(base + dynsym->sh_offset);
	const ElfW(Half) *vs = (const void *)(base + versym->sh_offset);
	size_t count = dynsym->sh_size / sizeof(ElfW(Sym));

	for (size_t i = 1; i < count; i++) {
		const char *ver = "";
		const char *vdbase = base + verdef->sh_offset;
		const ElfW(Verdef) *vd = (const void *)vdbase;

		if (syms[i].st_shndx == SHN_UNDEF)
			continue;
		for (;;) {
			if (vd->vd_ndx == (vs[i] & 0x7fff)) {
				const ElfW(Verdaux) *aux = (const void *)((const char *)vd + vd->vd_aux);

				ver = base + sh[verdef->sh_link].sh_offset + aux->vda_name;
				break;
			}
			if (!vd->vd_next)
				break;
			vd = (const void *)((const char *)vd + vd->vd_next);
		}
		cr_assert_lt(n, max);
		snprintf(out[n++], 64, "%s%s%s", strtab + syms[i].st_name,
			 (vs[i] & 0x8000) ? "@" : "@@", ver);
	}
	munmap((void *)base, (size_t)st.st_size);
	return n;
}

static int cmp(const void *a, const void *b)
{
	return strcmp(a, b);
}

static const char *lib_of(const char *sym)
{
	Dl_info info;

	cr_assert(dladdr(dlsym(RTLD_DEFAULT, sym), &info) && info.dli_fname);
	return info.dli_fname;
}

/* Besides libaio's symbols, glibc's syscall() under glibc's version, where
 * the drop-in serves the io_* numbers of syscall(2) (x86_64). */
#if defined(__x86_64__) && !defined(__ILP32__)
static const char *const glibc_extra[] = { "GLIBC_2.2.5@@GLIBC_2.2.5", "syscall@@GLIBC_2.2.5" };
#else
static const char *const glibc_extra[] = { NULL };
#endif

/* Take the glibc extras out of syms; assert each was there. */
static size_t drop_glibc_extra(char syms[][64], size_t n)
{
	for (size_t e = 0; e < sizeof(glibc_extra) / sizeof(glibc_extra[0]); e++) {
		size_t i;

		if (!glibc_extra[e])
			continue;
		for (i = 0; i < n && strcmp(syms[i], glibc_extra[e]) != 0; i++)
			;
		cr_assert_lt(i, n, "%s not exported", glibc_extra[e]);
		memmove(syms[i], syms[i + 1], (n - i - 1) * 64);
		n--;
	}
	return n;
}

/* The shim exports exactly what libaio exports, each under the same
 * version, plus glibc's syscall(). */
Test(abi, same_symbols_and_versions_as_libaio)
{
	static char ours[64][64], theirs[64][64];
	size_t a, b;

	T_SHIM_ONLY("compares the shim's symbol table with libaio's");
	a = drop_glibc_extra(ours, dynsyms(lib_of("io_submit"), ours, 64));
	b = dynsyms("/usr/lib/x86_64-linux-gnu/libaio.so.1", theirs, 64);
	qsort(ours, a, 64, cmp);
	qsort(theirs, b, 64, cmp);
	for (size_t i = 0; i < a && i < b; i++)
		cr_assert_str_eq(ours[i], theirs[i]);
	cr_assert_eq(a, b, "%zu symbols exported, libaio has %zu", a, b);
	cr_assert_geq(a, 16);
}

Test(abi, every_versioned_entry_point_resolves)
{
	static const char *const want[][2] = {
		{ "io_setup", "LIBAIO_0.4" }, { "io_destroy", "LIBAIO_0.4" },
		{ "io_submit", "LIBAIO_0.1" }, { "io_getevents", "LIBAIO_0.4" },
		{ "io_getevents", "LIBAIO_0.1" }, { "io_cancel", "LIBAIO_0.4" },
		{ "io_cancel", "LIBAIO_0.1" }, { "io_pgetevents", "LIBAIO_0.5" },
		{ "io_queue_init", "LIBAIO_0.1" }, { "io_queue_release", "LIBAIO_0.1" },
		{ "io_queue_run", "LIBAIO_0.1" }, { "io_queue_wait", "LIBAIO_0.4" },
		{ "io_queue_wait", "LIBAIO_0.1" },
	};
	const char *lib = lib_of("io_submit");

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		void *p = dlvsym(RTLD_DEFAULT, want[i][0], want[i][1]);

		cr_assert_not_null(p, "%s@%s missing", want[i][0], want[i][1]);
		cr_assert_str_eq(lib_of(want[i][0]), lib, "%s not from %s", want[i][0], lib);
	}
}

/* A program's syscall@GLIBC_2.2.5 binds to the drop-in's, ahead of libc's. */
Test(abi, syscall_binds_to_the_drop_in)
{
	void *p = dlvsym(RTLD_DEFAULT, "syscall", "GLIBC_2.2.5");

	T_SHIM_ONLY("the kernel's libaio leaves syscall() to libc");
	if (!glibc_extra[0])
		cr_skip_test("syscall() is exported on x86_64 only");
	cr_assert_not_null(p);
	cr_assert_str_eq(lib_of("syscall"), lib_of("io_submit"));
}

/* The ring behind io_context_t has the kernel's header. */
Test(abi, ring_header)
{
	io_context_t ctx = t_ctx(8);
	struct t_aio_ring *r = (void *)ctx;

	cr_assert_eq(r->magic, T_RING_MAGIC);
	cr_assert_eq(r->header_length, 32);
	cr_assert_eq(r->compat_features, 1);
	cr_assert_eq(r->incompat_features, 0);
	cr_assert_geq(r->nr, 8 * 2, "ring of %u for 8 events", r->nr);
	cr_assert_eq((32 + r->nr * 32ul) % 4096, 0, "the ring fills whole pages");
	cr_assert_eq(r->head, 0);
	cr_assert_eq(r->tail, 0);
	T_EXPECT(io_destroy(ctx), 0);
}

/* The pre-0.4 forms that old binaries call. */
Test(abi, compat_0_1_forms)
{
	typedef int (*getevents01_t)(io_context_t, long, struct io_event *, const struct timespec *);
	typedef int (*cancel01_t)(io_context_t, struct iocb *);
	typedef int (*wait01_t)(io_context_t, struct timespec *);
	getevents01_t getevents01 = (getevents01_t)dlvsym(RTLD_DEFAULT, "io_getevents", "LIBAIO_0.1");
	cancel01_t cancel01 = (cancel01_t)dlvsym(RTLD_DEFAULT, "io_cancel", "LIBAIO_0.1");
	wait01_t wait01 = (wait01_t)dlvsym(RTLD_DEFAULT, "io_queue_wait", "LIBAIO_0.1");
	io_context_t ctx = t_ctx(8);
	int fd = t_file(8192, 1);
	char buf[2][4096];
	struct iocb cb[2], *list[2] = { &cb[0], &cb[1] };
	struct io_event ev[2];
	struct timespec ts = { T_WAIT_SEC, 0 };
	int got = 0;

	cr_assert(getevents01 && cancel01 && wait01);
	io_prep_pread(&cb[0], fd, buf[0], 4096, 0);
	io_prep_pread(&cb[1], fd, buf[1], 4096, 4096);
	T_EXPECT(io_submit(ctx, 2, list), 2);
	/* 0.1's io_getevents(ctx, nr, events, timeout) waits for at least one. */
	while (got < 2) {
		int r = T_CALL(getevents01(ctx, 2 - got, ev + got, &ts));

		cr_assert_gt(r, 0);
		got += r;
	}
	cr_assert_eq(ev[0].res + ev[1].res, 8192);
	/* Nothing left: the {0,0} timeout of 0.1 returns 0 after polling. */
	ts.tv_sec = 0;
	T_EXPECT(getevents01(ctx, 2, ev, &ts), 0);
	/* A finished iocb cannot be cancelled. */
	T_EXPECT(cancel01(ctx, &cb[0]), -EINVAL);
	T_EXPECT(wait01(ctx, &ts), 0);
	T_DONE(ctx, fd);
}

static int run_count;
static long run_res;

static void run_cb(io_context_t ctx, struct iocb *iocb, long res, long res2)
{
	(void)ctx;
	(void)iocb;
	cr_assert_eq(res2, 0);
	run_count++;
	run_res += res;
}

Test(abi, io_queue_helpers)
{
	io_context_t ctx = (io_context_t)0x1;   /* io_queue_init clears it */
	int fd = t_file(16384, 2);
	char buf[4][4096];
	struct iocb cb[4], *list[4];
	struct timespec zero = { 0, 0 };

	T_EXPECT(io_queue_init(0, &ctx), -EINVAL);
	T_EXPECT(io_queue_init(8, &ctx), 0);
	for (int i = 0; i < 4; i++) {
		io_prep_pread(&cb[i], fd, buf[i], 4096, i * 4096);
		io_set_callback(&cb[i], run_cb);
		list[i] = &cb[i];
	}
	T_EXPECT(io_submit(ctx, 4, list), 4);
	while (run_count < 4) {
		struct timespec ts = { T_WAIT_SEC, 0 };

		cr_assert_geq(T_CALL(io_queue_run(ctx)), 0);
		if (run_count < 4) {
			/* io_queue_wait(ctx, ts) is io_getevents(ctx, 0, 0, NULL, ts):
			 * it returns at once, reaping nothing. */
			T_EXPECT(io_getevents(ctx, 0, 0, NULL, &ts), 0);
			usleep(1000);
		}
	}
	cr_assert_eq(run_res, 4 * 4096);
	T_EXPECT(io_queue_run(ctx), 0);
	T_EXPECT(io_getevents(ctx, 0, 1, NULL, &zero), 0);
	T_EXPECT(io_queue_release(ctx), 0);
	T_EXPECT(io_queue_release(ctx), -EINVAL);
	close(fd);
}

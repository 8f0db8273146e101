/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: page-cache residency of a byte range, without touching it.
 *
 * cachestat(2) (Linux 6.5, syscall 451 on every architecture, no glibc
 * wrapper) counts the cached pages of a range for a fraction of what a
 * failed RWF_NOWAIT attempt costs the submitter, so a probe that spares a
 * miss pays for itself. Without cachestat (ENOSYS, or FSAIO_PROBE=mincore),
 * mincore(2) over a temporary mapping stands in; it may report every page
 * resident for files
 * the caller neither owns nor can write, so it is a hint, as is the whole
 * probe: a page can be evicted between probe and read.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <unistd.h>

#include "probe.h"

#ifndef __NR_cachestat
#define __NR_cachestat 451
#endif

struct cs_range { uint64_t off, len; };
struct cs_stat { uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted; };

/* 0 unknown yet, 1 cachestat works, 2 use mincore. Racy first use is fine:
 * every thread reaches the same answer. */
static _Atomic int probe_mode;

static long page_size(void)
{
	static _Atomic long ps;
	long v = atomic_load_explicit(&ps, memory_order_relaxed);

	if (!v) {
		v = sysconf(_SC_PAGESIZE);
		atomic_store_explicit(&ps, v, memory_order_relaxed);
	}
	return v;
}

static enum fsaio__residency classify(uint64_t cached, uint64_t pages)
{
	if (!cached)
		return FSAIO__RES_COLD;
	return cached >= pages ? FSAIO__RES_HOT : FSAIO__RES_PARTIAL;
}

static enum fsaio__residency by_mincore(int fd, uint64_t off, uint64_t len, uint64_t pages)
{
	uint64_t start = off & ~(uint64_t)(page_size() - 1);
	size_t maplen = (size_t)(off + len - start);
	unsigned char vec[256];
	uint64_t cached = 0;
	void *m;

	/* Large ranges: only the head matters for the decision. */
	if (pages > sizeof(vec)) {
		pages = sizeof(vec);
		maplen = (size_t)(pages * (uint64_t)page_size());
	}
	m = mmap(NULL, maplen, PROT_READ, MAP_SHARED, fd, (off_t)start);
	if (m == MAP_FAILED)
		return FSAIO__RES_UNKNOWN;
	if (mincore(m, maplen, vec) == 0)
		for (uint64_t i = 0; i < pages; i++)
			cached += vec[i] & 1;
	else
		cached = pages;         /* unknown: let the inline attempt decide */
	munmap(m, maplen);
	return classify(cached, pages);
}

enum fsaio__residency fsaio__probe(struct fsaio__counters *st, int fd, uint64_t off, uint64_t len)
{
	uint64_t ps = (uint64_t)page_size();
	uint64_t pages = (off + len + ps - 1) / ps - off / ps;
	int mode = atomic_load_explicit(&probe_mode, memory_order_relaxed);
	int saved = errno;
	enum fsaio__residency r;

	if (!len)
		return FSAIO__RES_UNKNOWN;
	FSAIO__COUNT(st, probe_calls, 1);
	if (!mode) {
		const char *e = getenv("FSAIO_PROBE");

		mode = (e && !strcmp(e, "mincore")) ? 2 : 1;
		atomic_store_explicit(&probe_mode, mode, memory_order_relaxed);
	}
	if (mode == 1) {
		struct cs_range rg = { off, len };
		struct cs_stat cs;

		if (syscall(__NR_cachestat, fd, &rg, &cs, 0) == 0) {
			struct stat st;

			r = classify(cs.nr_cache, pages);
			/* Pages past end of file are never cached: judge only
			 * up to it (a read at or past it needs no I/O at all).
			 * Asked only when the answer would send it to a worker. */
			if (r != FSAIO__RES_HOT && fstat(fd, &st) == 0 &&
			    off + len > (uint64_t)st.st_size) {
				uint64_t size = (uint64_t)st.st_size;

				r = off >= size ? FSAIO__RES_HOT :
				    classify(cs.nr_cache, (size + ps - 1) / ps - off / ps);
			}
			errno = saved;
			return r;
		}
		if (errno == ENOSYS || errno == EPERM)
			atomic_store_explicit(&probe_mode, 2, memory_order_relaxed);
		else {
			errno = saved;
			return FSAIO__RES_UNKNOWN;
		}
	}
	r = by_mincore(fd, off, len, pages);
	errno = saved;
	return r;
}

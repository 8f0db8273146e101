/* SPDX-License-Identifier: MIT */
/*
 * fsaio-bench: the table of methods, in the order the reports list them.
 * A method is a path (m_*.c) and how the driver runs it; a variant is
 * another method on the same path, told apart by its flags or its arg.
 *
 * Adding a method: its file m_NAME.c defines a `struct bench_path`, bench.h
 * declares it, an entry here names it and meson.build compiles the file. A
 * variant of an existing path is an entry here only. Nothing else names
 * methods, except the goals in report.c that compare two of them. A variant
 * with extra = true runs only when named.
 */
#include "bench.h"

#include <fsaio.h>
#include <string.h>

static const struct fsaio_params no_readahead = { .flags = FSAIO_CTX_NO_READAHEAD };
static const struct fsaio_params pool_backend = { .miss_backend = FSAIO_BACKEND_THREADS };

const struct bench_method bench_methods[] = {
	{
		.name = "fsaio",
		.what = "libfsaio native API (fsaio_submit/fsaio_getevents) on the buffered file",
		.path = &bench_path_fsaio,
	}, {
		.name = "fsaio-pool",
		.what = "libfsaio native API, buffered, miss_backend = threads: the worker pool carries misses",
		.path = &bench_path_fsaio,
		.arg = &pool_backend,
	}, {
		.name = "fsaio-shim",
		.what = "libfsaio through its libaio drop-in (io_submit/io_getevents ABI), buffered file",
		.path = &bench_path_fsaio_shim,
	}, {
		.name = "kaio-direct",
		.what = "kernel AIO (io_submit) with O_DIRECT: the page cache bypassed",
		.direct = true,
		.path = &bench_path_kaio,
	}, {
		.name = "kaio-buffered",
		.what = "kernel AIO (io_submit) on the buffered file: blocks inside io_submit",
		.path = &bench_path_kaio,
	}, {
		.name = "uring-direct",
		.what = "io_uring (liburing) read/write with O_DIRECT",
		.direct = true,
		.path = &bench_path_uring,
	}, {
		.name = "uring-buffered",
		.what = "io_uring (liburing) read/write on the buffered file",
		.path = &bench_path_uring,
	}, {
		.name = "posix-aio",
		.what = "glibc POSIX AIO (lio_listio, aio_suspend), default settings, buffered file",
		.path = &bench_path_posix_aio,
	}, {
		.name = "fsaio-posix",
		.what = "libfsaio through its POSIX AIO drop-in (lio_listio, aio_suspend), buffered file",
		.extra = true,
		.path = &bench_path_fsaio_posix,
	}, {
		.name = "pread",
		.what = "one thread, synchronous pread/pwrite on the buffered file (depth 1)",
		.sync = true,
		.path = &bench_path_pread,
	}, {
		.name = "threads",
		.what = "a plain pool of N = depth threads doing blocking pread/pwrite, one FIFO",
		.path = &bench_path_threads,
	}, {
		.name = "fsaio-direct",
		.what = "libfsaio native API with O_DIRECT (the engine's io_uring path); only when named",
		.direct = true,
		.extra = true,
		.path = &bench_path_fsaio,
	}, {
		.name = "fsaio-nora",
		.what = "libfsaio native API, buffered, FSAIO_CTX_NO_READAHEAD; only when named",
		.extra = true,
		.path = &bench_path_fsaio,
		.arg = &no_readahead,
	},
};
const unsigned bench_nmethods = sizeof(bench_methods) / sizeof(bench_methods[0]);

_Static_assert(sizeof(bench_methods) / sizeof(bench_methods[0]) <= BENCH_MAX_METHODS,
	       "more methods than BENCH_MAX_METHODS");

const struct bench_method *bench_method_find(const char *name)
{
	for (unsigned i = 0; i < bench_nmethods; i++)
		if (strcmp(bench_methods[i].name, name) == 0)
			return &bench_methods[i];
	return NULL;
}

int bench_method_probe(const struct bench_method *m, const struct bench_job *job,
		       char *why, size_t whylen)
{
	if (m->path->probe && m->path->probe(job, why, whylen) != 0)
		return -1;
	return m->direct ? bench_probe_direct(job, why, whylen) : 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * fsaio-bench: the table of methods, in the order the reports list them.
 *
 * Adding a method: its file m_NAME.c defines one `struct bench_method`,
 * bench.h declares it, one line here lists it and meson.build compiles the
 * file. Nothing else names methods, except the goals in report.c that
 * compare two of them. A variant (extra = true) runs only when named.
 */
#include "bench.h"

#include <string.h>

const struct bench_method *const bench_methods[] = {
	&bench_m_fsaio,
	&bench_m_fsaio_pool,
	&bench_m_fsaio_shim,
	&bench_m_kaio_direct,
	&bench_m_kaio_buffered,
	&bench_m_uring_direct,
	&bench_m_uring_buffered,
	&bench_m_posix_aio,
	&bench_m_fsaio_posix,
	&bench_m_pread,
	&bench_m_threads,
	&bench_m_fsaio_direct,
	&bench_m_fsaio_nora,
};
const unsigned bench_nmethods = sizeof(bench_methods) / sizeof(bench_methods[0]);

_Static_assert(sizeof(bench_methods) / sizeof(bench_methods[0]) <= BENCH_MAX_METHODS,
	       "more methods than BENCH_MAX_METHODS");

const struct bench_method *bench_method_find(const char *name)
{
	for (unsigned i = 0; i < bench_nmethods; i++)
		if (strcmp(bench_methods[i]->name, name) == 0)
			return bench_methods[i];
	return NULL;
}

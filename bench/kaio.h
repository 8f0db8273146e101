/* SPDX-License-Identifier: MIT */
/*
 * fsaio-bench: the iocb loop shared by the methods that speak the Linux AIO
 * ABI (struct iocb / struct io_event): the kernel's own syscalls (m_kaio.c)
 * and libfsaio's libaio drop-in loaded at run time (m_fsaio_shim.c). libaio's
 * struct iocb and struct io_event have the kernel's layout, so one loop
 * serves both; only the four entry points differ. All return -errno.
 */
#ifndef FSAIO_BENCH_KAIO_H
#define FSAIO_BENCH_KAIO_H

#include "bench.h"

#include <linux/aio_abi.h>
#include <time.h>

struct kaio_abi {
	int (*setup)(unsigned nr, unsigned long *ctx);
	int (*submit)(unsigned long ctx, long nr, struct iocb **iocbs);
	int (*getevents)(unsigned long ctx, long min, long nr, struct io_event *ev, struct timespec *ts);
	int (*destroy)(unsigned long ctx);
};

int bench_kaio_setup(const struct kaio_abi *abi, const struct bench_job *job, void **state);
int bench_kaio_submit(void *state, struct bench_slot **slots, unsigned n);
int bench_kaio_reap(void *state, unsigned min, unsigned max, struct bench_slot **done);
void bench_kaio_teardown(void *state);

#endif

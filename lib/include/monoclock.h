/* SPDX-License-Identifier: MIT */
/* CLOCK_MONOTONIC in nanoseconds: the clock of every deadline in the engine
 * and the drop-ins. */
#ifndef FSAIO_MONOCLOCK_H
#define FSAIO_MONOCLOCK_H

#include <stdint.h>
#include <time.h>

static inline int64_t fsaio__mono_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

#endif /* FSAIO_MONOCLOCK_H */

/* SPDX-License-Identifier: MIT */
/* Page-cache residency of a range (probe.c). */
#ifndef FSAIO_PROBE_H
#define FSAIO_PROBE_H

#include <stdint.h>

#include "counters.h"

enum fsaio__residency { FSAIO__RES_UNKNOWN, FSAIO__RES_COLD, FSAIO__RES_PARTIAL, FSAIO__RES_HOT };
/* The residency of [off, off + len) of fd's file, counted in st's probe_calls. */
enum fsaio__residency fsaio__probe(struct fsaio__counters *st, int fd, uint64_t off, uint64_t len);

#endif /* FSAIO_PROBE_H */

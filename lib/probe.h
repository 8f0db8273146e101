/* SPDX-License-Identifier: MIT */
/* Page-cache residency of a range (probe.c). */
#ifndef FSAIO_PROBE_H
#define FSAIO_PROBE_H

#include "req.h"

enum fsaio__residency { FSAIO__RES_UNKNOWN, FSAIO__RES_COLD, FSAIO__RES_PARTIAL, FSAIO__RES_HOT };
enum fsaio__residency fsaio__probe(struct fsaio_ctx *ctx, int fd, uint64_t off, uint64_t len);

#endif /* FSAIO_PROBE_H */

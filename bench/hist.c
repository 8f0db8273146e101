/* SPDX-License-Identifier: MIT */
/*
 * fsaio-bench: latency histograms.
 *
 * DESIGN: log-linear buckets (64 per power of two) make an insert a few
 * instructions and keep the relative error under 0.8 % from 1 ns to
 * centuries, so the driver can record every completion of a 600k IOPS run
 * without storing samples. Values below 128 ns are exact. The maximum is
 * kept exactly. Single-threaded: only the driver's thread records.
 */
#include "driver.h"

#include <string.h>

#define SUB (1u << HIST_SUB_BITS)

static inline unsigned bucket_of(uint64_t v)
{
	if (v < 2 * SUB)
		return (unsigned)v;
	unsigned msb = 63u - (unsigned)__builtin_clzll(v);
	unsigned shift = msb - HIST_SUB_BITS;           /* >= 1 */
	return shift * SUB + (unsigned)(v >> shift);    /* v >> shift is in [SUB, 2*SUB) */
}

/* The middle of a bucket's range. */
static double bucket_mid(unsigned b)
{
	if (b < 2 * SUB)
		return b;
	unsigned shift = b / SUB - 1;
	uint64_t top = (uint64_t)(b - shift * SUB);
	double lo = (double)(top << shift);
	return lo + (double)((uint64_t)1 << shift) / 2.0;
}

void bench_hist_reset(struct bench_hist *h)
{
	memset(h, 0, sizeof(*h));
}

void bench_hist_add(struct bench_hist *h, uint64_t v)
{
	unsigned b = bucket_of(v);
	if (b >= HIST_BUCKETS)
		b = HIST_BUCKETS - 1;
	h->b[b]++;
	h->n++;
	if (v > h->max)
		h->max = v;
}

double bench_hist_quantile(const struct bench_hist *h, double q)
{
	if (!h->n)
		return 0;
	/* The smallest value with at least q of the samples at or below it. */
	uint64_t rank = (uint64_t)(q * (double)h->n + 0.999999);
	if (rank < 1)
		rank = 1;
	uint64_t seen = 0;
	for (unsigned b = 0; b < HIST_BUCKETS; b++) {
		seen += h->b[b];
		if (seen >= rank) {
			double v = bucket_mid(b);
			return v > (double)h->max ? (double)h->max : v;
		}
	}
	return (double)h->max;
}

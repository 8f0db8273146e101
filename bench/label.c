/* SPDX-License-Identifier: MIT */
/*
 * fsaio-bench: how sizes and cases are written in tables and messages.
 *
 * DESIGN: pure formatting, below the driver and the reports, which both
 * use it; nothing here reads the run or its options.
 */
#include "driver.h"

#include <math.h>
#include <stdio.h>

void bench_size_str(uint64_t v, char *buf, size_t n)
{
	static const char *const u[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	unsigned i = 0;
	double d = (double)v;
	while (d >= 1024 && i < 4) {
		d /= 1024;
		i++;
	}
	if (d == floor(d))
		snprintf(buf, n, "%.0f %s", d, u[i]);
	else
		snprintf(buf, n, "%.2f %s", d, u[i]);
}

/* 4k, 16k, 1m: how sizes are written in the tables. */
static void bs_str(uint32_t v, char *buf, size_t n)
{
	if (v % (1u << 20) == 0)
		snprintf(buf, n, "%um", v >> 20);
	else if (v % 1024 == 0)
		snprintf(buf, n, "%uk", v >> 10);
	else
		snprintf(buf, n, "%u", v);
}

void bench_case_label(const struct bench_case *c, char *buf, size_t n)
{
	char bs[16], cache[16];
	bs_str(c->bs, bs, sizeof(bs));
	if (c->cache == CACHE_MIX)
		snprintf(cache, sizeof(cache), "mix:%u", c->hot_pct);
	else
		snprintf(cache, sizeof(cache), "%s", c->cache == CACHE_COLD ? "cold" : "hot");
	snprintf(buf, n, "%s %s %s %s depth %u", cache, c->pattern == PAT_RAND ? "rand" : "seq",
		 c->rw == RW_READ ? "read" : c->rw == RW_WRITE ? "write" : "mix70/30", bs, c->depth);
}

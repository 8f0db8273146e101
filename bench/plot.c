/* SPDX-License-Identifier: MIT */
/*
 * fsaio-bench: --plot FILE.png through gnuplot.
 *
 * DESIGN: cases that differ only by I/O size form one panel (throughput in
 * MiB/s against size, log-log, one line per method); each other workload gets
 * its own panel in one PNG. The data goes inline as gnuplot datablocks on a
 * pipe, so no temporary files are left behind. Without gnuplot the plot is
 * skipped with a message and the run still succeeds: the table has the data.
 */
#include "driver.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static bool in_path(const char *prog)
{
	const char *path = getenv("PATH");
	char buf[PATH_MAX];
	if (!path)
		path = "/usr/bin:/bin";
	while (*path) {
		size_t n = strcspn(path, ":");
		snprintf(buf, sizeof(buf), "%.*s/%s", (int)n, path, prog);
		if (n && access(buf, X_OK) == 0)
			return true;
		path += n;
		if (*path == ':')
			path++;
	}
	return false;
}

/* One per method, in bench_methods order, distinct from one another. */
static const char *const colours[] = {
	"#6a00c8", "#e377c2", "#1f77b4", "#ff7f0e", "#17becf", "#bcbd22", "#8c564b", "#000000", "#2ca02c",
};

static bool same_panel(const struct bench_case *a, const struct bench_case *b)
{
	return a->pattern == b->pattern && a->rw == b->rw && a->cache == b->cache &&
	       a->hot_pct == b->hot_pct && a->depth == b->depth;
}

int bench_plot(const struct bench_report *rp, const char *png)
{
	unsigned panel_of[256], npanels = 0, first[256];

	if (!in_path("gnuplot")) {
		fprintf(stderr, "fsaio-bench: gnuplot not found, so no plot was written to %s "
			"(apt-get install gnuplot-nox); the table above has the figures\n", png);
		return 0;
	}
	for (unsigned c = 0; c < rp->ncases && c < 256; c++) {
		unsigned p;
		for (p = 0; p < npanels; p++)
			if (same_panel(&rp->cases[first[p]], &rp->cases[c]))
				break;
		if (p == npanels)
			first[npanels++] = c;
		panel_of[c] = p;
	}

	/* "'gnuplot' 2>&1" would mix its chatter with ours: keep its stderr. */
	FILE *g = popen("gnuplot", "w");
	if (!g) {
		fprintf(stderr, "fsaio-bench: starting gnuplot: %s\n", strerror(errno));
		return -1;
	}
	fprintf(g, "set terminal pngcairo size 1000,%u noenhanced font 'sans,10'\n", 420 * npanels + 40);
	fprintf(g, "set output '");
	for (const char *p = png; *p; p++)
		fprintf(g, *p == '\'' ? "''" : "%c", *p);
	fprintf(g, "'\n");
	fprintf(g, "set multiplot layout %u,1 title 'fsaio-bench %s, %s, %s (%s)'\n", npanels, rp->mode,
		rp->kernel, rp->fs.fstype, rp->date);
	fprintf(g, "set logscale xy 2\nset grid\nset key outside right\n"
		"set xlabel 'I/O size (KiB)'\nset ylabel 'MiB/s'\n");

	for (unsigned p = 0; p < npanels; p++) {
		unsigned lines = 0;
		const struct bench_case *fc = &rp->cases[first[p]];
		char title[128];
		snprintf(title, sizeof(title), "%s %s %s, depth %u",
			 fc->cache == CACHE_COLD ? "cold" : fc->cache == CACHE_HOT ? "hot" : "hot/cold mix",
			 fc->pattern == PAT_RAND ? "random" : "sequential",
			 fc->rw == RW_READ ? "reads" : fc->rw == RW_WRITE ? "writes" : "70/30 reads/writes",
			 fc->depth);
		for (unsigned m = 0; m < bench_nmethods; m++) {
			bool any = false;
			for (unsigned c = 0; c < rp->ncases; c++)
				if (panel_of[c] == p && bench_cell_at(rp, c, m)->status == ST_OK)
					any = true;
			if (!any)
				continue;
			fprintf(g, "$D%u_%u << EOD\n", p, m);
			for (unsigned c = 0; c < rp->ncases; c++) {
				const struct bench_cell *cell = bench_cell_at(rp, c, m);
				if (panel_of[c] == p && cell->status == ST_OK)
					fprintf(g, "%g %g\n", rp->cases[c].bs / 1024.0, cell->med.mibps);
			}
			fprintf(g, "EOD\n");
			lines++;
		}
		fprintf(g, "set title '%s'\n", title);
		/* Tics at the sizes measured; a single size still gets a visible range. */
		double lo = 0, hi = 0;
		fprintf(g, "set xtics (");
		for (unsigned c = 0, k = 0; c < rp->ncases; c++) {
			if (panel_of[c] != p)
				continue;
			double x = rp->cases[c].bs / 1024.0;
			fprintf(g, "%s%g", k++ ? ", " : "", x);
			lo = lo == 0 || x < lo ? x : lo;
			hi = x > hi ? x : hi;
		}
		fprintf(g, ")\nset xrange [%g:%g]\n", lo / 1.4, hi * 1.4);
		if (!lines) {
			fprintf(g, "set label 1 'nothing measured' at graph 0.5,0.5 center\n"
				"plot 1 notitle lc rgb 'white'\nunset label 1\n");
			continue;
		}
		fprintf(g, "plot ");
		unsigned k = 0;
		for (unsigned m = 0; m < bench_nmethods; m++) {
			bool any = false;
			for (unsigned c = 0; c < rp->ncases; c++)
				if (panel_of[c] == p && bench_cell_at(rp, c, m)->status == ST_OK)
					any = true;
			if (!any)
				continue;
			/* libfsaio's own lines drawn heavier: they are what the plot is
			 * about; O_DIRECT ones dashed. A fixed colour per method, so
			 * gnuplot's 8-colour cycle never gives two lines the same one. */
			bool ours = !strncmp(bench_methods[m]->name, "fsaio", 5);
			fprintf(g, "%s$D%u_%u using 1:2 with linespoints lw %d dt %d lc rgb '%s' pt 7 ps %s title '%s'",
				k++ ? ", " : "", p, m, ours ? 4 : 2, bench_methods[m]->direct ? 2 : 1,
				colours[m % (sizeof(colours) / sizeof(colours[0]))], ours ? "1.2" : "0.8",
				bench_methods[m]->name);
		}
		fprintf(g, "\n");
	}
	fprintf(g, "unset multiplot\n");
	int st = pclose(g);
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "fsaio-bench: gnuplot failed; no plot in %s\n", png);
		return -1;
	}
	return 0;
}

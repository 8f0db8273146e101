/* SPDX-License-Identifier: MIT */
/*
 * fsaio-bench: --plot FILE.png through gnuplot.
 *
 * DESIGN: cases that differ only by I/O size form one panel (throughput in
 * MiB/s against size, log-log, one line per method); a panel with a single
 * size is a bar chart instead, one bar per method, as a line needs two
 * points. Each workload gets its own panel in one PNG. The data goes inline as gnuplot datablocks on a
 * pipe, so no temporary files are left behind. Without gnuplot a --plot is
 * refused before the run starts (bench_plot_available).
 */
#include "driver.h"

#include <errno.h>
#include <fsaio.h>
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
static const unsigned colours[BENCH_MAX_METHODS] = {
	0x6a00c8, 0xe377c2, 0x1f77b4, 0xff7f0e, 0x17becf, 0xbcbd22, 0x8c564b, 0x000000,
	0x2ca02c, 0xd62728, 0x9467bd, 0x7f7f7f, 0xaec7e8, 0xffbb78, 0x98df8a, 0xc5b0d5,
};

static bool same_panel(const struct bench_case *a, const struct bench_case *b)
{
	return a->pattern == b->pattern && a->rw == b->rw && a->cache == b->cache &&
	       a->hot_pct == b->hot_pct && a->depth == b->depth;
}

/* libfsaio's own methods are what the plot is about: drawn heavier. */
static bool ours(const struct bench_method *m)
{
	return !strncmp(m->name, "fsaio", 5);
}

static bool measured_in_panel(const struct bench_report *rp, const unsigned *panel_of, unsigned p, unsigned m)
{
	for (unsigned c = 0; c < rp->ncases; c++)
		if (panel_of[c] == p && bench_cell_at(rp, c, m)->status == ST_OK)
			return true;
	return false;
}

/* A panel of one I/O size: one bar per method measured, linear MiB/s. */
static void bar_panel(FILE *g, const struct bench_report *rp, unsigned c, unsigned p, const char *title)
{
	unsigned bars = 0;
	fprintf(g, "$B%u << EOD\n", p);
	for (unsigned m = 0; m < bench_nmethods; m++) {
		const struct bench_cell *cell = bench_cell_at(rp, c, m);
		if (cell->status != ST_OK)
			continue;
		fprintf(g, "%u %g %s %u %s\n", bars++, cell->med.mibps, bench_methods[m].name,
			colours[m % BENCH_MAX_METHODS], ours(&bench_methods[m]) ? "1" : "0");
	}
	fprintf(g, "EOD\n");
	fprintf(g, "set title '%s, %.0f KiB'\n", title, rp->cases[c].bs / 1024.0);
	fprintf(g, "unset logscale\nunset key\nset xlabel ''\nset ylabel 'MiB/s'\n"
		"set xtics () rotate by -30 nomirror\nset yrange [0:*]\n");
	if (!bars) {
		fprintf(g, "set xrange [0:1]\nset label 1 'nothing measured' at graph 0.5,0.5 center\n"
			"plot 1 notitle lc rgb 'white'\nunset label 1\n");
	} else {
		fprintf(g, "set xrange [-0.6:%g]\nset style fill solid 0.85 border -1\nset boxwidth 0.7\n",
			bars - 0.4);
		/* Bars of libfsaio's own methods get a heavier outline. */
		fprintf(g, "plot $B%u using 1:2:4:xtic(3) with boxes lc rgb variable notitle, "
			"$B%u using 1:($5 > 0 ? $2 : 1/0) with boxes lw 3 lc rgb 'black' fs empty notitle, "
			"$B%u using 1:2:(sprintf('%%.0f', $2)) with labels offset 0,0.7 notitle\n", p, p, p);
	}
	fprintf(g, "set style fill empty\nset yrange [*:*]\nset xtics norotate mirror\n");
}

/* A panel of several I/O sizes: MiB/s against size, log-log, a line per method. */
static void line_panel(FILE *g, const struct bench_report *rp, const unsigned *panel_of, unsigned p,
		       const char *title)
{
	unsigned lines = 0;
	for (unsigned m = 0; m < bench_nmethods; m++) {
		if (!measured_in_panel(rp, panel_of, p, m))
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
	fprintf(g, "set logscale xy 2\nset key outside right\nset xlabel 'I/O size (KiB)'\nset ylabel 'MiB/s'\n");
	/* Tics at the sizes measured. */
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
		return;
	}
	fprintf(g, "plot ");
	unsigned k = 0;
	for (unsigned m = 0; m < bench_nmethods; m++) {
		if (!measured_in_panel(rp, panel_of, p, m))
			continue;
		/* O_DIRECT lines dashed; a fixed colour per method, so gnuplot's
		 * 8-colour cycle never gives two lines the same one. */
		bool o = ours(&bench_methods[m]);
		fprintf(g, "%s$D%u_%u using 1:2 with linespoints lw %d dt %d lc rgb '#%06x' pt 7 ps %s title '%s'",
			k++ ? ", " : "", p, m, o ? 4 : 2, bench_methods[m].direct ? 2 : 1,
			colours[m % BENCH_MAX_METHODS], o ? "1.2" : "0.8", bench_methods[m].name);
	}
	fprintf(g, "\n");
}

bool bench_plot_available(void)
{
	return in_path("gnuplot");
}

int bench_plot(const struct bench_report *rp, const char *png)
{
	unsigned panel_of[256], npanels = 0, first[256], sizes[256];

	for (unsigned c = 0; c < rp->ncases && c < 256; c++) {
		unsigned p;
		for (p = 0; p < npanels; p++)
			if (same_panel(&rp->cases[first[p]], &rp->cases[c]))
				break;
		if (p == npanels) {
			first[npanels++] = c;
			sizes[p] = 0;
		}
		panel_of[c] = p;
		sizes[p]++;
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
	fprintf(g, "set multiplot layout %u,1 title 'fsaio-bench %s, libfsaio %s, %s, %s (%s)'\n", npanels,
		rp->preset, fsaio_version(), rp->kernel, rp->fs.fstype, rp->started);
	fprintf(g, "set grid\n");

	for (unsigned p = 0; p < npanels; p++) {
		const struct bench_case *fc = &rp->cases[first[p]];
		char title[128];
		snprintf(title, sizeof(title), "%s %s %s, depth %u",
			 fc->cache == CACHE_COLD ? "cold" : fc->cache == CACHE_HOT ? "hot" : "hot/cold mix",
			 fc->pattern == PAT_RAND ? "random" : "sequential",
			 fc->rw == RW_READ ? "reads" : fc->rw == RW_WRITE ? "writes" : "70/30 reads/writes",
			 fc->depth);
		if (sizes[p] == 1)
			bar_panel(g, rp, first[p], p, title);
		else
			line_panel(g, rp, panel_of, p, title);
	}
	fprintf(g, "unset multiplot\n");
	int st = pclose(g);
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "fsaio-bench: gnuplot failed; no plot in %s\n", png);
		return -1;
	}
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * badptr_diff: bad pointers at every entry point, the drop-ins against the
 * kernel and glibc, the native API against the kernel's rules.
 *
 *   badptr_diff libaio DROPIN.so [--table] [--only TEXT] [--jobs N]
 *   badptr_diff posix DROPIN.so [--table] [--only TEXT] [--jobs N]
 *   badptr_diff native [--table] [--only TEXT] [--jobs N]
 *   badptr_diff --cases FAMILY [--expect reference|dropin] [--only TEXT] [--jobs N]
 *
 * libaio and posix run the family's cases twice, each in a fresh process
 * of this program (--cases): once as it is (libaio and the kernel, or
 * glibc) and once with DROPIN.so in LD_PRELOAD, and compare the two lines
 * of every case. native runs its cases once and compares each line with
 * the case's expected one. A difference the family's table allows (the
 * reference crashed in the library's own code, say) is counted apart,
 * with its reason. --table prints every case; otherwise only those that
 * differ. --only runs the cases whose name contains TEXT (and the "sys"
 * lines their allowances compare with); --jobs runs N
 * cases at once (4 by default: most of a case is waiting). --cases prints
 * one family's lines ("NAME<TAB>LINE") as this process runs them, after
 * checking that the entry points come from where --expect says.
 *
 * Exit status: 0 when nothing differs but what is allowed, 1 when a case
 * differs, 2 on bad usage, 3 when the run itself could not be made.
 *
 * Each case runs in a child forked for it (bp.h). Under AddressSanitizer
 * the test sets handle_segv=0 and handle_sigbus=0 (tests/badptr/meson.build):
 * a case's crash must end its child with the signal, as it does in a plain
 * build, not with ASan's report and abort, so that both builds print the
 * same table; and a library's own SIGSEGV handler (a fault-safe copy) must
 * be the one that sees the fault.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bp.h"

/* The families this build has (libaio and the drop-ins are optional). */
static const struct bp_family *const families[] = {
#ifndef BP_NO_LIBAIO
	&bp_libaio,
#endif
#ifndef BP_NO_POSIX
	&bp_posix,
#endif
	&bp_native,
};

static const char *way_name(const struct bp_family *f, unsigned way)
{
	return way == BP_WAY_LIB ? "lib" : way == BP_WAY_SYS ? "sys" : f->name;
}

/* ---------------------------------------------------------- the cases */

/* One case of the run: which, and what its child has said so far. */
struct job {
	const struct bp_case *c;
	unsigned way;
	enum bp_kind k;
	char name[160];
	char line[2048];
	size_t len;
	pid_t pid;
	int fd;         /* the read end of the child's line; -1 once it ended */
	int err;        /* the child's stderr (a memfd); -1 once read */
	bool done;
	bool waited;    /* its child reaped */
};

/* Start the job's child: it runs the case and ends its line (bp_end). */
static void start(struct job *j)
{
	int p[2];

	fflush(stdout);
	fflush(stderr);
	j->err = memfd_create("badptr-stderr", MFD_CLOEXEC);
	if (j->err < 0 || pipe2(p, O_CLOEXEC) < 0 || (j->pid = fork()) < 0) {
		perror("badptr_diff: fork");
		exit(3);
	}
	if (j->pid == 0) {
		close(p[0]);
		dup2(j->err, 2);
		bp_out_set(p[1]);
		/* A case that hangs is a result too. */
		alarm(BP_CASE_SEC);
		j->c->run(j->way, j->k);
		bp_end();
	}
	close(p[1]);
	j->fd = p[0];
}

/*
 * What the child wrote to stderr, passed on to ours; and the gist of a
 * sanitizer's report in it ("FILE:LINE: what", without addresses, which
 * change from run to run), for the line of a child that it stopped.
 */
static void pass_stderr(struct job *j, char *gist, size_t n)
{
	char buf[16384], *e;
	ssize_t r = pread(j->err, buf, sizeof(buf) - 1, 0);

	close(j->err);
	j->err = -1;
	gist[0] = 0;
	if (r <= 0)
		return;
	buf[r] = 0;
	fprintf(stderr, "[%s]\n%s", j->name, buf);
	if ((e = strstr(buf, ": runtime error: "))) {
		char *from = e, *to;

		while (from > buf && from[-1] != '\n')
			from--;
		to = strcspn(e, "\n") + e;
		*to = 0;
		if (strstr(e, " 0x"))
			*strstr(e, " 0x") = 0;
		snprintf(gist, n, " (%.*s:%s)", (int)(e - from), from, e + 16);
	} else if ((e = strstr(buf, "ERROR: AddressSanitizer: "))) {
		/* "AddressSanitizer: heap-buffer-overflow" */
		e += strlen("ERROR: ");
		e[strlen("AddressSanitizer: ") + strcspn(e + strlen("AddressSanitizer: "), " \n")] = 0;
		snprintf(gist, n, " (%s)", e);
	}
}

/*
 * Read what the job's child said. A line that ends with its newline is a
 * case that ended by itself: its child is reaped later (reap_ended), so
 * that no case waits for another's exit (where the kernel tears an AIO
 * context down, waiting out an RCU grace period). A line cut short is a
 * child that died: how, is its line's end.
 */
static void collect(struct job *j)
{
	ssize_t r = read(j->fd, j->line + j->len, sizeof(j->line) - 1 - j->len);
	char gist[256];
	int status;

	if (r < 0 && errno == EINTR)
		return;
	if (r > 0) {
		j->len += (size_t)r;
		if (j->line[j->len - 1] != '\n' && j->len < sizeof(j->line) - 1)
			return;
	}
	close(j->fd);
	j->fd = -1;
	j->done = true;
	j->line[j->len] = 0;
	/* Each part was said with a space before it. */
	if (j->line[0] == ' ')
		memmove(j->line, j->line + 1, j->len--);
	if (j->len && j->line[j->len - 1] == '\n') {
		j->line[--j->len] = 0;
		pass_stderr(j, gist, sizeof(gist));
		return;
	}
	while (waitpid(j->pid, &status, 0) < 0 && errno == EINTR)
		;
	j->waited = true;
	pass_stderr(j, gist, sizeof(gist));
	if (WIFSIGNALED(status))
		snprintf(j->line + j->len, sizeof(j->line) - j->len, "%skilled by SIG%s%s",
			 j->len ? " | " : "",
			 sigabbrev_np(WTERMSIG(status)) ? sigabbrev_np(WTERMSIG(status)) : "?", gist);
	else
		snprintf(j->line + j->len, sizeof(j->line) - j->len, "%sexit %d%s",
			 j->len ? " | " : "", WEXITSTATUS(status), gist);
}

/* The children of jobs [0, n) whose case ended and whose exit is over
 * (all: waiting for it). Only those: a child that died is waited for by
 * collect, which needs its status. */
static void reap_ended(struct job *jobs, size_t n, bool all)
{
	for (size_t i = 0; i < n; i++) {
		struct job *j = &jobs[i];
		pid_t p;

		if (!j->done || j->waited)
			continue;
		do
			p = waitpid(j->pid, NULL, all ? 0 : WNOHANG);
		while (p < 0 && errno == EINTR);
		j->waited = p != 0;
	}
}

/* Is the case named so run for --only? Those whose name has it, and the
 * "sys" lines that an allowance of such a case compares with. */
static bool wanted(const struct bp_family *f, const char *name, const char *only)
{
	char way[32], entry[64], arg[64], kind[32], twin[256];

	if (!only || strstr(name, only))
		return true;
	if (sscanf(name, "%31s %63s %63s %31s", way, entry, arg, kind) != 4 || strcmp(way, "sys"))
		return false;
	for (size_t i = 0; i < f->nallow; i++) {
		const struct bp_allow *a = &f->allow[i];

		if (a->rule != BP_AS_SYSCALL || strcmp(a->sys_entry, entry) ||
		    (a->arg && strcmp(a->arg, arg)))
			continue;
		snprintf(twin, sizeof(twin), "%s %s %s %s", a->way, a->entry, arg, kind);
		if (strstr(twin, only))
			return true;
	}
	return false;
}

/*
 * Every case of f this process runs, up to `jobs` at once, each in its
 * own child; reported to `each` (name, line) in table order. Cases share
 * only the test files, which the cases read, or write the same bytes to.
 */
static void run_family(const struct bp_family *f, const char *only, int jobs,
		       void (*each)(const char *name, const char *line, void *arg), void *arg)
{
	struct job *all = NULL;
	size_t n = 0, next = 0, reported = 0;

	for (size_t i = 0; i < f->ncases; i++) {
		const struct bp_case *c = &f->cases[i];

		for (unsigned way = 1; way <= BP_WAY_ONE; way <<= 1) {
			for (int k = 0; k < BP_NKINDS; k++) {
				struct job *j;

				if (!(c->ways & way) || !(c->kinds & BP_K(k)))
					continue;
				all = realloc(all, (n + 1) * sizeof(*all));
				if (!all)
					exit(3);
				j = memset(&all[n], 0, sizeof(*j));
				j->c = c;
				j->way = way;
				j->k = (enum bp_kind)k;
				j->fd = -1;
				snprintf(j->name, sizeof(j->name), "%s %s %s %s", way_name(f, way),
					 c->entry, c->arg, bp_kind_names[k]);
				if (wanted(f, j->name, only))
					n++;
			}
		}
	}
	while (reported < n) {
		struct pollfd pf[64];
		size_t who[64];
		int np = 0;

		size_t running = 0;

		for (size_t i = reported; i < next; i++)
			running += !all[i].done;
		/* At most `jobs` running, and 64 not yet reported. */
		while (next < n && running < (size_t)jobs && next - reported < 64) {
			reap_ended(all, next, false);
			start(&all[next++]);
			running++;
		}
		for (size_t i = reported; i < next; i++) {
			if (all[i].done)
				continue;
			pf[np] = (struct pollfd){ all[i].fd, POLLIN, 0 };
			who[np++] = i;
		}
		if (np && poll(pf, (nfds_t)np, -1) < 0 && errno != EINTR)
			exit(3);
		for (int i = 0; i < np; i++)
			if (pf[i].revents)
				collect(&all[who[i]]);
		while (reported < next && all[reported].done) {
			each(all[reported].name, all[reported].line, arg);
			reported++;
		}
	}
	reap_ended(all, n, true);
	free(all);
}

/* ------------------------------------------------------------ results */

struct row {
	char *name;     /* "WAY ENTRY ARG KIND" */
	char *line;
};

struct rows {
	struct row *r;
	size_t n, cap;
};

static void add_row(struct rows *rs, const char *name, const char *line)
{
	if (rs->n == rs->cap) {
		rs->cap = rs->cap ? rs->cap * 2 : 256;
		rs->r = realloc(rs->r, rs->cap * sizeof(*rs->r));
		if (!rs->r)
			exit(3);
	}
	rs->r[rs->n].name = strdup(name);
	rs->r[rs->n].line = strdup(line);
	rs->n++;
}

static const char *find_line(const struct rows *rs, const char *name)
{
	for (size_t i = 0; i < rs->n; i++)
		if (!strcmp(rs->r[i].name, name))
			return rs->r[i].line;
	return NULL;
}

static void print_row(const char *name, const char *line, void *arg)
{
	(void)arg;
	printf("%s\t%s\n", name, line);
	fflush(stdout);
}

static void keep_row(const char *name, const char *line, void *arg)
{
	add_row(arg, name, line);
}

/* The expected line of a native case, by name. */
static const char *expected_line(const struct bp_family *f, const char *name)
{
	char way[32], entry[64], arg[64], kind[32];

	if (sscanf(name, "%31s %63s %63s %31s", way, entry, arg, kind) != 4)
		return NULL;
	for (size_t i = 0; i < f->ncases; i++) {
		const struct bp_case *c = &f->cases[i];

		if (strcmp(c->entry, entry) || strcmp(c->arg, arg) || !c->expect)
			continue;
		for (int k = 0; k < BP_NKINDS; k++)
			if (!strcmp(bp_kind_names[k], kind))
				return c->expect((enum bp_kind)k);
	}
	return NULL;
}

/* ---------------------------------------------------------- two runs */

/* This program again with --cases, the drop-in preloaded or not; its
 * stdout on *fd. */
static pid_t spawn(const struct bp_family *f, const char *dropin, const char *only, int jobs,
		   int *fd)
{
	int p[2];
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0 || (pid = fork()) < 0) {
		perror("badptr_diff: fork");
		exit(3);
	}
	if (pid == 0) {
		const char *argv[10];
		char jobs_arg[16];
		int a = 0;

		dup2(p[1], 1);
		if (dropin) {
			const char *old = getenv("LD_PRELOAD");
			char *v = malloc(strlen(dropin) + (old ? strlen(old) : 0) + 2);

			if (!v)
				_exit(3);
			sprintf(v, "%s%s%s", dropin, old && *old ? ":" : "", old ? old : "");
			setenv("LD_PRELOAD", v, 1);
		}
		argv[a++] = "badptr_diff";
		argv[a++] = "--cases";
		argv[a++] = f->name;
		argv[a++] = "--expect";
		argv[a++] = dropin ? "dropin" : "reference";
		snprintf(jobs_arg, sizeof(jobs_arg), "%d", jobs);
		argv[a++] = "--jobs";
		argv[a++] = jobs_arg;
		if (only) {
			argv[a++] = "--only";
			argv[a++] = only;
		}
		argv[a] = NULL;
		execv("/proc/self/exe", (char **)argv);
		perror("badptr_diff: exec");
		_exit(3);
	}
	close(p[1]);
	*fd = p[0];
	return pid;
}

/* Split what a --cases run printed into rows. */
static void parse(char *out, struct rows *rs)
{
	for (char *l = strtok(out, "\n"); l; l = strtok(NULL, "\n")) {
		char *tab = strchr(l, '\t');

		if (!tab)
			continue;
		*tab = 0;
		add_row(rs, l, tab + 1);
	}
}

/* Both runs at once; each one's rows. */
static void run_both(const struct bp_family *f, const char *dropin, const char *only, int jobs,
		     struct rows *ref, struct rows *got)
{
	struct {
		pid_t pid;
		int fd;
		char *buf;
		size_t len, cap;
	} run[2] = { 0 };
	struct pollfd pf[2];
	int open_runs = 2;

	run[0].pid = spawn(f, NULL, only, jobs, &run[0].fd);
	run[1].pid = spawn(f, dropin, only, jobs, &run[1].fd);
	while (open_runs) {
		for (int i = 0; i < 2; i++)
			pf[i] = (struct pollfd){ run[i].fd, POLLIN, 0 };
		if (poll(pf, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			exit(3);
		}
		for (int i = 0; i < 2; i++) {
			ssize_t r;

			if (run[i].fd < 0 || !(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			if (run[i].cap - run[i].len < 4096) {
				run[i].cap = run[i].cap ? run[i].cap * 2 : 65536;
				run[i].buf = realloc(run[i].buf, run[i].cap);
				if (!run[i].buf)
					exit(3);
			}
			r = read(run[i].fd, run[i].buf + run[i].len, run[i].cap - run[i].len - 1);
			if (r > 0) {
				run[i].len += (size_t)r;
			} else if (r == 0 || errno != EINTR) {
				close(run[i].fd);
				run[i].fd = -1;
				open_runs--;
			}
		}
	}
	for (int i = 0; i < 2; i++) {
		int status;

		while (waitpid(run[i].pid, &status, 0) < 0 && errno == EINTR)
			;
		if (!WIFEXITED(status) || WEXITSTATUS(status)) {
			fprintf(stderr, "badptr_diff: the %s run failed (status %#x)\n",
				i ? "drop-in" : f->ref_name, status);
			exit(3);
		}
		if (!run[i].buf)
			continue;       /* nothing printed: --only matched no case */
		run[i].buf[run[i].len] = 0;
		parse(run[i].buf, i ? got : ref);
		free(run[i].buf);
	}
}

/* --------------------------------------------------------- comparing */

static bool killed(const char *line)
{
	return strstr(line, "killed by SIG") != NULL;
}

/* A reference line through syscall(2) ("= -1 EFAULT ...") as libaio's
 * function reports the same answer ("= -EFAULT ..."). */
static void as_libaio(const char *sys, char *out, size_t n)
{
	if (!strncmp(sys, "= -1 E", 6))
		snprintf(out, n, "= -%s", sys + 5);
	else
		snprintf(out, n, "%s", sys);
}

/* The allowance of f that covers this difference, or NULL. */
static const struct bp_allow *allowed(const struct bp_family *f, const char *name,
				      const char *ref, const char *got, const struct rows *refs)
{
	char way[32], entry[64], arg[64], kind[32];

	if (sscanf(name, "%31s %63s %63s %31s", way, entry, arg, kind) != 4)
		return NULL;
	for (size_t i = 0; i < f->nallow; i++) {
		const struct bp_allow *a = &f->allow[i];
		bool kind_ok = false;

		for (int k = 0; k < BP_NKINDS; k++)
			if ((a->kinds & BP_K(k)) && !strcmp(bp_kind_names[k], kind))
				kind_ok = true;
		if (!kind_ok || (a->way && strcmp(a->way, way)) || (a->entry && strcmp(a->entry, entry)) ||
		    (a->arg && strcmp(a->arg, arg)))
			continue;
		switch (a->rule) {
		case BP_AS_SYSCALL: {
			char sys_name[256], want[2048];
			const char *sys;

			snprintf(sys_name, sizeof(sys_name), "sys %s %s %s", a->sys_entry, arg, kind);
			sys = find_line(refs, sys_name);
			if (!killed(ref) || !sys)
				break;
			as_libaio(sys, want, sizeof(want));
			if (!strcmp(got, want))
				return a;
			break;
		}
		case BP_EFAULT:
			/* -1 and EFAULT; or EFAULT as the value where the call
			 * returns an error number (aio_error). */
			if (killed(ref) && !killed(got) &&
			    (!strncmp(got, "= -1 EFAULT", 11) || !strncmp(got, "= 14", 4)))
				return a;
			break;
		case BP_MAY_CRASH:
			if (killed(got))
				return a;
			break;
		case BP_UBSAN_REPORT:
			if (strstr(got, "exit 1 ("))
				return a;
			break;
		}
	}
	return NULL;
}

static int compare(const struct bp_family *f, const struct rows *ref, const struct rows *got,
		   bool table)
{
	size_t same = 0, ok = 0, differ = 0;
	const char *dname = f == &bp_native ? "libfsaio" : "drop-in";

	for (size_t i = 0; i < ref->n; i++) {
		const char *name = ref->r[i].name, *r = ref->r[i].line;
		const char *g = i < got->n && !strcmp(got->r[i].name, name) ? got->r[i].line :
				find_line(got, name);
		const struct bp_allow *a = NULL;

		if (!g)
			g = "(not run)";
		if (!strcmp(r, g)) {
			same++;
			if (table)
				printf("same     %-52s %s\n", name, r);
			continue;
		}
		a = allowed(f, name, r, g, ref);
		if (a) {
			ok++;
			if (table)
				printf("allowed  %-52s %s: %s || %s: %s  (%s)\n", name, f->ref_name, r,
				       dname, g, a->reason);
			continue;
		}
		differ++;
		if (table)
			printf("DIFF     %-52s %s: %s || %s: %s\n", name, f->ref_name, r, dname, g);
		else
			printf("DIFF %s\n    %-9s %s\n    %-9s %s\n", name, f->ref_name, r, dname, g);
	}
	printf("badptr_diff %s: %zu cases: %zu same, %zu allowed differences, %zu differ "
	       "(%s against %s)\n", f->name, ref->n, same, ok, differ, dname, f->ref_name);
	return differ ? 1 : 0;
}

/* -------------------------------------------------------------- main */

static void usage(FILE *out)
{
	fprintf(out,
		"usage: badptr_diff libaio|posix DROPIN.so [--table] [--only TEXT] [--jobs N]\n"
		"       badptr_diff native [--table] [--only TEXT] [--jobs N]\n"
		"       badptr_diff --cases libaio|posix|native [--expect reference|dropin] "
		"[--only TEXT] [--jobs N]\n");
}

static const struct bp_family *family(const char *name)
{
	for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++)
		if (!strcmp(families[i]->name, name))
			return families[i];
	return NULL;
}

int main(int argc, char **argv)
{
	const struct bp_family *f = NULL;
	const char *dropin = NULL, *only = NULL, *expect = NULL;
	bool cases = false, table = false;
	int jobs = 4;
	struct rows ref = { 0 }, got = { 0 };

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--cases") && i + 1 < argc && !f) {
			cases = true;
			f = family(argv[++i]);
			if (!f) {
				usage(stderr);
				return 2;
			}
		} else if (!strcmp(argv[i], "--expect") && i + 1 < argc) {
			expect = argv[++i];
		} else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
			only = argv[++i];
		} else if (!strcmp(argv[i], "--jobs") && i + 1 < argc) {
			jobs = atoi(argv[++i]);
			if (jobs < 1 || jobs > 64) {
				usage(stderr);
				return 2;
			}
		} else if (!strcmp(argv[i], "--table")) {
			table = true;
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		} else if (!f && family(argv[i])) {
			f = family(argv[i]);
		} else if (f && !cases && f != &bp_native && !dropin && argv[i][0] != '-') {
			dropin = argv[i];
		} else {
			usage(stderr);
			return 2;
		}
	}
	if (!f || (!cases && f != &bp_native && !dropin) ||
	    (expect && strcmp(expect, "reference") && strcmp(expect, "dropin"))) {
		usage(stderr);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (cases || f == &bp_native) {
		const char *wrong = expect && f->origin_error ?
				    f->origin_error(!strcmp(expect, "dropin")) : NULL;

		if (wrong) {
			fprintf(stderr, "badptr_diff: --expect %s, but %s\n", expect, wrong);
			return 3;
		}
		bp_hole_init();
		bp_files_init();
		if (cases)
			run_family(f, only, jobs, print_row, NULL);
		else
			run_family(f, only, jobs, keep_row, &got);
		bp_files_fini();
		if (cases)
			return 0;
		/* native: the expected lines are the reference. */
		for (size_t i = 0; i < got.n; i++) {
			const char *want = expected_line(f, got.r[i].name);

			add_row(&ref, got.r[i].name, want ? want : "(no expected line)");
		}
		return compare(f, &ref, &got, table);
	}
	run_both(f, dropin, only, jobs, &ref, &got);
	return compare(f, &ref, &got, table);
}

/* SPDX-License-Identifier: MIT */
/*
 * fsaio-bench as a tool, end to end: a tiny quick run on a small file in
 * the build tree must write a CSV and a JSON (schema 2) that parse and hold
 * every method of --list, each either measured (with numbers, cost included)
 * or marked unavailable; system calls per I/O are numbers wherever this
 * process can open the counter fsaio-bench uses, else marked not counted; each preset runs under its own name; --help and
 * --version answer on stdout with status 0; bad arguments, tmpfs, an
 * output path that cannot be written and a --plot without gnuplot are
 * refused before the run with one line and status 2; an output that fails
 * at the end gives 1; the JSON is valid whatever bytes a path holds; the
 * scratch file is gone after a run (also one ended by SIGTERM) unless
 * --keep, and a file that was there before is never removed. Nothing here
 * looks at how fast anything was: figures vary, formats must not.
 *
 * FSAIO_BENCH names the program, FSAIO_BENCH_DIR a directory on disk. Tests
 * may run in parallel: each works in its own subdirectory.
 */
#include <criterion/criterion.h>

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <iconv.h>
#include <linux/magic.h>
#include <linux/perf_event.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The methods fsaio-bench knows, read from --list (a method added to its
 * table is covered here without a change). */
#define MAX_METHODS 32
static char methods[MAX_METHODS][32];
static unsigned NMETHODS;

/* Always runnable on a disk file system; io_uring may be switched off (by
 * sysctl or seccomp), and the shim only counts when this tree builds it. */
static bool must_run(const char *m)
{
	if (!strcmp(m, "fsaio-shim"))
		return getenv("FSAIO_BENCH_SHIM_BUILT") != NULL;
	return !strcmp(m, "fsaio") || !strcmp(m, "kaio-buffered") || !strcmp(m, "posix-aio") ||
	       !strcmp(m, "pread") || !strcmp(m, "threads") || !strcmp(m, "fsaio-nora");
}

static int method_idx(const char *m)
{
	for (unsigned i = 0; i < NMETHODS; i++)
		if (!strcmp(methods[i], m))
			return (int)i;
	return -1;
}

/* Starts fsaio-bench with args, stdout to out and stderr to err (or to out
 * as well when err is NULL); returns its pid. */
static pid_t start_bench(const char *const *args, const char *out, const char *err)
{
	const char *bin = getenv("FSAIO_BENCH");
	cr_assert(bin, "FSAIO_BENCH is not set (run through meson test)");
	char *argv[48];
	unsigned n = 0;
	argv[n++] = (char *)bin;
	for (; *args; args++) {
		cr_assert(n < 46, "too many arguments");
		argv[n++] = (char *)*args;
	}
	argv[n] = NULL;
	pid_t pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int fe = err ? open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644) : fd;
		if (fd < 0 || fe < 0)
			_exit(126);
		dup2(fd, 1);
		dup2(fe, 2);
		execv(bin, argv);
		_exit(127);
	}
	return pid;
}

static int wait_status(pid_t pid)
{
	int st;
	while (waitpid(pid, &st, 0) < 0)
		cr_assert(errno == EINTR);
	return st;
}

/* Runs fsaio-bench; stdout and stderr to out and err; returns its exit status. */
static int run_bench2(const char *const *args, const char *out, const char *err)
{
	int st = wait_status(start_bench(args, out, err));
	cr_assert(WIFEXITED(st), "fsaio-bench died (see %s)", out);
	return WEXITSTATUS(st);
}

/* Runs fsaio-bench with argv, both outputs to log; returns its exit status. */
static int run_bench(const char *const *args, const char *log)
{
	return run_bench2(args, log, NULL);
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	cr_assert(f, "cannot open %s: %s", path, strerror(errno));
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	rewind(f);
	char *b = malloc((size_t)n + 1);
	cr_assert(b && fread(b, 1, (size_t)n, f) == (size_t)n);
	b[n] = 0;
	fclose(f);
	return b;
}

static const char *test_dir(void)
{
	const char *d = getenv("FSAIO_BENCH_DIR");
	cr_assert(d, "FSAIO_BENCH_DIR is not set (run through meson test)");
	mkdir(d, 0755);
	return d;
}

/* A directory of its own for one test, without a scratch file left in it. */
static void own_dir(const char *name, char *buf, size_t n)
{
	snprintf(buf, n, "%s/%s", test_dir(), name);
	mkdir(buf, 0755);
	char f[4200];
	snprintf(f, sizeof(f), "%s/fsaio-bench.0.dat", buf);
	unlink(f);
}

static bool exists(const char *dir, const char *name)
{
	char p[4200];
	struct stat st;
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return stat(p, &st) == 0;
}

/* Fills methods[] from fsaio-bench --list: one name at the start of a line. */
static void load_methods(void)
{
	char dir[4096], out[4200];
	if (NMETHODS)
		return;
	own_dir("list", dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/list.out", dir);
	const char *args[] = { "--list", "--dir", dir, NULL };
	cr_assert_eq(run_bench(args, out), 0, "fsaio-bench --list failed (see %s)", out);
	FILE *f = fopen(out, "r");
	char line[512];
	cr_assert(f);
	while (fgets(line, sizeof(line), f)) {
		if (line[0] == ' ' || line[0] == '\n')
			continue;
		cr_assert(NMETHODS < MAX_METHODS);
		cr_assert_eq(sscanf(line, "%31s", methods[NMETHODS]), 1);
		NMETHODS++;
	}
	fclose(f);
	cr_assert_geq(NMETHODS, 9, "--list names %u methods", NMETHODS);
	DIR *d = opendir(dir);
	cr_assert(d);
	for (struct dirent *e; (e = readdir(d)) != NULL;)
		cr_assert(strncmp(e->d_name, ".fsaio-bench-probe", 18), "--list left %s behind", e->d_name);
	closedir(d);
}

/* "2026-12-03T13:45:00Z" */
static bool is_iso_utc(const char *s)
{
	static const char form[] = "dddd-dd-ddTdd:dd:ddZ";
	if (strlen(s) != sizeof(form) - 1)
		return false;
	for (unsigned i = 0; form[i]; i++)
		if (form[i] == 'd' ? !isdigit((unsigned char)s[i]) : s[i] != form[i])
			return false;
	return true;
}

/* "0.2.0" */
static bool is_version(const char *s)
{
	unsigned a, b, c;
	char tail;
	return sscanf(s, "%u.%u.%u%c", &a, &b, &c, &tail) == 3;
}

/* ---- a small JSON reader: enough to check structure and types ---- */

enum jtype { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };
struct jv {
	enum jtype t;
	double num;
	char *str;
	size_t n;
	char **keys;            /* J_OBJ */
	struct jv *kids;        /* J_ARR, J_OBJ */
};

static const char *jp;

static void ws(void)
{
	while (*jp == ' ' || *jp == '\n' || *jp == '\t' || *jp == '\r')
		jp++;
}

static bool jstring(char **out)
{
	if (*jp != '"')
		return false;
	jp++;
	size_t cap = 16, n = 0;
	char *s = malloc(cap);
	while (*jp && *jp != '"') {
		char ch = *jp++;
		if ((unsigned char)ch < 0x20)
			return false;
		if (ch == '\\') {
			ch = *jp++;
			if (ch == 'u') {
				for (int i = 0; i < 4; i++)
					if (!isxdigit((unsigned char)*jp++))
						return false;
				ch = '?';
			} else if (!strchr("\"\\/bfnrt", ch) || !ch) {
				return false;
			}
		}
		if (n + 2 > cap)
			s = realloc(s, cap *= 2);
		s[n++] = ch;
	}
	if (*jp != '"')
		return false;
	jp++;
	s[n] = 0;
	*out = s;
	return true;
}

static bool jvalue(struct jv *v)
{
	ws();
	memset(v, 0, sizeof(*v));
	if (*jp == '{' || *jp == '[') {
		bool obj = *jp == '{';
		char close = obj ? '}' : ']';
		v->t = obj ? J_OBJ : J_ARR;
		jp++;
		ws();
		if (*jp == close) {
			jp++;
			return true;
		}
		for (;;) {
			v->kids = realloc(v->kids, (v->n + 1) * sizeof(*v->kids));
			if (obj) {
				v->keys = realloc(v->keys, (v->n + 1) * sizeof(*v->keys));
				ws();
				if (!jstring(&v->keys[v->n]))
					return false;
				ws();
				if (*jp++ != ':')
					return false;
			}
			if (!jvalue(&v->kids[v->n]))
				return false;
			v->n++;
			ws();
			if (*jp == ',') {
				jp++;
				continue;
			}
			if (*jp++ != close)
				return false;
			return true;
		}
	}
	if (*jp == '"') {
		v->t = J_STR;
		return jstring(&v->str);
	}
	if (!strncmp(jp, "true", 4) || !strncmp(jp, "false", 5)) {
		v->t = J_BOOL;
		jp += *jp == 't' ? 4 : 5;
		return true;
	}
	if (!strncmp(jp, "null", 4)) {
		v->t = J_NULL;
		jp += 4;
		return true;
	}
	char *end;
	v->num = strtod(jp, &end);
	if (end == jp || !(*jp == '-' || isdigit((unsigned char)*jp)))
		return false;
	v->t = J_NUM;
	jp = end;
	return true;
}

static void jfree(struct jv *v)
{
	for (size_t i = 0; i < v->n; i++) {
		jfree(&v->kids[i]);
		if (v->keys)
			free(v->keys[i]);
	}
	free(v->kids);
	free(v->keys);
	free(v->str);
}

static const struct jv *jget(const struct jv *o, const char *key)
{
	if (o->t != J_OBJ)
		return NULL;
	for (size_t i = 0; i < o->n; i++)
		if (!strcmp(o->keys[i], key))
			return &o->kids[i];
	return NULL;
}

static double jnum(const struct jv *o, const char *key, const char *ctx)
{
	const struct jv *v = jget(o, key);
	cr_assert(v && v->t == J_NUM, "%s: \"%s\" is not a number", ctx, key);
	return v->num;
}

/* ---- a small CSV reader ---- */

static unsigned csv_fields(char *line, char **f, unsigned max)
{
	unsigned n = 0;
	char *w = line, *r = line;
	for (;;) {
		cr_assert(n < max, "too many CSV fields");
		f[n++] = w;
		if (*r == '"') {
			r++;
			for (;;) {
				cr_assert(*r, "unterminated quoted CSV field");
				if (*r == '"' && r[1] == '"') {
					*w++ = '"';
					r += 2;
				} else if (*r == '"') {
					r++;
					break;
				} else {
					*w++ = *r++;
				}
			}
		} else {
			while (*r && *r != ',')
				*w++ = *r++;
		}
		cr_assert(*r == ',' || *r == 0, "junk after a quoted CSV field");
		bool more = *r == ',';
		*w++ = 0;
		if (!more)
			return n;
		r++;
	}
}

static bool is_number(const char *s)
{
	char *end;
	if (!*s)
		return false;
	strtod(s, &end);
	return *end == 0;
}

/* Whether this process can open the counter fsaio-bench counts system
 * calls with (syscount.c): then fsaio-bench, run from here, must count. */
static bool syscalls_countable(void)
{
	static const char *const ids[] = {
		"/sys/kernel/tracing/events/raw_syscalls/sys_enter/id",
		"/sys/kernel/debug/tracing/events/raw_syscalls/sys_enter/id",
	};
	long id = -1;
	for (unsigned i = 0; i < 2 && id < 0; i++) {
		FILE *f = fopen(ids[i], "r");
		if (f && fscanf(f, "%ld", &id) != 1)
			id = -1;
		if (f)
			fclose(f);
	}
	if (id < 0)
		return false;
	struct perf_event_attr a;
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_TRACEPOINT;
	a.config = (unsigned long long)id;
	a.inherit = 1;
	long fd = syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return false;
	close((int)fd);
	return true;
}

/* ---- tests ---- */

/* A JSON key that names what the library is judged by must say what it
 * compares: no key anywhere mentions an issue, and the old "mode" is gone. */
static void no_issue_keys(const struct jv *v)
{
	for (size_t i = 0; i < v->n; i++) {
		if (v->t == J_OBJ) {
			cr_assert(!strstr(v->keys[i], "issue"), "JSON key \"%s\"", v->keys[i]);
			cr_assert(strcmp(v->keys[i], "mode"), "JSON still has \"mode\"");
		}
		no_issue_keys(&v->kids[i]);
	}
}

static void parse_json(const char *path, char **text, struct jv *root)
{
	*text = slurp(path);
	jp = *text;
	cr_assert(jvalue(root), "%s does not parse near byte %ld", path, (long)(jp - *text));
	ws();
	cr_assert_eq(*jp, 0, "%s: trailing bytes after the JSON value", path);
}

static const char *jstr(const struct jv *o, const char *key, const char *ctx)
{
	const struct jv *v = jget(o, key);
	cr_assert(v && v->t == J_STR, "%s: \"%s\" is not a string", ctx, key);
	return v->str;
}

/* What --version prints after "fsaio-bench (libfsaio) ". */
static void tool_version(const char *test, char *buf, size_t n)
{
	char dir[4096], out[4200], err[4200];
	own_dir(test, dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/version.out", dir);
	snprintf(err, sizeof(err), "%s/version.err", dir);
	const char *args[] = { "--version", NULL };
	cr_assert_eq(run_bench2(args, out, err), 0, "--version did not exit 0");
	char *o = slurp(out), *e = slurp(err);
	cr_assert_eq(e[0], 0, "--version wrote to stderr: %s", e);
	cr_assert(!strncmp(o, "fsaio-bench (libfsaio) ", 23), "--version said: %s", o);
	const char *v = o + 23;
	size_t len = strcspn(v, "\n");
	cr_assert_eq(v[len], '\n', "--version: no newline");
	cr_assert_eq(v[len + 1], 0, "--version: more than one line: %s", o);
	snprintf(buf, n, "%.*s", (int)len, v);
	cr_assert(is_version(buf), "--version: '%s' is not MAJOR.MINOR.PATCH", buf);
	free(o);
	free(e);
}

Test(bench_output, quick_run_writes_csv_and_json, .timeout = 200)
{
	char dir[4096], csv[4200], json[4200], log[4200], mlist[1024] = "", version[64];
	load_methods();
	tool_version("quick", version, sizeof(version));
	own_dir("quick", dir, sizeof(dir));
	snprintf(csv, sizeof(csv), "%s/out.csv", dir);
	snprintf(json, sizeof(json), "%s/out.json", dir);
	snprintf(log, sizeof(log), "%s/out.log", dir);
	unlink(csv);
	unlink(json);
	/* Every method in the table, variants included. */
	for (unsigned k = 0; k < NMETHODS; k++)
		snprintf(mlist + strlen(mlist), sizeof(mlist) - strlen(mlist), "%s%s", k ? "," : "", methods[k]);
	const char *args[] = { "--quick", "--size", "16m", "--runtime", "0.1", "--ramp", "0.02",
			       "--reps", "1", "--stall-timeout", "30", "--dir", dir, "--csv", csv,
			       "--json", json, "--methods", mlist, NULL };
	int rc = run_bench(args, log);
	cr_assert_eq(rc, 0, "fsaio-bench --quick exited %d (see %s)", rc, log);

	/* The table names the cost beside the speed, and says whether system
	 * calls were counted. */
	char *text = slurp(log);
	cr_assert(strstr(text, "CPU us/IO") && strstr(text, "csw/IO") && strstr(text, "sys/IO"),
		  "the table has no cost columns");
	const bool counted = syscalls_countable();
	cr_assert_eq(!strstr(text, "sys/IO = its system calls per I/O: not counted here"), counted,
		     "the table %s system calls, but this process %s open the counter (see %s)",
		     counted ? "does not count" : "counts", counted ? "can" : "cannot", log);
	cr_assert(strstr(text, "fsaio / O_DIRECT (kaio-direct) IOPS"), "the goals are not named by what they compare");
	free(text);

	/* JSON */
	struct jv root;
	parse_json(json, &text, &root);
	no_issue_keys(&root);
	cr_assert_eq(jnum(&root, "schema", json), 2, "%s: schema is not 2", json);
	cr_assert_str_eq(jstr(&root, "version", json), version, "%s: version differs from --version's", json);
	cr_assert(is_version(jstr(&root, "library_version", json)), "%s: library_version", json);
	cr_assert_str_eq(jstr(&root, "preset", json), "quick");
	const char *started = jstr(&root, "started", json), *finished = jstr(&root, "finished", json);
	cr_assert(is_iso_utc(started), "%s: started '%s' is not ISO 8601 UTC", json, started);
	cr_assert(is_iso_utc(finished), "%s: finished '%s' is not ISO 8601 UTC", json, finished);
	cr_assert_leq(strcmp(started, finished), 0, "%s: finished %s before started %s", json, finished, started);
	const struct jv *jm = jget(&root, "methods");
	cr_assert(jm && jm->t == J_ARR && jm->n == NMETHODS, "%s: \"methods\" does not list the %u of --list",
		  json, NMETHODS);
	const struct jv *goals = jget(&root, "targets");
	cr_assert(goals && goals->t == J_ARR && goals->n == 3, "%s: the quick mode has 3 goals", json);
	for (size_t i = 0; i < goals->n; i++) {
		cr_assert_str_eq(jstr(&goals->kids[i], "preset", "goal"), "cold-vs-direct");
		cr_assert(strstr(jstr(&goals->kids[i], "what", "goal"), " / "), "a goal that compares nothing");
		jnum(&goals->kids[i], "goal_at_least", "goal");
	}
	const struct jv *cases = jget(&root, "cases");
	cr_assert(cases && cases->t == J_ARR && cases->n == 2, "%s: \"cases\" must hold the 2 quick cases", json);
	for (size_t c = 0; c < cases->n; c++) {
		const struct jv *res = jget(&cases->kids[c], "results");
		bool seen[MAX_METHODS] = { false };
		cr_assert(res && res->t == J_ARR, "case %zu has no results", c);
		for (size_t i = 0; i < res->n; i++) {
			const struct jv *r = &res->kids[i], *m = jget(r, "method"), *st = jget(r, "status");
			cr_assert(m && m->t == J_STR && st && st->t == J_STR, "case %zu result %zu: no method/status", c, i);
			int k = method_idx(m->str);
			cr_assert(k >= 0, "unknown method %s", m->str);
			seen[k] = true;
			if (!strcmp(st->str, "unavailable")) {
				cr_assert(!must_run(m->str), "%s is unavailable", m->str);
				const struct jv *why = jget(r, "reason");
				cr_assert(why && why->t == J_STR && why->str[0], "%s: unavailable without a reason", m->str);
				continue;
			}
			cr_assert_str_eq(st->str, "ok", "case %zu: %s has status %s", c, m->str, st->str);
			cr_assert_gt(jnum(r, "iops", m->str), 0, "%s: no IOPS", m->str);
			cr_assert_gt(jnum(r, "mib_s", m->str), 0, "%s: no MiB/s", m->str);
			jnum(r, "cpu_s_per_gib", m->str);
			/* Every I/O costs some CPU; a switch per I/O is possible, none too. */
			cr_assert_gt(jnum(r, "cpu_us_per_io", m->str), 0, "%s: no CPU per I/O", m->str);
			cr_assert_geq(jnum(r, "csw_per_io", m->str), 0, "%s: context switches per I/O", m->str);
			cr_assert_geq(jnum(r, "context_switches", m->str), 0);
			double ios = jnum(r, "ios", m->str);
			cr_assert_gt(ios, 0);
			double want = jnum(r, "context_switches", m->str) / ios;
			cr_assert(fabs(jnum(r, "csw_per_io", m->str) - want) <= 1e-4 * (want + 1),
				  "%s: csw_per_io %g is not context_switches / ios %g", m->str,
				  jnum(r, "csw_per_io", m->str), want);
			const struct jv *spi = jget(r, "sys_per_io"), *sc = jget(r, "syscalls");
			cr_assert(spi && sc, "%s: \"sys_per_io\" or \"syscalls\" missing", m->str);
			if (counted) {
				cr_assert_geq(jnum(r, "sys_per_io", m->str), 0, "%s: system calls per I/O", m->str);
				want = jnum(r, "syscalls", m->str) / ios;
				cr_assert(fabs(jnum(r, "sys_per_io", m->str) - want) <= 1e-4 * (want + 1),
					  "%s: sys_per_io %g is not syscalls / ios %g", m->str,
					  jnum(r, "sys_per_io", m->str), want);
				/* pread makes one pread(2) per I/O, whatever else is counted. */
				if (!strcmp(m->str, "pread"))
					cr_assert_geq(want, 1.0, "pread: %g system calls per I/O", want);
			} else {
				cr_assert(spi->t == J_NULL && sc->t == J_NULL, "%s: system calls not counted, "
					  "yet not null", m->str);
			}
			const struct jv *lat = jget(r, "lat_us"), *sub = jget(r, "submit_us");
			cr_assert(lat && sub, "%s: latency objects missing", m->str);
			cr_assert_gt(jnum(lat, "p50", m->str), 0);
			cr_assert_geq(jnum(lat, "p99", m->str), jnum(lat, "p50", m->str));
			cr_assert_geq(jnum(lat, "p999", m->str), jnum(lat, "p99", m->str));
			jnum(sub, "p50", m->str);
			jnum(sub, "max", m->str);
			if (!strncmp(m->str, "fsaio", 5) && strcmp(m->str, "fsaio-shim") && strcmp(m->str, "fsaio-posix")) {
				const struct jv *e = jget(r, "engine");
				cr_assert(e && e->t == J_OBJ, "fsaio: engine stats missing");
				cr_assert_gt(jnum(e, "requests", "engine"), 0);
			}
		}
		for (unsigned k = 0; k < NMETHODS; k++)
			cr_assert(seen[k], "case %zu of %s lacks method %s", c, json, methods[k]);
	}
	jfree(&root);
	free(text);

	/* CSV */
	text = slurp(csv);
	char *save = NULL, *line = strtok_r(text, "\n", &save);
	char *hdr[64], *f[64];
	cr_assert(line, "%s is empty", csv);
	unsigned nh = csv_fields(line, hdr, 64);
	cr_assert_str_eq(hdr[0], "preset", "%s: the first column is %s", csv, hdr[0]);
	int c_method = -1, c_status = -1, c_iops = -1, c_mib = -1, c_p50 = -1, c_p99 = -1, c_cpu = -1, c_csw = -1;
	int c_sys = -1;
	for (unsigned i = 0; i < nh; i++) {
		cr_assert(!strstr(hdr[i], "issue"), "CSV column %s", hdr[i]);
		if (!strcmp(hdr[i], "method")) c_method = (int)i;
		if (!strcmp(hdr[i], "status")) c_status = (int)i;
		if (!strcmp(hdr[i], "iops")) c_iops = (int)i;
		if (!strcmp(hdr[i], "mib_s")) c_mib = (int)i;
		if (!strcmp(hdr[i], "lat_p50_us")) c_p50 = (int)i;
		if (!strcmp(hdr[i], "lat_p99_us")) c_p99 = (int)i;
		if (!strcmp(hdr[i], "cpu_us_per_io")) c_cpu = (int)i;
		if (!strcmp(hdr[i], "csw_per_io")) c_csw = (int)i;
		if (!strcmp(hdr[i], "sys_per_io")) c_sys = (int)i;
	}
	cr_assert(c_method >= 0 && c_status >= 0 && c_iops >= 0 && c_mib >= 0 && c_p50 >= 0 && c_p99 >= 0 &&
		  c_cpu >= 0 && c_csw >= 0 && c_sys >= 0, "%s: header lacks a needed column", csv);
	unsigned rows = 0, per_method[MAX_METHODS] = { 0 };
	while ((line = strtok_r(NULL, "\n", &save)) != NULL) {
		unsigned nf = csv_fields(line, f, 64);
		cr_assert_eq(nf, nh, "CSV row %u has %u fields, the header %u", rows + 1, nf, nh);
		cr_assert_str_eq(f[0], "quick", "CSV row %u: preset %s", rows + 1, f[0]);
		int k = method_idx(f[c_method]);
		cr_assert(k >= 0, "CSV: unknown method %s", f[c_method]);
		per_method[k]++;
		rows++;
		if (!strcmp(f[c_status], "unavailable")) {
			cr_assert(!must_run(f[c_method]), "CSV: %s unavailable", f[c_method]);
			continue;
		}
		cr_assert_str_eq(f[c_status], "ok", "CSV: %s is %s", f[c_method], f[c_status]);
		cr_assert(is_number(f[c_iops]) && strtod(f[c_iops], NULL) > 0, "CSV: %s iops '%s'", f[c_method], f[c_iops]);
		cr_assert(is_number(f[c_mib]) && strtod(f[c_mib], NULL) > 0, "CSV: %s mib_s", f[c_method]);
		cr_assert(is_number(f[c_p50]) && is_number(f[c_p99]), "CSV: %s latencies", f[c_method]);
		cr_assert(is_number(f[c_cpu]) && strtod(f[c_cpu], NULL) > 0, "CSV: %s cpu_us_per_io '%s'",
			  f[c_method], f[c_cpu]);
		cr_assert(is_number(f[c_csw]) && strtod(f[c_csw], NULL) >= 0, "CSV: %s csw_per_io '%s'",
			  f[c_method], f[c_csw]);
		if (counted)
			cr_assert(is_number(f[c_sys]) && strtod(f[c_sys], NULL) >= 0, "CSV: %s sys_per_io '%s'",
				  f[c_method], f[c_sys]);
		else
			cr_assert_str_eq(f[c_sys], "", "CSV: %s sys_per_io '%s' though not counted",
					 f[c_method], f[c_sys]);
	}
	cr_assert_eq(rows, 2 * NMETHODS, "CSV: %u rows, want one per method and case", rows);
	for (unsigned k = 0; k < NMETHODS; k++)
		cr_assert_eq(per_method[k], 2, "CSV: method %s appears %u times", methods[k], per_method[k]);
	free(text);
	cr_assert(!exists(dir, "fsaio-bench.0.dat"), "the quick run left its scratch file");
}

/* Each preset runs under its own name, with its cases, and the goals it
 * states name the preset that measures them. Tiny: a correctness check. */
Test(bench_output, presets_run_under_their_names, .timeout = 200)
{
	static const struct {
		const char *opt[3];
		const char *name;
		unsigned cases, goals;
	} presets[] = {
		{ { "--preset", "cold-vs-direct" }, "cold-vs-direct", 2, 3 },
		{ { "--preset", "streams" }, "streams", 2, 5 },
		{ { "--preset", "mix" }, "mix", 1, 2 },
		{ { "--preset", "seed-sweep" }, "seed-sweep", 10, 10 },
		{ { "--full" }, "seed-sweep", 10, 10 },
	};
	char dir[4096], json[4200], csv[4200], log[4200];
	load_methods();
	own_dir("presets", dir, sizeof(dir));
	snprintf(json, sizeof(json), "%s/preset.json", dir);
	snprintf(csv, sizeof(csv), "%s/preset.csv", dir);
	snprintf(log, sizeof(log), "%s/preset.log", dir);
	for (unsigned i = 0; i < sizeof(presets) / sizeof(presets[0]); i++) {
		const char *args[24];
		unsigned n = 0;
		for (unsigned k = 0; k < 3 && presets[i].opt[k]; k++)
			args[n++] = presets[i].opt[k];
		/* The seed sweep's ten cases with one method only: the point is the
		 * cases and names, not the figures. */
		const char *more[] = { "--size", "4m", "--runtime", "0.05", "--ramp", "0", "--reps", "1",
				       "--dir", dir, "--json", json, "--csv", csv, NULL };
		for (unsigned k = 0; more[k]; k++)
			args[n++] = more[k];
		if (presets[i].cases == 10) {
			args[n++] = "--methods";
			args[n++] = "pread";
		}
		args[n] = NULL;
		unlink(json);
		int rc = run_bench(args, log);
		cr_assert_eq(rc, 0, "%s %s exited %d (see %s)", args[0], args[1], rc, log);
		char *text;
		struct jv root;
		parse_json(json, &text, &root);
		no_issue_keys(&root);
		cr_assert_str_eq(jstr(&root, "preset", json), presets[i].name);
		const struct jv *cases = jget(&root, "cases"), *goals = jget(&root, "targets");
		cr_assert(cases && cases->t == J_ARR && cases->n == presets[i].cases, "%s: %zu cases, want %u",
			  presets[i].name, cases ? cases->n : 0, presets[i].cases);
		cr_assert(goals && goals->t == J_ARR && goals->n == presets[i].goals, "%s: %zu goals, want %u",
			  presets[i].name, goals ? goals->n : 0, presets[i].goals);
		for (size_t g = 0; g < goals->n; g++)
			cr_assert_str_eq(jstr(&goals->kids[g], "preset", "goal"), presets[i].name);
		jfree(&root);
		free(text);
		text = slurp(log);
		cr_assert(strstr(text, presets[i].name), "%s: the output does not name the preset", presets[i].name);
		free(text);
		/* Rows of methods not selected or not available have every column too. */
		text = slurp(csv);
		char *save = NULL, *line = strtok_r(text, "\n", &save), *fl[64];
		cr_assert(line, "%s is empty", csv);
		unsigned nh = csv_fields(line, fl, 64), rows = 0;
		while ((line = strtok_r(NULL, "\n", &save)) != NULL) {
			cr_assert_eq(csv_fields(line, fl, 64), nh, "%s: CSV row %u has a different field count",
				     presets[i].name, rows + 1);
			cr_assert_str_eq(fl[0], presets[i].name);
			rows++;
		}
		cr_assert_eq(rows, presets[i].cases * NMETHODS, "%s: %u CSV rows", presets[i].name, rows);
		free(text);
		cr_assert(!exists(dir, "fsaio-bench.0.dat"), "%s left its scratch file", presets[i].name);
	}
}

Test(bench_output, help_and_version)
{
	char dir[4096], out[4200], err[4200], version[64];
	own_dir("help", dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/help.out", dir);
	snprintf(err, sizeof(err), "%s/help.err", dir);
	/* Every option fsaio-bench takes, each explained in --help. */
	static const char *const options[] = {
		"--quick", "--full", "--preset", "cold-vs-direct", "streams", "mix", "seed-sweep",
		"--pattern", "--rw", "--bs", "--depth", "--cache", "--hot-region", "--ref", "--dir",
		"--size", "--files", "--keep", "--fadvise", "--methods", "--runtime", "--bytes", "--ramp",
		"--reps", "--batch", "--workers", "--shim", "--seed", "--stall-timeout", "--csv", "--json",
		"--plot", "--list", "-h, --help", "--version", "Exit status", "0 ", "1 ", "2 bad usage",
	};
	static const char *const ways[][2] = { { "--help", NULL }, { "-h", NULL } };
	for (unsigned w = 0; w < 2; w++) {
		int rc = run_bench2(ways[w], out, err);
		cr_assert_eq(rc, 0, "%s exited %d", ways[w][0], rc);
		char *o = slurp(out), *e = slurp(err);
		cr_assert_eq(e[0], 0, "%s wrote to stderr: %s", ways[w][0], e);
		cr_assert(!strncmp(o, "usage: fsaio-bench", 18), "%s: no usage first", ways[w][0]);
		for (unsigned i = 0; i < sizeof(options) / sizeof(options[0]); i++)
			cr_assert(strstr(o, options[i]), "%s does not explain %s", ways[w][0], options[i]);
		cr_assert(!strstr(o, "issue"), "%s mentions an issue", ways[w][0]);
		free(o);
		free(e);
	}
	tool_version("help", version, sizeof(version));
}

Test(bench_output, bad_arguments_exit_2)
{
	char dir[4096], out[4200], err[4200];
	own_dir("bad", dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/bad.out", dir);
	snprintf(err, sizeof(err), "%s/bad.err", dir);
	static const struct {
		const char *args[4];
		const char *says;       /* the whole line, or NULL: any one line */
	} bads[] = {
		{ { "--size", "12q" }, "fsaio-bench: --size 12q: not a size (e.g. 256m, 1g)\n" },
		{ { "--size", "512k" }, "fsaio-bench: --size 512k: at least 1m\n" },
		{ { "--depth", "0" }, NULL },
		{ { "--bs", "1000" }, NULL },
		{ { "--methods", "nosuch" }, NULL },
		{ { "--quick", "--bs", "4k" }, NULL },
		{ { "--cache", "warm" }, NULL },
		{ { "--preset", "nosuch" }, NULL },
		{ { "--quick", "--preset", "mix" }, NULL },
		{ { "--frobnicate" }, NULL },
		{ { "--size" }, NULL },
		{ { "stray" }, NULL },
	};
	for (unsigned i = 0; i < sizeof(bads) / sizeof(bads[0]); i++) {
		const char *const *a = bads[i].args;
		int rc = run_bench2(a, out, err);
		cr_assert_eq(rc, 2, "fsaio-bench %s %s exited %d, want 2", a[0], a[1] ? a[1] : "", rc);
		char *o = slurp(out), *e = slurp(err);
		cr_assert_eq(o[0], 0, "%s: wrote to stdout: %s", a[0], o);
		cr_assert(!strncmp(e, "fsaio-bench: ", 13), "%s: no 'fsaio-bench: ' line: %s", a[0], e);
		char *nl = strchr(e, '\n');
		cr_assert(nl && nl[1] == 0, "%s: not exactly one line: %s", a[0], e);
		if (bads[i].says)
			cr_assert_str_eq(e, bads[i].says);
		free(o);
		free(e);
	}
	cr_assert(!exists(dir, "fsaio-bench.0.dat"), "a refused run created a file");
}

/* Runs fsaio-bench with args, which must be refused before the run starts:
 * status 2, nothing on stdout (the run's header comes first), one line on
 * stderr starting with want, and no scratch file made in dir. */
static void refused_before_run(const char *const *args, const char *dir, const char *want)
{
	char out[4200], err[4200];
	snprintf(out, sizeof(out), "%s/refused.out", dir);
	snprintf(err, sizeof(err), "%s/refused.err", dir);
	int rc = run_bench2(args, out, err);
	char *o = slurp(out), *e = slurp(err);
	cr_assert_eq(rc, 2, "%s: exited %d, want 2 (stderr: %s)", want, rc, e);
	cr_assert_eq(o[0], 0, "%s: the run started: %s", want, o);
	cr_assert(!strncmp(e, want, strlen(want)), "stderr '%s' does not start with '%s'", e, want);
	char *nl = strchr(e, '\n');
	cr_assert(nl && nl[1] == 0, "%s: not exactly one line: %s", want, e);
	cr_assert(!exists(dir, "fsaio-bench.0.dat"), "%s: a refused run created its scratch file", want);
	free(o);
	free(e);
}

/* Every output path is checked before the run: a missing directory, a
 * directory, a file where a directory should be, one file named twice. */
Test(bench_output, bad_output_paths_refused_before_the_run, .timeout = 60)
{
	char dir[4096], missing[4200], file[4200], notdir[4300], same[4200], want[4400];
	own_dir("outputs", dir, sizeof(dir));
	snprintf(missing, sizeof(missing), "%s/no-such-dir/out.csv", dir);
	snprintf(file, sizeof(file), "%s/a-file", dir);
	snprintf(notdir, sizeof(notdir), "%s/out.png", file);
	snprintf(same, sizeof(same), "%s/same.out", dir);
	for (const char *p = file; p; p = p == file ? same : NULL) {
		FILE *f = fopen(p, "w");
		cr_assert(f, "cannot create %s", p);
		fclose(f);
	}
	static const char *const base[] = { "--size", "4m", "--runtime", "0.05", "--ramp", "0",
					    "--reps", "1", "--methods", "pread", "--dir" };
	const struct {
		const char *opt, *path, *opt2, *says;
	} cases[] = {
		{ "--csv", missing, NULL, "No such file or directory" },
		{ "--json", dir, NULL, "Is a directory" },
		{ "--plot", notdir, NULL, "Not a directory" },
		{ "--csv", "", NULL, "an empty file name" },
		{ "--csv", same, "--json", "also given" },
	};
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *args[20];
		unsigned n = 0;
		for (unsigned k = 0; k < sizeof(base) / sizeof(base[0]); k++)
			args[n++] = base[k];
		args[n++] = dir;
		args[n++] = cases[i].opt;
		args[n++] = cases[i].path;
		if (cases[i].opt2) {
			args[n++] = cases[i].opt2;
			args[n++] = cases[i].path;
		}
		args[n] = NULL;
		if (*cases[i].path)
			snprintf(want, sizeof(want), "fsaio-bench: %s %s: %s", cases[i].opt, cases[i].path,
				 cases[i].says);
		else
			snprintf(want, sizeof(want), "fsaio-bench: %s: %s", cases[i].opt, cases[i].says);
		refused_before_run(args, dir, want);
	}
}

/* --plot without gnuplot on PATH: refused before the run, status 2. */
Test(bench_output, plot_without_gnuplot_refused, .timeout = 60)
{
	char dir[4096], empty[4200], png[4200], want[4400];
	own_dir("noplot", dir, sizeof(dir));
	snprintf(empty, sizeof(empty), "%s/empty-path", dir);
	mkdir(empty, 0755);
	snprintf(png, sizeof(png), "%s/out.png", dir);
	const char *args[] = { "--size", "4m", "--runtime", "0.05", "--ramp", "0", "--reps", "1",
			       "--methods", "pread", "--dir", dir, "--plot", png, NULL };
	/* This test's own process: PATH changes for it and the program it starts. */
	cr_assert_eq(setenv("PATH", empty, 1), 0);
	snprintf(want, sizeof(want), "fsaio-bench: --plot %s: gnuplot not found", png);
	refused_before_run(args, dir, want);
	cr_assert(!exists(dir, "out.png"), "a plot was written without gnuplot");
}

/* Whether the n bytes at s are well-formed UTF-8 (glibc's converter
 * refuses anything else with EILSEQ). */
static bool is_utf8(const char *s, size_t n)
{
	iconv_t cd = iconv_open("UTF-8", "UTF-8");
	cr_assert(cd != (iconv_t)-1);
	char buf[4096];
	char *in = (char *)s;
	bool ok = true;
	while (n && ok) {
		char *o = buf;
		size_t room = sizeof(buf);
		if (iconv(cd, &in, &n, &o, &room) == (size_t)-1 && errno != E2BIG)
			ok = false;
	}
	iconv_close(cd);
	return ok;
}

/* A --dir whose name is not UTF-8 and holds a control character: the JSON
 * stays valid UTF-8 and valid JSON, the bytes written as \u00XX. */
Test(bench_output, json_escapes_any_path, .timeout = 60)
{
	char dir[4096], odd[4096], json[4200], log[4200];
	own_dir("json-bytes", dir, sizeof(dir));
	own_dir("json-bytes/bad-\xff\xfe-\x01-\xc3\xa9", odd, sizeof(odd));
	snprintf(json, sizeof(json), "%s/out.json", dir);
	snprintf(log, sizeof(log), "%s/json.log", dir);
	unlink(json);
	const char *args[] = { "--size", "4m", "--runtime", "0.05", "--ramp", "0", "--reps", "1",
			       "--methods", "pread", "--dir", odd, "--json", json, NULL };
	int rc = run_bench(args, log);
	cr_assert_eq(rc, 0, "fsaio-bench exited %d (see %s)", rc, log);
	char *text;
	struct jv root;
	parse_json(json, &text, &root);
	cr_assert(is_utf8(text, strlen(text)), "%s is not UTF-8", json);
	const struct jv *set = jget(&root, "settings");
	cr_assert(set && set->t == J_OBJ, "%s: no settings", json);
	jstr(set, "dir", json);
	cr_assert(strstr(text, "bad-\\u00ff\\u00fe-\\u0001-\xc3\xa9\""),
		  "%s: the directory's bytes are not escaped as \\u00XX (UTF-8 kept)", json);
	jfree(&root);
	free(text);
	cr_assert(!exists(odd, "fsaio-bench.0.dat"), "the scratch file is still there");
	rmdir(odd);
}

/* An output that passed the check but cannot be written at the end fails
 * the run: status 1 (/dev/full takes no bytes). */
Test(bench_output, unwritable_output_exits_1, .timeout = 60)
{
	char dir[4096], log[4200];
	own_dir("fail", dir, sizeof(dir));
	snprintf(log, sizeof(log), "%s/fail.log", dir);
	const char *args[] = { "--size", "4m", "--runtime", "0.05", "--ramp", "0", "--reps", "1",
			       "--methods", "pread", "--dir", dir, "--csv", "/dev/full", NULL };
	int rc = run_bench(args, log);
	cr_assert_eq(rc, 1, "a run whose CSV cannot be written exited %d, want 1 (see %s)", rc, log);
	cr_assert(!exists(dir, "fsaio-bench.0.dat"), "the failed run left its scratch file");
}

Test(bench_output, scratch_file_removed_unless_keep, .timeout = 60)
{
	char dir[4096], log[4200];
	own_dir("keep", dir, sizeof(dir));
	snprintf(log, sizeof(log), "%s/keep.log", dir);
	const char *plain[] = { "--size", "4m", "--runtime", "0.05", "--ramp", "0", "--reps", "1",
				"--methods", "pread", "--dir", dir, NULL };
	const char *keep[] = { "--size", "4m", "--runtime", "0.05", "--ramp", "0", "--reps", "1",
			       "--methods", "pread", "--dir", dir, "--keep", NULL };

	cr_assert_eq(run_bench(plain, log), 0, "see %s", log);
	cr_assert(!exists(dir, "fsaio-bench.0.dat"), "the scratch file is still there without --keep");

	cr_assert_eq(run_bench(keep, log), 0, "see %s", log);
	cr_assert(exists(dir, "fsaio-bench.0.dat"), "--keep did not keep the scratch file");

	/* Now the file was there before the run: it is used and never removed. */
	cr_assert_eq(run_bench(plain, log), 0, "see %s", log);
	cr_assert(exists(dir, "fsaio-bench.0.dat"), "a file fsaio-bench did not create was removed");
	char *text = slurp(log);
	cr_assert(!strstr(text, "writing"), "a file that was there was written again: %s", text);
	free(text);

	char p[4200];
	snprintf(p, sizeof(p), "%s/fsaio-bench.0.dat", dir);
	cr_assert_eq(unlink(p), 0);
}

/* SIGTERM in the middle of a run: the scratch file goes with the process,
 * which then dies of the signal. */
Test(bench_output, scratch_file_removed_on_sigterm, .timeout = 60)
{
	char dir[4096], log[4200], p[4200];
	own_dir("sigterm", dir, sizeof(dir));
	snprintf(log, sizeof(log), "%s/sigterm.log", dir);
	snprintf(p, sizeof(p), "%s/fsaio-bench.0.dat", dir);
	/* A hot run lasts its whole --runtime (a cold one ends after one pass). */
	const char *args[] = { "--size", "4m", "--cache", "hot", "--bs", "4k", "--runtime", "40",
			       "--ramp", "0", "--reps", "1", "--methods", "threads", "--dir", dir, NULL };
	unlink(log);            /* an old log must not say the run started */
	pid_t pid = start_bench(args, log, NULL);
	int st_early;
	/* The header line comes once the file is ready, just before the runs. */
	for (unsigned i = 0;; i++) {
		struct stat lst;
		if (stat(log, &lst) == 0) {
			char *text = slurp(log);
			bool started = strstr(text, "load average") != NULL;
			free(text);
			if (started)
				break;
		}
		cr_assert_eq(waitpid(pid, &st_early, WNOHANG), 0, "fsaio-bench ended before the signal (see %s)", log);
		cr_assert_lt(i, 2000, "no run started after 20 s (see %s)", log);
		usleep(10000);
	}
	cr_assert(exists(dir, "fsaio-bench.0.dat"), "no scratch file during the run");
	usleep(100000);         /* into the run: the method's threads are up */
	cr_assert_eq(kill(pid, SIGTERM), 0);
	int status = wait_status(pid);
	cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM,
		  "fsaio-bench did not die of SIGTERM (status 0x%x, see %s)", status, log);
	cr_assert(!exists(dir, "fsaio-bench.0.dat"), "SIGTERM left the scratch file");
}

Test(bench_output, tmpfs_is_refused)
{
	struct statfs s;
	if (statfs("/dev/shm", &s) != 0 || (unsigned long)s.f_type != TMPFS_MAGIC)
		cr_skip_test("no tmpfs at /dev/shm");
	char log[4096];
	snprintf(log, sizeof(log), "%s/tmpfs.log", test_dir());
	const char *args[] = { "--quick", "--dir", "/dev/shm", NULL };
	int rc = run_bench(args, log);
	cr_assert_eq(rc, 2, "--dir on tmpfs exited %d, want 2", rc);
	char *out = slurp(log);
	cr_assert(strstr(out, "tmpfs"), "the refusal does not name tmpfs: %s", out);
	free(out);
	cr_assert(!exists("/dev/shm", "fsaio-bench.0.dat"), "a file was made on tmpfs");
}

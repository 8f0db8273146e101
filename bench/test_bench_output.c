/* SPDX-License-Identifier: MIT */
/*
 * fsaio-bench's output, end to end: a tiny --quick run on a small file in
 * the build tree must write a CSV and a JSON that parse and hold every
 * method, each either measured (with numbers) or marked unavailable; bad
 * arguments and tmpfs are refused with exit status 2. Nothing here looks at
 * how fast anything was: figures vary, formats must not.
 *
 * FSAIO_BENCH names the program, FSAIO_BENCH_DIR a directory on disk.
 */
#include <criterion/criterion.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *const methods[] = {
	"fsaio", "fsaio-shim", "kaio-direct", "kaio-buffered", "uring-direct",
	"uring-buffered", "posix-aio", "fsaio-posix", "pread", "threads", "fsaio-direct", "fsaio-nora",
};
#define NMETHODS (sizeof(methods) / sizeof(methods[0]))

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

/* Runs fsaio-bench with argv, output to log; returns its exit status. */
static int run_bench(const char *const *args, const char *log)
{
	const char *bin = getenv("FSAIO_BENCH");
	cr_assert(bin, "FSAIO_BENCH is not set (run through meson test)");
	char *argv[40];
	unsigned n = 0;
	argv[n++] = (char *)bin;
	for (; *args; args++)
		argv[n++] = (char *)*args;
	argv[n] = NULL;
	pid_t pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execv(bin, argv);
		_exit(127);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0)
		cr_assert(errno == EINTR);
	cr_assert(WIFEXITED(st), "fsaio-bench died (see %s)", log);
	return WEXITSTATUS(st);
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

/* ---- tests ---- */

Test(bench_output, quick_run_writes_csv_and_json, .timeout = 110)
{
	const char *dir = test_dir();
	char csv[4096], json[4096], log[4096];
	snprintf(csv, sizeof(csv), "%s/out.csv", dir);
	snprintf(json, sizeof(json), "%s/out.json", dir);
	snprintf(log, sizeof(log), "%s/out.log", dir);
	unlink(csv);
	unlink(json);
	const char *args[] = { "--quick", "--size", "16m", "--runtime", "0.1", "--ramp", "0.02",
			       "--reps", "1", "--stall-timeout", "30", "--dir", dir, "--csv", csv,
			       "--json", json, "--methods", "all,fsaio-direct,fsaio-nora,fsaio-posix", NULL };
	int rc = run_bench(args, log);
	cr_assert_eq(rc, 0, "fsaio-bench --quick exited %d (see %s)", rc, log);

	/* JSON */
	char *text = slurp(json);
	struct jv root;
	jp = text;
	cr_assert(jvalue(&root), "%s does not parse near byte %ld", json, (long)(jp - text));
	ws();
	cr_assert_eq(*jp, 0, "%s: trailing bytes after the JSON value", json);
	const struct jv *cases = jget(&root, "cases");
	cr_assert(cases && cases->t == J_ARR && cases->n == 2, "%s: \"cases\" must hold the 2 quick cases", json);
	for (size_t c = 0; c < cases->n; c++) {
		const struct jv *res = jget(&cases->kids[c], "results");
		bool seen[NMETHODS] = { false };
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
	int c_method = -1, c_status = -1, c_iops = -1, c_mib = -1, c_p50 = -1, c_p99 = -1;
	for (unsigned i = 0; i < nh; i++) {
		if (!strcmp(hdr[i], "method")) c_method = (int)i;
		if (!strcmp(hdr[i], "status")) c_status = (int)i;
		if (!strcmp(hdr[i], "iops")) c_iops = (int)i;
		if (!strcmp(hdr[i], "mib_s")) c_mib = (int)i;
		if (!strcmp(hdr[i], "lat_p50_us")) c_p50 = (int)i;
		if (!strcmp(hdr[i], "lat_p99_us")) c_p99 = (int)i;
	}
	cr_assert(c_method >= 0 && c_status >= 0 && c_iops >= 0 && c_mib >= 0 && c_p50 >= 0 && c_p99 >= 0,
		  "%s: header lacks a needed column", csv);
	unsigned rows = 0, per_method[NMETHODS] = { 0 };
	while ((line = strtok_r(NULL, "\n", &save)) != NULL) {
		unsigned nf = csv_fields(line, f, 64);
		cr_assert_eq(nf, nh, "CSV row %u has %u fields, the header %u", rows + 1, nf, nh);
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
	}
	cr_assert_eq(rows, 2 * NMETHODS, "CSV: %u rows, want one per method and case", rows);
	for (unsigned k = 0; k < NMETHODS; k++)
		cr_assert_eq(per_method[k], 2, "CSV: method %s appears %u times", methods[k], per_method[k]);
	free(text);
}

Test(bench_output, bad_arguments_exit_2)
{
	const char *dir = test_dir();
	char log[4096];
	snprintf(log, sizeof(log), "%s/bad.log", dir);
	static const char *const bads[][4] = {
		{ "--depth", "0", NULL },
		{ "--bs", "1000", NULL },
		{ "--methods", "nosuch", NULL },
		{ "--quick", "--bs", "4k", NULL },
		{ "--cache", "warm", NULL },
		{ "--frobnicate", NULL },
	};
	for (unsigned i = 0; i < sizeof(bads) / sizeof(bads[0]); i++) {
		int rc = run_bench(bads[i], log);
		cr_assert_eq(rc, 2, "fsaio-bench %s %s exited %d, want 2", bads[i][0], bads[i][1] ? bads[i][1] : "", rc);
		char *out = slurp(log);
		cr_assert(!strncmp(out, "fsaio-bench: ", 13), "no one-line message for %s: %s", bads[i][0], out);
		cr_assert(strstr(out, "usage:"), "no usage for %s", bads[i][0]);
		free(out);
	}
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
}

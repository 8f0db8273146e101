/* SPDX-License-Identifier: MIT */
/*
 * The drop-ins as the methods that measure them load them: where a built
 * one lies beside this program, and dlopen with its functions taken by
 * version, so that the drop-in's names never bind to anyone else's.
 */
#include "bench.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

const char *bench_beside_exe(const char *name, char *buf, size_t n)
{
	char exe[PATH_MAX];
	ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (len <= 0)
		return NULL;
	exe[len] = 0;
	char *slash = strrchr(exe, '/');
	if (!slash)
		return NULL;
	*slash = 0;
	snprintf(buf, n, "%s/../dropin/%s", exe, name);
	return access(buf, R_OK) == 0 ? buf : NULL;
}

void *bench_dl_open(const char *path, const struct bench_dl_sym *syms, unsigned nsyms,
		    bool any_version, char *why, size_t n)
{
	/* The sanitizer runtimes refuse RTLD_DEEPBIND; without it a drop-in's
	 * functions still bind to itself, as this program defines none. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
#else
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
#endif
	if (!h) {
		snprintf(why, n, "%s", dlerror());
		return NULL;
	}
	bool all = true;
	for (unsigned i = 0; i < nsyms; i++) {
		void *p = dlvsym(h, syms[i].name, syms[i].version);
		if (!p && any_version)
			p = dlsym(h, syms[i].name);
		*syms[i].fn = p;
		all = all && p;
	}
	if (all)
		return h;
	int used = snprintf(why, n, "%s lacks ", path);
	for (unsigned i = 0; i < nsyms && used >= 0 && (size_t)used < n; i++)
		used += snprintf(why + used, n - (size_t)used, "%s%s", i ? "/" : "", syms[i].name);
	dlclose(h);
	return NULL;
}

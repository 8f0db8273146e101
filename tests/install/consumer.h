/* SPDX-License-Identifier: MIT */
/*
 * Shared by the consumers built against an installed libfsaio: how they
 * fail, and (drop-in consumers, built with _GNU_SOURCE) where a function's
 * code comes from and the file they read back. Define PROG, the
 * program's name for its messages, before including.
 */
#ifndef CONSUMER_H
#define CONSUMER_H

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Print "PROG: what (v)" and answer main's exit status 1. */
static inline int fail(const char *what, long v)
{
	fprintf(stderr, PROG ": %s (%ld)\n", what, v);
	return 1;
}

#ifdef _GNU_SOURCE
#include <dlfcn.h>
#include <stdbool.h>

/* Check that fn (named name) comes from a file whose path starts with from
 * (at_start) or holds it: 0 with *info filled, or 1 with a message. */
static inline int check_origin(void *fn, const char *name, const char *from, bool at_start,
			       Dl_info *info)
{
	const char *at;

	if (!dladdr(fn, info) || !info->dli_fname) {
		fprintf(stderr, PROG ": dladdr(%s) failed (0)\n", name);
		return 1;
	}
	at = at_start ? (strncmp(info->dli_fname, from, strlen(from)) ? NULL : info->dli_fname)
		      : strstr(info->dli_fname, from);
	if (!at) {
		fprintf(stderr, PROG ": %s comes from %s, not %s\n", name, info->dli_fname, from);
		return 1;
	}
	return 0;
}

/* Where the checked function came from: dropin_start fills it, dropin_end
 * names it. */
static Dl_info dropin_origin;

/* A drop-in consumer's start, argv being DROPIN FILE: check that fn (named
 * name) comes from DROPIN (check_origin), fill want with a pattern and
 * write it to a new FILE. The fd, open for reading and writing; -1 after a
 * message. */
static inline int dropin_start(int argc, char **argv, void *fn, const char *name, bool at_start,
			       unsigned char *want, size_t size)
{
	Dl_info *info = &dropin_origin;
	int fd;

	if (argc < 3) {
		fail("usage: " PROG " DROPIN FILE", argc);
		return -1;
	}
	if (check_origin(fn, name, argv[1], at_start, info))
		return -1;
	for (size_t i = 0; i < size; i++)
		want[i] = (unsigned char)(i * 13 + 1);
	fd = open(argv[2], O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, want, size) != (ssize_t)size) {
		fail("cannot write the file", fd);
		return -1;
	}
	return fd;
}

/* A drop-in consumer's end: close fd, remove file, say which file served
 * the checked function. main's exit status 0. */
static inline int dropin_end(int fd, const char *file)
{
	close(fd);
	unlink(file);
	printf(PROG ": served by %s\n", dropin_origin.dli_fname);
	return 0;
}
#endif

#endif

/* SPDX-License-Identifier: MIT */
/*
 * Test files of the drop-ins' suites (tests/shim, tests/posix): one
 * directory per test under $FSAIO_TEST_BUILDDIR (the build tree, on disk;
 * never tmpfs), files of a position-dependent pattern in it, all removed at
 * teardown.
 */
#ifndef T_FILES_H
#define T_FILES_H

#ifdef T_NO_CRITERION
#include "t_runner.h"       /* ThreadSanitizer builds: see t_runner.h */
#else
#include <criterion/criterion.h>
#endif
#include <stddef.h>
#include <stdint.h>

/* Make the test's directory, named prefix-XXXXXX; remove it and its files. */
void t_files_setup(const char *prefix);
void t_files_teardown(void);
const char *t_dir(void);

/* A file of size bytes of the pattern of seed, O_RDWR, its pages cached. */
int t_file(size_t size, unsigned seed);
int t_file_path(size_t size, unsigned seed, char *path, size_t pathlen);

uint8_t t_byte(uint64_t off, unsigned seed);
void t_fill(void *buf, size_t len, uint64_t off, unsigned seed);
/* Assert buf holds the pattern of file offset off. */
void t_check(const void *buf, size_t len, uint64_t off, unsigned seed);

/* Write back and drop the file's pages from the cache, again until none is
 * left (at most T_COLD_ROUNDS times); assert it is cold. */
#define T_COLD_ROUNDS 1000
void t_cold(int fd);

#endif

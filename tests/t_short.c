/* SPDX-License-Identifier: MIT */
/* The short-read tests' hog and comparisons (t_short.h). */
#include "t_short.h"

#ifdef T_NO_CRITERION
#include "t_runner.h"
#else
#include <criterion/criterion.h>
#endif
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#define MiB (1024u * 1024u)
#define HOGS 3          /* more runnable threads than a small machine's CPUs */

static atomic_bool spinning;          /* the hog threads run while set */
static pthread_t threads[T_HOG_MAX];  /* touched only by the test's thread */
static unsigned running;

static void *spin(void *arg)
{
	volatile uint64_t n = 0;

	(void)arg;
	while (atomic_load_explicit(&spinning, memory_order_relaxed))
		n = n + 1;
	return NULL;
}

int t_hog_start(unsigned n)
{
	if (n > T_HOG_MAX)
		n = T_HOG_MAX;
	atomic_store(&spinning, true);
	for (running = 0; running < n; running++) {
		int err = pthread_create(&threads[running], NULL, spin, NULL);

		if (err) {
			t_hog_stop();
			return -err;
		}
	}
	return 0;
}

void t_hog_stop(void)
{
	atomic_store(&spinning, false);
	while (running)
		pthread_join(threads[--running], NULL);
}

int64_t t_blocking_read(int fd, char *buf, size_t len, int parts)
{
	struct iovec iov[8];
	size_t each;
	ssize_t n;

	if (parts > 8)
		parts = 8;
	memset(buf, T_SHORT_FILL, len);
	if (parts <= 1) {
		n = read(fd, buf, len);
		return n < 0 ? -errno : n;
	}
	each = len / (size_t)parts;
	for (int i = 0; i < parts; i++) {
		iov[i].iov_base = buf + (size_t)i * each;
		iov[i].iov_len = i == parts - 1 ? len - (size_t)i * each : each;
	}
	n = readv(fd, iov, parts);
	return n < 0 ? -errno : n;
}

void t_short_memory_device(const char *path, bool same_bytes, int rounds, int max_parts,
			   t_read_fn fn, void *arg)
{
	const struct { size_t len; int rounds; } sizes[] = { { MiB, rounds * 6 }, { 16 * MiB, rounds } };
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
	cr_assert_eq(t_hog_start(HOGS), 0);
	for (unsigned s = 0; s < 2; s++) {
		size_t len = sizes[s].len;
		char *a = malloc(len), *k = malloc(len);

		cr_assert(a && k);
		for (int i = 0; i < sizes[s].rounds; i++) {
			int parts = i % 2 ? max_parts : 1;
			int64_t got, want;

			memset(a, T_SHORT_FILL, len);
			got = fn(arg, fd, a, len, parts);
			want = t_blocking_read(fd, k, len, parts);
			cr_assert_eq(want, (int64_t)len, "%s: read(2) of %zu gave %lld", path, len,
				     (long long)want);
			cr_assert_eq(got, want, "%s: %zu bytes in %d iovec(s), round %d: the read "
				     "under test gave %lld, the blocking call %lld", path, len, parts,
				     i, (long long)got, (long long)want);
			if (same_bytes)
				cr_assert_eq(memcmp(a, k, len), 0, "%s: the bytes differ", path);
			else    /* FILL at the end in both: the read did not reach it */
				cr_assert_neq(memcmp(a + len - 64, k + len - 64, 64), 0);
		}
		free(a);
		free(k);
	}
	t_hog_stop();
	close(fd);
}

void t_short_twin_streams(int domain, int max_parts, t_read_fn fn, void *arg)
{
	char data[3000], a[65536], k[65536];
	int p[2], q[2];

	for (unsigned i = 0; i < sizeof(data); i++)
		data[i] = (char)(i * 7 + 1);
	for (int parts = 1; parts <= max_parts; parts += max_parts > 1 ? max_parts - 1 : 1) {
		int64_t got, want;

		if (domain < 0) {
			cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
			cr_assert_eq(pipe2(q, O_CLOEXEC), 0);
		} else {
			cr_assert_eq(socketpair(domain, SOCK_STREAM | SOCK_CLOEXEC, 0, p), 0);
			cr_assert_eq(socketpair(domain, SOCK_STREAM | SOCK_CLOEXEC, 0, q), 0);
		}
		cr_assert_eq(write(p[1], data, sizeof(data)), (ssize_t)sizeof(data));
		cr_assert_eq(write(q[1], data, sizeof(data)), (ssize_t)sizeof(data));
		memset(a, T_SHORT_FILL, sizeof(a));
		got = fn(arg, p[0], a, sizeof(a), parts);
		want = t_blocking_read(q[0], k, sizeof(k), parts);
		cr_assert_eq(got, want, "%s, %d iovec(s): the read under test gave %lld, read(2) %lld",
			     domain < 0 ? "pipe" : "socket", parts, (long long)got, (long long)want);
		cr_assert_eq(memcmp(a, k, sizeof(data)), 0);
		for (int i = 0; i < 2; i++) {
			close(p[i]);
			close(q[i]);
		}
	}
}

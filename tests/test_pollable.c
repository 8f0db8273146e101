/* SPDX-License-Identifier: MIT */
/*
 * The pollable method: requests on pipes, FIFOs, sockets, eventfds and ttys
 * wait for readiness on the context's poller thread, not on a worker each,
 * and complete by read(2)/write(2)'s rules (see FSAIO_REQ_FULL in fsaio.h).
 * Real kernel objects throughout; where a test needs "nothing happened",
 * it gives the engine a moment first, which can only make it pass wrongly
 * on a slow machine, never fail a correct engine.
 */
#include "t_helpers.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define KiB 1024u
#define MiB (1024u * 1024u)
#define QUIET_MS 50     /* how long "no event" is watched for */

TestSuite(pollable, .init = t_setup, .fini = t_teardown, .timeout = 120);

/* ------------------------------------------------------------------ helpers */

/* The threads of this process whose name starts with prefix. */
static unsigned threads_named(const char *prefix)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	unsigned n = 0;

	cr_assert_not_null(d);
	while ((e = readdir(d))) {
		char path[300], comm[64] = "";
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f) && !strncmp(comm, prefix, strlen(prefix)))
			n++;
		fclose(f);
	}
	closedir(d);
	return n;
}

/* The engine's threads (named fsaio-*): a sanitizer's own threads and the
 * test's do not count. */
static unsigned count_threads(void)
{
	return threads_named("fsaio-");
}

/* After destroy: the engine's threads once those it joined have left
 * /proc/self/task, which a joined thread may still be listed in for a
 * moment (pthread_join returns when the thread clears its tid, before the
 * kernel has reaped its task). Waits up to 5 s for base. */
static unsigned count_threads_settled(unsigned base)
{
	unsigned n = count_threads();

	for (int i = 0; i < 500 && n > base; i++) {
		t_sleep_ms(10);
		n = count_threads();
	}
	return n;
}

static bool thread_named(const char *name)
{
	return threads_named(name) > 0;
}

static void raise_nofile(rlim_t need)
{
	struct rlimit rl;

	cr_assert_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	if (rl.rlim_cur >= need)
		return;
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need)
		cr_assert_fail("RLIMIT_NOFILE hard limit %llu < %llu",
			     (unsigned long long)rl.rlim_max, (unsigned long long)need);
	rl.rlim_cur = need;
	cr_assert_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
}

static void mkpipe(int p[2], int size)
{
	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	if (size)
		cr_assert_eq(fcntl(p[1], F_SETPIPE_SZ, size), size);
}

/* A FIFO in the test directory, both ends opened blocking, as a program
 * that opens a FIFO by name gets them (no RWF_NOWAIT on those). */
static void mkfifo_pair(int f[2], bool nonblock)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/fifo", t_dir());
	cr_assert_eq(mkfifo(path, 0600), 0);
	/* Opening the read end blocks until a writer comes unless O_NONBLOCK:
	 * open it so, then clear the flag on our own description. */
	f[0] = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	cr_assert_geq(f[0], 0);
	f[1] = open(path, O_WRONLY | O_CLOEXEC | (nonblock ? O_NONBLOCK : 0));
	cr_assert_geq(f[1], 0);
	if (!nonblock)
		cr_assert_eq(fcntl(f[0], F_SETFL, 0), 0);
	unlink(path);
}

static void write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		cr_assert_gt(n, 0, "write: %s", strerror(errno));
		p += n;
		len -= (size_t)n;
	}
}

static struct fsaio_event reap1(fsaio_ctx_t *ctx)
{
	struct fsaio_event ev;

	t_reap_all(ctx, 1, &ev, T_EVENT_TIMEOUT_MS);
	return ev;
}

static void quiet(fsaio_ctx_t *ctx)
{
	t_sleep_ms(QUIET_MS);
	t_no_event(ctx);
}

/* Submit a read of fd with the given request flags and assert that it
 * waits (nothing to read yet). */
static void read_waits(fsaio_ctx_t *ctx, struct fsaio_req *rd, int fd,
		       void *buf, size_t len, uint32_t flags)
{
	fsaio_prep_pread(rd, fd, buf, len, -1);
	rd->flags = flags;
	t_submit1(ctx, rd);
	quiet(ctx);
}

/* A read of len bytes of fd at off with rw_flags, run alone (t_run1): its
 * res. */
static int64_t read_alone(fsaio_ctx_t *ctx, int fd, void *buf, size_t len, int64_t off,
			  int rw_flags)
{
	struct fsaio_req rd;

	fsaio_prep_pread(&rd, fd, buf, len, off);
	rd.rw_flags = rw_flags;
	return t_run1(ctx, &rd).res;
}

/* Reap the one event (a read into buf) and assert that it read n bytes,
 * want's. */
static void reap_read(fsaio_ctx_t *ctx, const char *buf, const char *want, int64_t n)
{
	struct fsaio_event ev = reap1(ctx);

	cr_assert_eq(ev.res, n, "res %lld, want %lld", (long long)ev.res, (long long)n);
	cr_assert_eq(memcmp(buf, want, (size_t)n), 0, "the %lld bytes read are not those written",
		     (long long)n);
}

/* Reap the events of a and b and assert their results. */
static void reap_pair(fsaio_ctx_t *ctx, struct fsaio_req *a, int64_t want_a,
		      struct fsaio_req *b, int64_t want_b)
{
	struct fsaio_event evs[2];

	t_reap_all(ctx, 2, evs, T_EVENT_TIMEOUT_MS);
	cr_assert_eq(t_event_of(evs, 2, a)->res, want_a);
	cr_assert_eq(t_event_of(evs, 2, b)->res, want_b);
}

/* Destroy the context, then close both ends of the pipe. */
static void done_pipe(fsaio_ctx_t *ctx, int p[2])
{
	t_ctx_destroy(ctx);
	close(p[0]);
	close(p[1]);
}

/* A thread that reads len bytes (or to EOF) from fd into buf. */
struct drain {
	pthread_t t;
	int fd;
	uint8_t *buf;
	size_t len, got;
};

static void *drain_main(void *arg)
{
	struct drain *d = arg;

	while (d->got < d->len) {
		ssize_t n = read(d->fd, d->buf + d->got, d->len - d->got);

		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			break;
		}
		d->got += (size_t)n;
	}
	return NULL;
}

static void drain_start(struct drain *d, int fd, size_t len)
{
	d->fd = fd;
	d->len = len;
	d->got = 0;
	d->buf = malloc(len);
	cr_assert_not_null(d->buf);
	cr_assert_eq(pthread_create(&d->t, NULL, drain_main, d), 0);
}

static void drain_join(struct drain *d)
{
	cr_assert_eq(pthread_join(d->t, NULL), 0);
}

/* ------------------------------------------------------------ many waiters */

/* What pipe i is sent below; its length. */
static int pipe_msg(char msg[32], unsigned i)
{
	return snprintf(msg, 32, "pipe %u says hi", i);
}

static void send_pipe_msg(int fd, unsigned i)
{
	char msg[32];
	int len = pipe_msg(msg, i);

	write_all(fd, msg, (size_t)len);
}

/* Reap n reads, all of pipes whose number has the parity odd: each read
 * got exactly its own pipe's message. */
static void reap_pipe_msgs(fsaio_ctx_t *ctx, unsigned n, struct fsaio_event *evs,
			   struct fsaio_req *reqs, char (*bufs)[32], unsigned odd)
{
	t_reap_all(ctx, n, evs, T_EVENT_TIMEOUT_MS);
	for (unsigned k = 0; k < n; k++) {
		unsigned i = (unsigned)(uintptr_t)evs[k].user_data;
		char msg[32];
		int len = pipe_msg(msg, i);

		cr_assert_eq(i % 2, odd, "pipe %u completed without data", i);
		cr_assert_eq(evs[k].req, &reqs[i]);
		cr_assert_eq(evs[k].res, len, "pipe %u: res %lld", i, (long long)evs[k].res);
		cr_assert_str_eq(bufs[i], msg);
	}
}

/* 1000 reads wait on 1000 empty pipes: no thread per read, and each gets
 * its own pipe's bytes when they come, whatever the order. */
Test(pollable, thousand_pipes_hold_no_threads)
{
	enum { N = 1000 };
	struct fsaio_params prm = { .queue_depth = N + 8, .workers = 4 };
	int (*p)[2] = calloc(N, sizeof(*p));
	struct fsaio_req *reqs = calloc(N, sizeof(*reqs));
	struct fsaio_req **rp = calloc(N, sizeof(*rp));
	struct fsaio_event *evs = calloc(N, sizeof(*evs));
	char (*bufs)[32] = calloc(N, sizeof(*bufs));
	unsigned base;

	cr_assert(p && reqs && rp && evs && bufs);
	raise_nofile(2 * N + 256);
	base = count_threads();
	fsaio_ctx_t *ctx = t_ctx(&prm);
	for (unsigned i = 0; i < N; i++) {
		mkpipe(p[i], 0);
		memset(bufs[i], 0, sizeof(bufs[i]));
		fsaio_prep_pread(&reqs[i], p[i][0], bufs[i], sizeof(bufs[i]) - 1, -1);
		reqs[i].user_data = (void *)(uintptr_t)i;
		rp[i] = &reqs[i];
	}
	t_submit(ctx, rp, N);
	quiet(ctx);
	/* The poller is the one thread they cost; the pool never started. */
	cr_assert_leq(count_threads(), base + prm.workers + 1,
		      "%u threads with %d reads pending (%u before the context)",
		      count_threads(), N, base);
	cr_assert_leq(count_threads(), base + 1);
	cr_assert(thread_named("fsaio-poll"));
	cr_assert_eq(t_stats(ctx).pool_threads, 0);

	/* Data for the odd pipes, newest first: exactly those complete. */
	for (unsigned i = N; i-- > 0;)
		if (i % 2)
			send_pipe_msg(p[i][1], i);
	reap_pipe_msgs(ctx, N / 2, evs, reqs, bufs, 1);
	t_no_event(ctx);
	for (unsigned i = 0; i < N; i += 2)
		send_pipe_msg(p[i][1], i);
	reap_pipe_msgs(ctx, N / 2, evs, reqs, bufs, 0);
	cr_assert_leq(count_threads(), base + 1);
	t_ctx_destroy(ctx);
	cr_assert_eq(count_threads_settled(base), base, "a thread outlived destroy");
	for (unsigned i = 0; i < N; i++) {
		close(p[i][0]);
		close(p[i][1]);
	}
	free(p), free(reqs), free(rp), free(evs), free(bufs);
}

/* --------------------------------------------------------------- big writes */

/* 1 MiB into a 64 KiB pipe: the write completes only when all of it went
 * through, in order, while a reader drains the other end. */
Test(pollable, write_larger_than_pipe_completes_fully)
{
	fsaio_ctx_t *ctx = t_ctx(NULL);
	uint8_t *src = malloc(MiB);
	struct fsaio_req req;
	struct drain d;
	int p[2];

	cr_assert_not_null(src);
	mkpipe(p, 64 * KiB);
	t_fill_pattern(src, MiB, 0, 11);
	fsaio_prep_pwrite(&req, p[1], src, MiB, -1);
	t_submit1(ctx, &req);
	quiet(ctx);             /* 64 KiB went in; the rest waits */
	cr_assert_eq(t_stats(ctx).partial_inline, 1);
	drain_start(&d, p[0], MiB);
	struct fsaio_event ev = reap1(ctx);
	drain_join(&d);
	cr_assert_eq(ev.res, (int64_t)MiB, "res %lld", (long long)ev.res);
	cr_assert_eq(d.got, MiB);
	t_check_pattern(d.buf, MiB, 0, 11);
	cr_assert_eq(t_stats(ctx).pool_threads, 0);
	done_pipe(ctx, p);
	free(d.buf);
	free(src);
}

/* Several writes queued on one pipe go out whole and in submission order. */
Test(pollable, queued_writes_keep_their_order)
{
	enum { N = 4, LEN = 200 * KiB };
	fsaio_ctx_t *ctx = t_ctx(NULL);
	uint8_t *src = malloc(N * LEN);
	struct fsaio_req reqs[N], *rp[N];
	struct fsaio_event evs[N];
	struct drain d;
	int p[2];

	cr_assert_not_null(src);
	mkpipe(p, 64 * KiB);
	t_fill_pattern(src, N * LEN, 0, 12);
	for (unsigned i = 0; i < N; i++) {
		fsaio_prep_pwrite(&reqs[i], p[1], src + i * LEN, LEN, -1);
		rp[i] = &reqs[i];
	}
	t_submit(ctx, rp, N);
	drain_start(&d, p[0], N * LEN);
	t_reap_all(ctx, N, evs, T_EVENT_TIMEOUT_MS);
	drain_join(&d);
	t_match_events(evs, N, rp, N);
	for (unsigned i = 0; i < N; i++)
		cr_assert_eq(evs[i].res, LEN);
	cr_assert_eq(d.got, (size_t)N * LEN);
	t_check_pattern(d.buf, N * LEN, 0, 12);
	done_pipe(ctx, p);
	free(d.buf);
	free(src);
}

/* Reads waiting on one pipe are served in submission order. */
Test(pollable, queued_reads_keep_their_order)
{
	fsaio_ctx_t *ctx = t_ctx(NULL);
	char bufs[3][4];
	struct fsaio_req reqs[3], *rp[3];
	struct fsaio_event evs[3];
	int p[2];

	mkpipe(p, 0);
	for (unsigned i = 0; i < 3; i++) {
		fsaio_prep_pread(&reqs[i], p[0], bufs[i], 4, -1);
		rp[i] = &reqs[i];
	}
	t_submit(ctx, rp, 3);
	quiet(ctx);
	write_all(p[1], "aaaabbbbcccc", 12);
	t_reap_all(ctx, 3, evs, T_EVENT_TIMEOUT_MS);
	t_match_events(evs, 3, rp, 3);
	for (unsigned i = 0; i < 3; i++)
		cr_assert_eq(t_event_of(evs, 3, &reqs[i])->res, 4);
	cr_assert_eq(memcmp(bufs[0], "aaaa", 4), 0);
	cr_assert_eq(memcmp(bufs[1], "bbbb", 4), 0);
	cr_assert_eq(memcmp(bufs[2], "cccc", 4), 0);
	done_pipe(ctx, p);
}

/* ------------------------------------------------------------------ sockets */

Test(pollable, socketpair_read_and_write)
{
	fsaio_ctx_t *ctx = t_ctx(NULL);
	struct fsaio_req rd, wr;
	char buf[64] = "";
	int sv[2];

	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	read_waits(ctx, &rd, sv[0], buf, sizeof(buf), 0);
	fsaio_prep_pwrite(&wr, sv[1], "hello", 5, -1);
	t_submit1(ctx, &wr);
	reap_pair(ctx, &rd, 5, &wr, 5);
	cr_assert_eq(memcmp(buf, "hello", 5), 0);
	done_pipe(ctx, sv);
}

/* 8 MiB through a socket whose buffers are small: one write request,
 * completed whole while the peer reads; and a FULL read of it all. */
Test(pollable, socketpair_large_transfer)
{
	size_t len = 8 * MiB;
	int small = 64 * 1024;
	fsaio_ctx_t *ctx = t_ctx(NULL);
	uint8_t *src = malloc(len), *dst = malloc(len);
	struct fsaio_req wr, rd;
	struct fsaio_event evs[2];
	int sv[2];

	cr_assert(src && dst);
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	cr_assert_eq(setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)), 0);
	cr_assert_eq(setsockopt(sv[0], SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)), 0);
	t_fill_pattern(src, len, 0, 13);
	memset(dst, 0, len);
	fsaio_prep_pread(&rd, sv[0], dst, len, -1);
	rd.flags = FSAIO_REQ_FULL;
	fsaio_prep_pwrite(&wr, sv[1], src, len, -1);
	t_submit1(ctx, &rd);
	t_submit1(ctx, &wr);
	t_reap_all(ctx, 2, evs, T_EVENT_TIMEOUT_MS);
	cr_assert_eq(t_event_of(evs, 2, &wr)->res, (int64_t)len);
	cr_assert_eq(t_event_of(evs, 2, &rd)->res, (int64_t)len);
	t_check_pattern(dst, len, 0, 13);
	cr_assert_eq(t_stats(ctx).pool_threads, 0);
	t_ctx_destroy(ctx);
	free(src);
	free(dst);
	close(sv[0]);
	close(sv[1]);
}

/* ----------------------------------------------------------- read(2) rules */

Test(pollable, read_returns_what_is_there)
{
	fsaio_ctx_t *ctx = t_ctx(NULL);
	char buf[100];
	struct fsaio_req rd;
	int p[2];

	mkpipe(p, 0);
	read_waits(ctx, &rd, p[0], buf, sizeof(buf), 0);
	write_all(p[1], "0123456789", 10);
	reap_read(ctx, buf, "0123456789", 10);
	done_pipe(ctx, p);
}

Test(pollable, full_read_waits_for_the_whole_range)
{
	fsaio_ctx_t *ctx = t_ctx(NULL);
	char buf[100], src[100];
	struct fsaio_req rd;
	int p[2];

	for (unsigned i = 0; i < sizeof(src); i++)
		src[i] = (char)('A' + i % 26);
	mkpipe(p, 0);
	/* 30 bytes are there at submit: taken inline, the rest waits. */
	write_all(p[1], src, 30);
	read_waits(ctx, &rd, p[0], buf, sizeof(buf), FSAIO_REQ_FULL);
	write_all(p[1], src + 30, 50);
	quiet(ctx);
	write_all(p[1], src + 80, 20);
	reap_read(ctx, buf, src, 100);
	struct fsaio_stats st = t_stats(ctx);
	cr_assert_eq(st.partial_inline, 1);
	cr_assert_eq(st.bytes_inline, 30);
	done_pipe(ctx, p);
}

Test(pollable, eof_completes_with_bytes_done)
{
	fsaio_ctx_t *ctx = t_ctx(NULL);
	char buf[100];
	struct fsaio_req rd;
	int p[2];

	/* Nothing read: EOF is res 0. */
	mkpipe(p, 0);
	read_waits(ctx, &rd, p[0], buf, sizeof(buf), 0);
	close(p[1]);
	cr_assert_eq(reap1(ctx).res, 0);
	close(p[0]);

	/* A FULL read that got 30 bytes before the writer left: 30. */
	mkpipe(p, 0);
	read_waits(ctx, &rd, p[0], buf, sizeof(buf), FSAIO_REQ_FULL);
	write_all(p[1], "abcdefghijklmnopqrstuvwxyz0123", 30);
	quiet(ctx);
	close(p[1]);
	reap_read(ctx, buf, "abcdefghijklmnopqrstuvwxyz0123", 30);
	close(p[0]);
	t_ctx_destroy(ctx);
}

/* A write to a pipe whose reader left: -EPIPE, or the bytes that went in. */
Test(pollable, write_without_reader)
{
	fsaio_ctx_t *ctx = t_ctx(NULL);
	uint8_t *src = calloc(1, MiB);
	struct fsaio_req wr;
	int p[2];

	cr_assert_not_null(src);
	signal(SIGPIPE, SIG_IGN);
	mkpipe(p, 64 * KiB);
	close(p[0]);
	fsaio_prep_pwrite(&wr, p[1], src, 100, -1);
	t_submit1(ctx, &wr);
	cr_assert_eq(reap1(ctx).res, -EPIPE);
	close(p[1]);

	mkpipe(p, 64 * KiB);
	fsaio_prep_pwrite(&wr, p[1], src, MiB, -1);
	t_submit1(ctx, &wr);
	quiet(ctx);
	close(p[0]);            /* the poller's next attempt meets EPIPE */
	struct fsaio_event ev = reap1(ctx);
	cr_assert_eq(ev.res, 64 * KiB, "res %lld", (long long)ev.res);
	close(p[1]);
	t_ctx_destroy(ctx);
	free(src);
}

Test(pollable, caller_nowait_gives_eagain)
{
	fsaio_ctx_t *ctx = t_ctx(NULL);
	char buf[16];
	int p[2];

	mkpipe(p, 0);
	cr_assert_eq(read_alone(ctx, p[0], buf, sizeof(buf), -1, RWF_NOWAIT), -EAGAIN);
	write_all(p[1], "xy", 2);
	cr_assert_eq(read_alone(ctx, p[0], buf, sizeof(buf), -1, RWF_NOWAIT), 2);
	done_pipe(ctx, p);
}

/* FSAIO_CTX_NO_INLINE: nothing in the submitter, the poller does it all. */
Test(pollable, no_inline_goes_through_the_poller)
{
	struct fsaio_params prm = { .flags = FSAIO_CTX_NO_INLINE };
	fsaio_ctx_t *ctx = t_ctx(&prm);
	char buf[16];
	int p[2];

	mkpipe(p, 0);
	write_all(p[1], "ready", 5);
	cr_assert_eq(read_alone(ctx, p[0], buf, sizeof(buf), -1, 0), 5);
	struct fsaio_stats st = t_stats(ctx);
	cr_assert_eq(st.completed_inline, 0);
	cr_assert_eq(st.bytes_worker, 5);
	cr_assert_eq(st.pool_threads, 0);
	done_pipe(ctx, p);
}

/* An offset on a pipe means nothing and is ignored (as the header says). */
Test(pollable, offset_is_ignored)
{
	fsaio_ctx_t *ctx = t_ctx(NULL);
	char buf[16];
	int p[2];

	mkpipe(p, 0);
	write_all(p[1], "abc", 3);
	cr_assert_eq(read_alone(ctx, p[0], buf, sizeof(buf), 4096, 0), 3);
	done_pipe(ctx, p);
}

/* ---------------------------------------------------------------------- POLL */

Test(pollable, poll_op_waits_for_readiness)
{
	fsaio_ctx_t *ctx = t_ctx(NULL);
	struct fsaio_req in, out, pri;
	struct fsaio_event evs[2];
	int p[2];

	mkpipe(p, 0);
	/* A pipe with room is writable at once: answered inline. */
	fsaio_prep_poll(&out, p[1], POLLOUT);
	t_submit1(ctx, &out);
	cr_assert_eq(reap1(ctx).res, POLLOUT);

	fsaio_prep_poll(&in, p[0], POLLIN);
	fsaio_prep_poll(&pri, p[0], POLLPRI);
	t_submit1(ctx, &in);
	t_submit1(ctx, &pri);
	quiet(ctx);
	write_all(p[1], "x", 1);
	/* Only the one waiting for POLLIN is answered. */
	struct fsaio_event ev = reap1(ctx);
	cr_assert_eq(ev.req, &in);
	cr_assert_eq(ev.res, POLLIN);
	/* The data is still there: POLL consumes nothing. */
	char c;
	cr_assert_eq(read(p[0], &c, 1), 1);
	cr_assert_eq(c, 'x');
	/* The writer leaving answers the other with POLLHUP. */
	close(p[1]);
	ev = reap1(ctx);
	cr_assert_eq(ev.req, &pri);
	cr_assert_eq(ev.res, POLLHUP);
	(void)evs;
	t_ctx_destroy(ctx);
	close(p[0]);
}

Test(pollable, eventfd_read_and_poll)
{
	fsaio_ctx_t *ctx = t_ctx(NULL);
	int efd = eventfd(0, EFD_CLOEXEC);
	uint64_t v = 0;
	struct fsaio_req rd, pl;
	struct fsaio_event evs[2];

	cr_assert_geq(efd, 0);
	fsaio_prep_pread(&rd, efd, &v, sizeof(v), -1);
	fsaio_prep_poll(&pl, efd, POLLIN);
	t_submit1(ctx, &pl);
	t_submit1(ctx, &rd);
	quiet(ctx);
	cr_assert_eq(eventfd_write(efd, 5), 0);
	t_reap_all(ctx, 2, evs, T_EVENT_TIMEOUT_MS);
	cr_assert_eq(t_event_of(evs, 2, &rd)->res, 8);
	cr_assert_eq(v, 5);
	cr_assert_eq(t_event_of(evs, 2, &pl)->res & POLLIN, POLLIN);
	/* An anonymous inode is pollable: the poller served both. */
	cr_assert_eq(t_stats(ctx).pool_threads, 0);
	t_ctx_destroy(ctx);
	close(efd);
}

/* ------------------------------------------------------------------- FIFOs */

/* A FIFO opened by name refuses RWF_NOWAIT; its blocking fds are still
 * waited on without a thread (vmsplice/splice with SPLICE_F_NONBLOCK),
 * and the caller's O_NONBLOCK stays as it was. */
Test(pollable, blocking_fifo)
{
	size_t len = MiB;
	fsaio_ctx_t *ctx = t_ctx(NULL);
	uint8_t *src = malloc(len);
	char buf[64];
	struct fsaio_req rd, wr;
	struct drain d;
	int f[2];

	cr_assert_not_null(src);
	mkfifo_pair(f, false);
	read_waits(ctx, &rd, f[0], buf, sizeof(buf), 0);
	write_all(f[1], "through the fifo", 16);
	cr_assert_eq(reap1(ctx).res, 16);
	cr_assert_eq(memcmp(buf, "through the fifo", 16), 0);

	t_fill_pattern(src, len, 0, 14);
	fsaio_prep_pwrite(&wr, f[1], src, len, -1);
	t_submit1(ctx, &wr);
	quiet(ctx);
	drain_start(&d, f[0], len);
	struct fsaio_event ev = reap1(ctx);
	drain_join(&d);
	cr_assert_eq(ev.res, (int64_t)len);
	cr_assert_eq(d.got, len);
	t_check_pattern(d.buf, len, 0, 14);
	cr_assert_eq(t_stats(ctx).pool_threads, 0);
	cr_assert_eq(fcntl(f[0], F_GETFL) & O_NONBLOCK, 0);
	cr_assert_eq(fcntl(f[1], F_GETFL) & O_NONBLOCK, 0);

	/* EOF when the writer leaves. */
	read_waits(ctx, &rd, f[0], buf, sizeof(buf), 0);
	close(f[1]);
	cr_assert_eq(reap1(ctx).res, 0);
	t_ctx_destroy(ctx);
	free(d.buf);
	free(src);
	close(f[0]);
}

Test(pollable, nonblocking_fifo)
{
	fsaio_ctx_t *ctx = t_ctx(NULL);
	char buf[64];
	struct fsaio_req rd, wr;
	int f[2];

	mkfifo_pair(f, true);
	cr_assert_eq(fcntl(f[0], F_SETFL, O_NONBLOCK), 0);
	read_waits(ctx, &rd, f[0], buf, sizeof(buf), 0);
	fsaio_prep_pwrite(&wr, f[1], "nb", 2, -1);
	t_submit1(ctx, &wr);
	reap_pair(ctx, &rd, 2, &wr, 2);
	cr_assert_eq(t_stats(ctx).pool_threads, 0);
	done_pipe(ctx, f);
}

/* ------------------------------------------------------------------- a tty */

/* A blocking pty refuses RWF_NOWAIT and has no splice: it waits for
 * readiness on the poller, and a worker makes the call once it is ready. */
Test(pollable, blocking_pty)
{
	fsaio_ctx_t *ctx = t_ctx(NULL);
	char buf[64] = "";
	struct fsaio_req rd, wr;
	int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC), s;

	if (m < 0)
		cr_assert_fail("no pty: %s", strerror(errno));
	cr_assert_eq(grantpt(m), 0);
	cr_assert_eq(unlockpt(m), 0);
	s = open(ptsname(m), O_RDWR | O_NOCTTY | O_CLOEXEC);
	cr_assert_geq(s, 0);
	read_waits(ctx, &rd, m, buf, sizeof(buf), 0);
	fsaio_prep_pwrite(&wr, s, "tty\n", 4, -1);
	t_submit1(ctx, &wr);
	struct fsaio_event evs[2];
	t_reap_all(ctx, 2, evs, T_EVENT_TIMEOUT_MS);
	cr_assert_eq(t_event_of(evs, 2, &wr)->res, 4);
	cr_assert_gt(t_event_of(evs, 2, &rd)->res, 0);
	cr_assert_eq(strncmp(buf, "tty", 3), 0, "read \"%s\"", buf);
	t_ctx_destroy(ctx);
	close(s);
	close(m);
}

/* ------------------------------------------------------------------ cancel */

Test(pollable, cancel_waiting_read)
{
	fsaio_ctx_t *ctx = t_ctx(NULL);
	char buf[16], c;
	struct fsaio_req rd;
	int p[2];

	mkpipe(p, 0);
	fsaio_prep_pread(&rd, p[0], buf, sizeof(buf), -1);
	rd.user_data = &c;
	t_submit1(ctx, &rd);
	quiet(ctx);
	T_ASSERT_RET(fsaio_cancel(ctx, &rd), 0);
	struct fsaio_event ev = reap1(ctx);     /* exactly one */
	cr_assert_eq(ev.req, &rd);
	cr_assert_eq(ev.user_data, &c);
	cr_assert_eq(ev.res, -ECANCELED);
	cr_assert_eq(ev.res2, 0);
	T_ASSERT_RET(fsaio_cancel(ctx, &rd), -EINVAL);
	/* Data arriving later belongs to nobody: it stays in the pipe. */
	write_all(p[1], "late", 4);
	quiet(ctx);
	cr_assert_eq(read(p[0], buf, sizeof(buf)), 4);
	cr_assert_eq(t_stats(ctx).cancelled, 1);
	done_pipe(ctx, p);
}

/* A write cancelled half-way: -ECANCELED with what went in as res2, and
 * the write queued behind it moves up. */
Test(pollable, cancel_partial_write)
{
	fsaio_ctx_t *ctx = t_ctx(NULL);
	uint8_t *src = calloc(1, MiB);
	struct fsaio_req big, small;
	struct drain d;
	int p[2];

	cr_assert_not_null(src);
	mkpipe(p, 64 * KiB);
	fsaio_prep_pwrite(&big, p[1], src, MiB, -1);
	fsaio_prep_pwrite(&small, p[1], "tail", 4, -1);
	t_submit1(ctx, &big);
	t_submit1(ctx, &small);
	quiet(ctx);
	T_ASSERT_RET(fsaio_cancel(ctx, &big), 0);
	struct fsaio_event ev = reap1(ctx);
	cr_assert_eq(ev.req, &big);
	cr_assert_eq(ev.res, -ECANCELED);
	cr_assert_eq(ev.res2, 64 * KiB);
	drain_start(&d, p[0], 64 * KiB + 4);
	ev = reap1(ctx);
	drain_join(&d);
	cr_assert_eq(ev.req, &small);
	cr_assert_eq(ev.res, 4);
	cr_assert_eq(memcmp(d.buf + 64 * KiB, "tail", 4), 0);
	done_pipe(ctx, p);
	free(d.buf);
	free(src);
}

/* ----------------------------------------------------------------- destroy */

struct tally {
	_Atomic unsigned calls[64];
	_Atomic int64_t res[64];
};

static void count_cb(void *arg, const struct fsaio_event *ev)
{
	struct tally *t = arg;
	unsigned i = (unsigned)(uintptr_t)ev->user_data;

	atomic_fetch_add(&t->calls[i], 1);
	atomic_store(&t->res[i], ev->res);
}

/* Destroy with reads, writes and polls waiting: each gets exactly one
 * callback, -ECANCELED, and the poller thread is gone afterwards. */
Test(pollable, destroy_cancels_waiting)
{
	enum { NR = 40, NP = 10 };
	static struct tally t;
	struct fsaio_params prm = { .complete = count_cb, .complete_arg = &t };
	struct fsaio_req reqs[NR + NP + 1], *rp[NR + NP + 1];
	char bufs[NR][8];
	uint8_t *src = calloc(1, MiB);
	int p[NR][2], w[2];
	unsigned base = count_threads(), n = 0;

	cr_assert_not_null(src);
	fsaio_ctx_t *ctx = t_ctx(&prm);
	for (unsigned i = 0; i < NR; i++) {
		mkpipe(p[i], 0);
		fsaio_prep_pread(&reqs[n], p[i][0], bufs[i], sizeof(bufs[i]), -1);
		reqs[n].user_data = (void *)(uintptr_t)n;
		rp[n] = &reqs[n];
		n++;
	}
	for (unsigned i = 0; i < NP; i++) {
		fsaio_prep_poll(&reqs[n], p[i][0], POLLIN);
		reqs[n].user_data = (void *)(uintptr_t)n;
		rp[n] = &reqs[n];
		n++;
	}
	mkpipe(w, 64 * KiB);
	fsaio_prep_pwrite(&reqs[n], w[1], src, MiB, -1);
	reqs[n].user_data = (void *)(uintptr_t)n;
	rp[n] = &reqs[n];
	n++;
	t_submit(ctx, rp, n);
	t_sleep_ms(QUIET_MS);
	for (unsigned i = 0; i < n; i++)
		cr_assert_eq(atomic_load(&t.calls[i]), 0, "request %u completed early", i);
	t_ctx_destroy(ctx);
	for (unsigned i = 0; i < n; i++) {
		cr_assert_eq(atomic_load(&t.calls[i]), 1, "request %u: %u callbacks", i,
			     atomic_load(&t.calls[i]));
		cr_assert_eq(atomic_load(&t.res[i]), -ECANCELED);
	}
	cr_assert_eq(count_threads_settled(base), base);
	for (unsigned i = 0; i < NR; i++) {
		close(p[i][0]);
		close(p[i][1]);
	}
	close(w[0]);
	close(w[1]);
	free(src);
}

/* ------------------------------------------------------------------- stress */

/* Writers in other threads race the poller on a few pipes while reads are
 * submitted, cancelled and reaped from the test's thread: every read gets
 * exactly one event, and no byte is lost or read twice. (Events may be
 * reaped out of the order the bytes were read in: an inline completion is
 * posted at once, the poller's at the end of its round.) */
struct feeder {
	pthread_t t;
	int fd;
	unsigned bytes;
};

static void *feed(void *arg)
{
	struct feeder *f = arg;

	for (unsigned i = 0; i < f->bytes; i++) {
		char c = (char)i;

		while (write(f->fd, &c, 1) != 1)
			;
		if (i % 64 == 0)
			sched_yield();
	}
	return NULL;
}

Test(pollable, racing_writers_and_cancels)
{
	enum { NP = 4, BYTES = 20000, INFL = 8 };
	fsaio_ctx_t *ctx = t_ctx(NULL);
	struct feeder f[NP];
	int p[NP][2];
	static struct fsaio_req reqs[NP][INFL];
	static char bufs[NP][INFL][16];
	static unsigned hist[NP][256];
	uint64_t got[NP] = { 0 };
	bool finished[NP] = { false };
	unsigned done = 0, cancels = 0;

	for (unsigned i = 0; i < NP; i++) {
		mkpipe(p[i], 0);
		for (unsigned k = 0; k < INFL; k++) {
			struct fsaio_req *r = &reqs[i][k];

			fsaio_prep_pread(r, p[i][0], bufs[i][k], sizeof(bufs[i][k]), -1);
			r->user_data = (void *)(uintptr_t)i;
			t_submit1(ctx, r);
		}
		f[i].fd = p[i][1];
		f[i].bytes = BYTES;
		cr_assert_eq(pthread_create(&f[i].t, NULL, feed, &f[i]), 0);
	}
	while (done < NP) {
		struct fsaio_event evs[16];
		struct timespec ts = { 20, 0 };
		int n = T_CALL(fsaio_getevents(ctx, 1, 16, evs, &ts));

		cr_assert_gt(n, 0, "stalled: %d", n);
		for (int e = 0; e < n; e++) {
			unsigned i = (unsigned)(uintptr_t)evs[e].user_data;
			struct fsaio_req *r = evs[e].req;

			if (evs[e].res == -ECANCELED) {
				cr_assert_eq(evs[e].res2, 0);
			} else {
				cr_assert_gt(evs[e].res, 0, "res %lld", (long long)evs[e].res);
				for (int64_t b = 0; b < evs[e].res; b++)
					hist[i][(uint8_t)((char *)r->buf)[b]]++;
				got[i] += (uint64_t)evs[e].res;
			}
			cr_assert_leq(got[i], BYTES);
			if (got[i] == BYTES) {
				done += !finished[i];
				finished[i] = true;     /* no more reads */
				continue;
			}
			fsaio_prep_pread(r, p[i][0], r->buf, 16, -1);
			r->user_data = (void *)(uintptr_t)i;
			t_submit1(ctx, r);
			/* Every so often, take one back at once. */
			if (++cancels % 7 == 0) {
				int c = T_CALL(fsaio_cancel(ctx, r));

				cr_assert(c == 0 || c == -EBUSY || c == -EINVAL, "cancel %d", c);
			}
		}
	}
	for (unsigned i = 0; i < NP; i++) {
		cr_assert_eq(pthread_join(f[i].t, NULL), 0);
		for (unsigned v = 0; v < 256; v++)
			cr_assert_eq(hist[i][v], BYTES / 256 + (v < BYTES % 256),
				     "pipe %u: byte %u seen %u times", i, v, hist[i][v]);
	}
	t_ctx_destroy(ctx);     /* the reads still waiting are cancelled */
	for (unsigned i = 0; i < NP; i++) {
		close(p[i][0]);
		close(p[i][1]);
	}
}

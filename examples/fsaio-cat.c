/* SPDX-License-Identifier: MIT */
/*
 * fsaio-cat: concatenate files to standard output, reading ahead
 * asynchronously with libfsaio.
 *
 *   fsaio-cat [FILE]...        no FILE, or "-", reads standard input
 *
 * A regular file is read with up to DEPTH chunk reads in flight, written out
 * strictly in file order: cached chunks complete inside fsaio_submit(), the
 * others are read by the engine's workers while earlier chunks are being
 * written. Pipes, terminals and other streams have no offsets, so they are
 * read one request at a time (offset -1), each completing, as read(2)
 * does, with what is there.
 *
 * As cat(1) does, a file that cannot be opened or read is reported on stderr
 * and skipped; the exit status is then 1.
 */
#include <errno.h>
#include <fcntl.h>
#include <fsaio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEPTH 16
#define CHUNK (128 * 1024)

/* One chunk read: the request, its buffer, and its result once reaped. */
struct slot {
	struct fsaio_req req;
	char *buf;
	int64_t res;
	int done;
};

/*
 * The read window: slots [head, head + inflight) (modulo DEPTH) are
 * submitted, in file order; each is in flight or done and not yet written.
 */
struct window {
	fsaio_ctx_t *ctx;
	struct slot slots[DEPTH];
	unsigned head, inflight;
};

static void write_all(const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(STDOUT_FILENO, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			fprintf(stderr, "fsaio-cat: write error: %s\n", strerror(errno));
			exit(1);
		}
		p += w;
		n -= (size_t)w;
	}
}

/* Wait for at least one completion and mark the slots it finished. */
static void reap(struct window *w)
{
	struct fsaio_event ev[DEPTH];
	int n = fsaio_getevents(w->ctx, 1, DEPTH, ev, NULL);

	if (n < 0 && n != -EINTR) {
		fprintf(stderr, "fsaio-cat: fsaio_getevents: %s\n", strerror(-n));
		exit(1);
	}
	for (int i = 0; i < n; i++) {
		struct slot *s = ev[i].user_data;

		s->res = ev[i].res;
		s->done = 1;
	}
}

/* Wait for every read in flight and drop what they read. */
static void drain(struct window *w)
{
	for (; w->inflight; w->inflight--, w->head = (w->head + 1) % DEPTH)
		while (!w->slots[w->head].done)
			reap(w);
}

/*
 * Copy fd to stdout. A regular file is read from offset *pos on, and *pos
 * is advanced by what was copied; a stream passes pos NULL (offset -1).
 * size is where a regular file ended at open: the window is filled only up
 * to there, and past it one read at a time shows whether the file grew.
 * Returns 0 at end of file or the -errno of a failed read.
 */
static int copy_fd(struct window *w, int fd, int64_t *pos, int64_t size)
{
	int64_t next = pos ? *pos : -1; /* offset of the next read to submit */

	for (;;) {
		/* Fill the window. Only 0 means end of file, so past the known
		 * size one read at a time is enough to see it. */
		while (w->inflight < DEPTH && (w->inflight == 0 || (pos && next < size))) {
			struct slot *s = &w->slots[(w->head + w->inflight) % DEPTH];
			struct fsaio_req *r = &s->req;
			int ret;

			fsaio_prep_pread(r, fd, s->buf, CHUNK, next);
			r->user_data = s;
			s->done = 0;
			ret = fsaio_submit(w->ctx, &r, 1);
			if (ret < 0) {
				drain(w);
				return ret;
			}
			w->inflight++;
			if (pos)
				next += CHUNK;
		}

		/* Write out the oldest chunk once it is read. */
		struct slot *s = &w->slots[w->head];

		while (!s->done)
			reap(w);
		w->head = (w->head + 1) % DEPTH;
		w->inflight--;
		if (s->res <= 0) {
			drain(w);
			return (int)s->res;
		}
		write_all(s->buf, (size_t)s->res);
		if (!pos)
			continue;
		*pos += s->res;
		/* A short read ends what can be read in one go (end of file,
		 * or an error after some bytes): the reads queued beyond it
		 * are dropped and reading goes on from where this one ended,
		 * which returns 0 at end of file or the error. */
		if (s->res < CHUNK) {
			drain(w);
			next = *pos;
		}
	}
}

/* Copy one operand ("-" is stdin) to stdout: 0, or 1 if it failed. */
static int cat_one(struct window *w, const char *name)
{
	int is_stdin = strcmp(name, "-") == 0;
	int fd = is_stdin ? STDIN_FILENO : open(name, O_RDONLY | O_CLOEXEC);
	struct stat st;
	int ret;

	if (fd < 0) {
		fprintf(stderr, "fsaio-cat: %s: %s\n", name, strerror(errno));
		return 1;
	}
	if (fstat(fd, &st) < 0) {
		ret = -errno;
	} else if (S_ISDIR(st.st_mode)) {
		ret = -EISDIR;
	} else if (S_ISREG(st.st_mode)) {
		/* stdin may be a file already partly read: carry on from its
		 * offset, and leave the offset after what was copied. */
		off_t start = is_stdin ? lseek(fd, 0, SEEK_CUR) : 0;
		int64_t pos = start < 0 ? 0 : start;

		ret = copy_fd(w, fd, &pos, st.st_size);
		if (is_stdin)
			lseek(fd, pos, SEEK_SET);
	} else {
		ret = copy_fd(w, fd, NULL, 0);
	}
	if (!is_stdin)
		close(fd);
	if (ret < 0) {
		fprintf(stderr, "fsaio-cat: %s: %s\n", name, strerror(-ret));
		return 1;
	}
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: fsaio-cat [OPTION]... [FILE]...\n"
		"Concatenate FILEs to standard output, reading ahead with libfsaio.\n"
		"With no FILE, or when FILE is -, read standard input.\n"
		"\n"
		"  -h, --help     print this help and exit\n"
		"      --version  print the version and exit\n"
		"\n"
		"Exit status: 0 if every FILE was copied, 1 if one could not be\n"
		"opened or read (the others are still copied), 2 on a bad option.\n");
}

int main(int argc, char **argv)
{
	static char *stdin_only[] = { "-", NULL };
	struct window w = { 0 };
	char **files;
	int i, ret, failed = 0;

	/* Options come first; "--" ends them and "-" alone is a file. */
	for (i = 1; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
		if (!strcmp(argv[i], "--")) {
			i++;
			break;
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(argv[i], "--version")) {
			/* The running library's version. */
			printf("fsaio-cat (libfsaio) %s\n", fsaio_version());
			return 0;
		} else {
			fprintf(stderr, "fsaio-cat: invalid option '%s' (see fsaio-cat --help)\n", argv[i]);
			return 2;
		}
	}
	files = i < argc ? argv + i : stdin_only;

	/* One context for all files; queue_depth bounds the reads in flight. */
	ret = fsaio_ctx_create(&(struct fsaio_params){ .queue_depth = DEPTH }, &w.ctx);
	if (ret < 0) {
		fprintf(stderr, "fsaio-cat: fsaio_ctx_create: %s\n", strerror(-ret));
		return 1;
	}
	for (i = 0; i < DEPTH; i++) {
		w.slots[i].buf = malloc(CHUNK);
		if (!w.slots[i].buf) {
			fprintf(stderr, "fsaio-cat: %s\n", strerror(ENOMEM));
			return 1;
		}
	}

	for (; *files; files++)
		failed |= cat_one(&w, *files);

	fsaio_ctx_destroy(w.ctx);
	for (i = 0; i < DEPTH; i++)
		free(w.slots[i].buf);
	return failed;
}

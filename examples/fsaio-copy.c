/* SPDX-License-Identifier: MIT */
/*
 * fsaio-copy: copy a file with several block copies in flight at once.
 *
 *   fsaio-copy [-j N] [-b SIZE] SRC DST
 *
 * The file is cut into blocks of SIZE bytes (default 128 KiB); up to N
 * (default 8) are in flight, each first read from SRC and then written to
 * DST at the same offset, by the same request struct and buffer. As soon
 * as a block is written, its slot takes the next block. Blocks finish in
 * any order, so DST is first set to SRC's size with ftruncate(), and
 * flushed with an fsync request at the end: when fsaio-copy exits 0, the
 * copy is on stable storage.
 */
#include <errno.h>
#include <fcntl.h>
#include <fsaio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEFAULT_JOBS 8
#define DEFAULT_BLOCK (128 * 1024)
#define MAX_JOBS 1024
#define MAX_BLOCK (64 * 1024 * 1024)

/*
 * One block being copied. phase says what its request is doing; done
 * counts the bytes of the block that phase has moved so far, because a
 * read or write may transfer less than asked and is then submitted again
 * for the rest.
 */
struct slot {
	struct fsaio_req req;
	enum { IDLE, READING, WRITING } phase;
	int64_t off;            /* where the block starts in both files */
	size_t len, done;
	char *buf;
};

struct copy {
	fsaio_ctx_t *ctx;
	int src, dst;
	int64_t size, next;     /* SRC's size; the next block to start */
	const char *src_name, *dst_name;
};

static void usage(void)
{
	printf(
		"Usage: fsaio-copy [-j N] [-b SIZE] SRC DST\n"
		"Copy the file SRC to DST with N block copies in flight.\n"
		"\n"
		"  -j N      blocks in flight, 1 to %d (default %d)\n"
		"  -b SIZE   block size in bytes; k, M suffixes for KiB, MiB\n"
		"            (default 128k, at most 64M)\n"
		"  -h        print this help and exit\n"
		"\n"
		"DST is created (with SRC's permissions) or overwritten, and has\n"
		"SRC's size. Exit status: 0 copied and synced, 1 failed, 2 bad usage.\n",
		MAX_JOBS, DEFAULT_JOBS);
}

/* A number from 1 to max, with an optional k or M suffix when suffix is
 * set; -1 if it is not one. */
static long parse_number(const char *s, long max, int suffix)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || v <= 0)
		return -1;
	if (suffix && (*end == 'k' || *end == 'K')) {
		v = v > max / 1024 ? max + 1 : v * 1024;
		end++;
	} else if (suffix && *end == 'M') {
		v = v > max / (1024 * 1024) ? max + 1 : v * 1024 * 1024;
		end++;
	}
	return *end || v > max ? -1 : v;
}

/* Submit the slot's request for what is left of its current phase. */
static int submit_phase(struct copy *c, struct slot *s)
{
	struct fsaio_req *r = &s->req;

	if (s->phase == READING)
		fsaio_prep_pread(r, c->src, s->buf + s->done, s->len - s->done,
				 s->off + (int64_t)s->done);
	else
		fsaio_prep_pwrite(r, c->dst, s->buf + s->done, s->len - s->done,
				  s->off + (int64_t)s->done);
	r->user_data = s;
	return fsaio_submit(c->ctx, &r, 1);
}

/* Give the slot the next block, if any is left: 1 started, 0 none left. */
static int start_block(struct copy *c, struct slot *s, size_t block)
{
	int ret;

	if (c->next >= c->size) {
		s->phase = IDLE;
		return 0;
	}
	s->off = c->next;
	s->len = c->size - c->next < (int64_t)block ? (size_t)(c->size - c->next) : block;
	s->done = 0;
	s->phase = READING;
	c->next += (int64_t)s->len;
	ret = submit_phase(c, s);
	return ret < 0 ? ret : 1;
}

/*
 * Move the slot on after its request completed with res: the rest of a
 * short transfer, from reading to writing, or to the next block.
 * 1 while the slot has a request in flight, 0 when idle, or -errno.
 */
static int advance(struct copy *c, struct slot *s, int64_t res, size_t block)
{
	int ret;

	if (res < 0) {
		fprintf(stderr, "fsaio-copy: %s: %s\n",
			s->phase == READING ? c->src_name : c->dst_name, strerror((int)-res));
		return (int)res;
	}
	if (res == 0) {         /* no progress: stop rather than loop */
		if (s->phase == READING)
			fprintf(stderr, "fsaio-copy: %s: file shrank while being copied\n", c->src_name);
		else
			fprintf(stderr, "fsaio-copy: %s: write made no progress\n", c->dst_name);
		return -EIO;
	}
	s->done += (size_t)res;
	if (s->done == s->len && s->phase == WRITING) {
		ret = start_block(c, s, block);
	} else {
		if (s->done == s->len) {
			s->phase = WRITING;
			s->done = 0;
		}
		ret = submit_phase(c, s);
		ret = ret < 0 ? ret : 1;
	}
	if (ret < 0)
		fprintf(stderr, "fsaio-copy: fsaio_submit: %s\n", strerror(-ret));
	return ret;
}

int main(int argc, char **argv)
{
	long jobs = DEFAULT_JOBS, block = DEFAULT_BLOCK;
	struct copy c = { .src = -1, .dst = -1 };
	struct slot *slots;
	struct stat st, dst_st;
	long active = 0;
	int opt, ret, failed = 0;

	opterr = 0;     /* errors are reported below, one line each */
	while ((opt = getopt(argc, argv, ":j:b:h")) != -1) {
		switch (opt) {
		case 'j':
			jobs = parse_number(optarg, MAX_JOBS, 0);
			if (jobs < 0) {
				fprintf(stderr, "fsaio-copy: -j: '%s' is not a number from 1 to %d\n",
					optarg, MAX_JOBS);
				return 2;
			}
			break;
		case 'b':
			block = parse_number(optarg, MAX_BLOCK, 1);
			if (block < 0) {
				fprintf(stderr, "fsaio-copy: -b: '%s' is not a size from 1 to 64M\n", optarg);
				return 2;
			}
			break;
		case 'h':
			usage();
			return 0;
		case ':':
			fprintf(stderr, "fsaio-copy: option '-%c' needs a value\n", optopt);
			return 2;
		default:
			fprintf(stderr, "fsaio-copy: invalid option '-%c' (see fsaio-copy -h)\n", optopt);
			return 2;
		}
	}
	if (argc - optind != 2) {
		fprintf(stderr, "fsaio-copy: expected SRC and DST (see fsaio-copy -h)\n");
		return 2;
	}
	c.src_name = argv[optind];
	c.dst_name = argv[optind + 1];

	c.src = open(c.src_name, O_RDONLY | O_CLOEXEC);
	if (c.src < 0 || fstat(c.src, &st) < 0) {
		fprintf(stderr, "fsaio-copy: %s: %s\n", c.src_name, strerror(errno));
		return 1;
	}
	if (!S_ISREG(st.st_mode)) {
		fprintf(stderr, "fsaio-copy: %s: not a regular file\n", c.src_name);
		return 1;
	}
	/* No O_TRUNC: DST may be SRC itself under another name, checked next. */
	c.dst = open(c.dst_name, O_WRONLY | O_CREAT | O_CLOEXEC, st.st_mode & 0777);
	if (c.dst < 0 || fstat(c.dst, &dst_st) < 0) {
		fprintf(stderr, "fsaio-copy: %s: %s\n", c.dst_name, strerror(errno));
		return 1;
	}
	if (st.st_dev == dst_st.st_dev && st.st_ino == dst_st.st_ino) {
		fprintf(stderr, "fsaio-copy: %s and %s are the same file\n", c.src_name, c.dst_name);
		return 1;
	}
	/* DST gets SRC's size up front: blocks are written in any order. */
	c.size = st.st_size;
	if (ftruncate(c.dst, c.size) < 0) {
		fprintf(stderr, "fsaio-copy: %s: %s\n", c.dst_name, strerror(errno));
		return 1;
	}

	/* Every slot's one request may be in flight at once. */
	ret = fsaio_ctx_create(&(struct fsaio_params){ .queue_depth = (uint32_t)jobs }, &c.ctx);
	if (ret < 0) {
		fprintf(stderr, "fsaio-copy: fsaio_ctx_create: %s\n", strerror(-ret));
		return 1;
	}
	slots = calloc((size_t)jobs, sizeof(*slots));
	for (long i = 0; slots && i < jobs; i++)
		if (!(slots[i].buf = malloc((size_t)block))) {
			fprintf(stderr, "fsaio-copy: %s\n", strerror(ENOMEM));
			return 1;
		}
	if (!slots) {
		fprintf(stderr, "fsaio-copy: %s\n", strerror(ENOMEM));
		return 1;
	}

	/* Start one block per slot, then move each slot on as it completes.
	 * After a failure, no new request is made and the ones in flight are
	 * waited for: their buffers must not be freed under them. */
	for (long i = 0; i < jobs; i++) {
		ret = start_block(&c, &slots[i], (size_t)block);
		if (ret < 0) {
			fprintf(stderr, "fsaio-copy: fsaio_submit: %s\n", strerror(-ret));
			failed = 1;
			break;
		}
		active += ret;
	}
	while (active) {
		struct fsaio_event ev[64];
		int n = fsaio_getevents(c.ctx, 1, 64, ev, NULL);

		if (n < 0 && n != -EINTR) {
			fprintf(stderr, "fsaio-copy: fsaio_getevents: %s\n", strerror(-n));
			return 1;
		}
		for (int i = 0; i < n; i++) {	/* none on -EINTR */
			struct slot *s = ev[i].user_data;

			ret = failed ? 0 : advance(&c, s, ev[i].res, (size_t)block);
			if (ret <= 0) {
				active--;
				failed |= ret < 0;
			}
		}
	}

	/* Every block is written: flush DST, through the engine as well. */
	if (!failed) {
		struct fsaio_req sync, *r = &sync;
		struct fsaio_event ev;

		fsaio_prep_fsync(&sync, c.dst);
		ret = fsaio_submit(c.ctx, &r, 1);
		if (ret == 1) {
			do
				ret = fsaio_getevents(c.ctx, 1, 1, &ev, NULL);
			while (ret == -EINTR);
			if (ret == 1)
				ret = (int)ev.res;
		}
		if (ret < 0) {
			fprintf(stderr, "fsaio-copy: %s: fsync: %s\n", c.dst_name, strerror(-ret));
			failed = 1;
		}
	}

	fsaio_ctx_destroy(c.ctx);
	for (long i = 0; i < jobs; i++)
		free(slots[i].buf);
	free(slots);
	close(c.src);
	if (close(c.dst) < 0) {
		fprintf(stderr, "fsaio-copy: %s: %s\n", c.dst_name, strerror(errno));
		failed = 1;
	}
	return failed;
}

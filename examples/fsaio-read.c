/* fsaio-read FILE: read the first 64 KiB of FILE as four requests in
 * flight at once, then print each one's result. */
#include <fcntl.h>
#include <fsaio.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define NREQ 4
#define CHUNK 16384

int main(int argc, char **argv)
{
	static char buf[NREQ][CHUNK];
	struct fsaio_req req[NREQ], *list[NREQ];
	struct fsaio_event ev[NREQ];
	fsaio_ctx_t *ctx;
	int fd, ret, got = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: fsaio-read FILE\n");
		return 2;
	}
	fd = open(argv[1], O_RDONLY);
	if (fd < 0) {
		perror(argv[1]);
		return 1;
	}
	ret = fsaio_ctx_create(NULL, &ctx);
	if (ret < 0) {
		fprintf(stderr, "fsaio_ctx_create: %s\n", strerror(-ret));
		return 1;
	}
	for (int i = 0; i < NREQ; i++) {
		fsaio_prep_pread(&req[i], fd, buf[i], CHUNK, (int64_t)i * CHUNK);
		req[i].user_data = &buf[i];
		list[i] = &req[i];
	}
	ret = fsaio_submit(ctx, list, NREQ);
	if (ret != NREQ) {
		fprintf(stderr, "fsaio_submit: %s\n", ret < 0 ? strerror(-ret) : "partial");
		return 1;
	}
	/* Events come in completion order: a cached chunk's at once. */
	while (got < NREQ) {
		ret = fsaio_getevents(ctx, 1, NREQ, ev, NULL);
		if (ret < 0) {
			fprintf(stderr, "fsaio_getevents: %s\n", strerror(-ret));
			return 1;
		}
		for (int i = 0; i < ret; i++) {
			long idx = (long)(ev[i].req - req);

			if (ev[i].res < 0)
				printf("chunk %ld: %s\n", idx, strerror((int)-ev[i].res));
			else
				printf("chunk %ld: %lld bytes\n", idx, (long long)ev[i].res);
		}
		got += ret;
	}
	fsaio_ctx_destroy(ctx);
	close(fd);
	return 0;
}

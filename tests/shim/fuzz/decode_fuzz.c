/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the libaio drop-in's submit-time judging of one iocb
 * (dropin/libaio/decode.c), with a bare context that holds only the eventfd
 * cache (emptied after each input). The input is an iocb (64 bytes)
 * followed by a selector byte: the selector maps aio_fildes and aio_resfd
 * onto a fixed set of real fds (regular file, O_PATH, directory, pipe,
 * socket, eventfd, memfd, closed) or leaves them raw, and aio_buf onto a
 * real buffer or an iovec array (whose entries come from the rest of the
 * input) or leaves it raw. Checked on every input: the answer is 0 or one
 * of the errors the kernel gives at submit; an accepted read or write
 * stays inside MAX_RW_COUNT, the user address range and INT64_MAX; a
 * refused one took nothing (no fd, no memory: ASan's leak check and the
 * fd count say so).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "decode.h"
#include "resfd.h"
#include "usermem.h"

#define NFD 8
static int fds[NFD];
static char buf[65536];
static struct iovec iovs[64];
static struct shim_ctx ctx;   /* only its lock and eventfd cache are used */

static void setup(void)
{
	char path[4096];
	const char *dir = getenv("FSAIO_TEST_BUILDDIR");
	int p[2], sv[2];

	if (fds[0])
		return;
	pthread_mutex_init(&ctx.lock, NULL);
	shim__resfd_init(&ctx);
	/* On disk, in the build tree (or the current directory). */
	snprintf(path, sizeof(path), "%s/decode-fuzz-XXXXXX", dir ? dir : ".");
	fds[0] = mkstemp(path);
	if (fds[0] < 0 || write(fds[0], buf, 8192) != 8192)
		abort();
	fds[1] = open(path, O_PATH);
	unlink(path);
	fds[2] = open("/", O_RDONLY | O_DIRECTORY);
	if (pipe(p) < 0 || socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
		abort();
	fds[3] = p[0];
	fds[4] = sv[0];
	fds[5] = eventfd(0, EFD_NONBLOCK);
	fds[6] = memfd_create("decode-fuzz", 0);
	fds[7] = 900;   /* closed */
}

/* The lowest free fd number now (libFuzzer itself may open some between
 * inputs, for its symbolizer). */
static int lowest_free_fd(void)
{
	int fd = dup(0);

	close(fd);
	return fd;
}

static bool allowed(int ret)
{
	switch (ret) {
	case 0: case -EINVAL: case -EBADF: case -EFAULT: case -EOPNOTSUPP:
	case -EPERM: case -ENOMEM:
		return true;
	default:
		return false;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct shim_slot s;
	struct iocb cb;
	uint8_t sel;
	bool fd_bad;
	int ret, before;

	setup();
	before = lowest_free_fd();
	if (size < sizeof(cb) + 1)
		return 0;
	memcpy(&cb, data, sizeof(cb));
	sel = data[sizeof(cb)];
	data += sizeof(cb) + 1;
	size -= sizeof(cb) + 1;
	if (sel & 1)
		cb.aio_fildes = (uint32_t)fds[cb.aio_fildes % NFD];
	if (sel & 2)
		cb.aio_resfd = (uint32_t)fds[cb.aio_resfd % NFD];
	if (sel & 4) {
		/* A real buffer, or (vectored ops) an array built from the input. */
		if (cb.aio_lio_opcode == IOCB_CMD_PREADV || cb.aio_lio_opcode == IOCB_CMD_PWRITEV) {
			size_t n = size / 16 < 64 ? size / 16 : 64;

			for (size_t i = 0; i < n; i++) {
				uint64_t off, len;

				memcpy(&off, data + i * 16, 8);
				memcpy(&len, data + i * 16 + 8, 8);
				iovs[i].iov_base = (sel & 8) ? (void *)(uintptr_t)off :
						   buf + off % sizeof(buf);
				iovs[i].iov_len = (size_t)len;
			}
			cb.aio_buf = (uint64_t)(uintptr_t)iovs;
			if (sel & 16)
				cb.aio_nbytes = n;
		} else {
			cb.aio_buf = (uint64_t)(uintptr_t)(buf + cb.aio_buf % sizeof(buf));
		}
	}

	ret = shim__decode_head(&cb);
	if (ret) {
		if (ret != -EINVAL)
			abort();
		return 0;
	}
	memset(&s, 0, sizeof(s));
	ret = shim__decode_fd(&ctx, &s, &cb);
	if (!ret)
		ret = shim__decode_op(&s, &cb);
	if (ret)
		ret = shim__decode_fail(&cb, ret, &fd_bad);
	if (!allowed(ret)) {
		fprintf(stderr, "decode answered %d\n", ret);
		abort();
	}
	if (!ret && (s.req.opcode == FSAIO_OP_PREAD || s.req.opcode == FSAIO_OP_PWRITE)) {
		if (s.req.len > SHIM_MAX_RW_COUNT || !shim__user_ok(s.req.buf, s.req.len) ||
		    (uint64_t)s.req.offset + s.req.len > (uint64_t)INT64_MAX)
			abort();
	}
	if (!ret && (s.req.opcode == FSAIO_OP_PREADV || s.req.opcode == FSAIO_OP_PWRITEV)) {
		uint64_t total = 0;

		if (s.req.len > SHIM_UIO_MAXIOV)
			abort();
		for (uint64_t i = 0; i < s.req.len; i++) {
			if (!shim__user_ok(s.req.iov[i].iov_base, s.req.iov[i].iov_len))
				abort();
			total += s.req.iov[i].iov_len;
		}
		if (total > SHIM_MAX_RW_COUNT || (uint64_t)s.req.offset + total > (uint64_t)INT64_MAX)
			abort();
	}
	shim__decode_undo(&s);
	shim__resfd_fini(&ctx);
	/* Nothing kept: the lowest free fd is the one it was. */
	if (lowest_free_fd() != before)
		abort();
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * Compiled, never linked, as C99, C11 and C++17 with -Wall -Wextra -pedantic
 * -Werror: <fsaio.h> must stand alone in each language, and the layout of
 * every public struct must stay what released programs were built with
 * (x86_64 and other LP64 targets; see the ABI policy in README.md).
 */
#include <fsaio.h>
#include <fsaio.h> /* twice: the include guard */

#if defined(__cplusplus)
#define T_ASSERT(name, cond) static_assert(cond, #name)
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define T_ASSERT(name, cond) _Static_assert(cond, #name)
#else
/* C99: an array of negative size is a compile error. */
#define T_ASSERT(name, cond) extern char t_assert_##name[(cond) ? 1 : -1]
#endif

#if defined(__LP64__)
T_ASSERT(req_size, sizeof(struct fsaio_req) == 120);
T_ASSERT(req_user_data, offsetof(struct fsaio_req, user_data) == 0);
T_ASSERT(req_buf, offsetof(struct fsaio_req, buf) == 8);
T_ASSERT(req_iov, offsetof(struct fsaio_req, iov) == 8);
T_ASSERT(req_len, offsetof(struct fsaio_req, len) == 16);
T_ASSERT(req_offset, offsetof(struct fsaio_req, offset) == 24);
T_ASSERT(req_fd, offsetof(struct fsaio_req, fd) == 32);
T_ASSERT(req_opcode, offsetof(struct fsaio_req, opcode) == 36);
T_ASSERT(req_flags, offsetof(struct fsaio_req, flags) == 38);
T_ASSERT(req_rw_flags, offsetof(struct fsaio_req, rw_flags) == 40);
T_ASSERT(req_ioprio, offsetof(struct fsaio_req, ioprio) == 44);
T_ASSERT(req_reserved, offsetof(struct fsaio_req, reserved) == 46);
/* From byte 48 to the end: the engine's private fields, its own to arrange. */
T_ASSERT(req_public_end, offsetof(struct fsaio_req, reserved) + sizeof(uint16_t) == 48);

/* The kernel's struct io_event, field for field. */
T_ASSERT(event_size, sizeof(struct fsaio_event) == 32);
T_ASSERT(event_user_data, offsetof(struct fsaio_event, user_data) == 0);
T_ASSERT(event_req, offsetof(struct fsaio_event, req) == 8);
T_ASSERT(event_res, offsetof(struct fsaio_event, res) == 16);
T_ASSERT(event_res2, offsetof(struct fsaio_event, res2) == 24);

T_ASSERT(params_size, sizeof(struct fsaio_params) == 80);
T_ASSERT(params_queue_depth, offsetof(struct fsaio_params, queue_depth) == 0);
T_ASSERT(params_workers, offsetof(struct fsaio_params, workers) == 4);
T_ASSERT(params_flags, offsetof(struct fsaio_params, flags) == 8);
T_ASSERT(params_miss_backend, offsetof(struct fsaio_params, miss_backend) == 12);
T_ASSERT(params_complete, offsetof(struct fsaio_params, complete) == 16);
T_ASSERT(params_complete_arg, offsetof(struct fsaio_params, complete_arg) == 24);
T_ASSERT(params_reserved, offsetof(struct fsaio_params, reserved) == 32);

/* Counters are taken from reserved[], whose end stays at 256 bytes. */
T_ASSERT(stats_size, sizeof(struct fsaio_stats) == 256);
T_ASSERT(stats_requests, offsetof(struct fsaio_stats, requests) == 0);
T_ASSERT(stats_pool_queue_len, offsetof(struct fsaio_stats, pool_queue_len) == 56);
T_ASSERT(stats_cancelled, offsetof(struct fsaio_stats, cancelled) == 88);
T_ASSERT(stats_bytes_uring, offsetof(struct fsaio_stats, bytes_uring) == 128);
T_ASSERT(stats_reaper_sleeps, offsetof(struct fsaio_stats, reaper_sleeps) == 136);
T_ASSERT(stats_reaper_wakeups, offsetof(struct fsaio_stats, reaper_wakeups) == 144);
T_ASSERT(stats_straight_to_ring, offsetof(struct fsaio_stats, straight_to_ring) == 152);
T_ASSERT(stats_ring_reaped_caller, offsetof(struct fsaio_stats, ring_reaped_caller) == 160);
T_ASSERT(stats_ring_reaped_thread, offsetof(struct fsaio_stats, ring_reaped_thread) == 168);
T_ASSERT(stats_retries, offsetof(struct fsaio_stats, retries) == 32);
T_ASSERT(stats_blocking_inline, offsetof(struct fsaio_stats, blocking_inline) == 176);
T_ASSERT(stats_batch_calls, offsetof(struct fsaio_stats, batch_calls) == 184);
T_ASSERT(stats_batch_requests, offsetof(struct fsaio_stats, batch_requests) == 192);
T_ASSERT(stats_batch_refused, offsetof(struct fsaio_stats, batch_refused) == 200);
T_ASSERT(stats_pool_collected, offsetof(struct fsaio_stats, pool_collected) == 208);
T_ASSERT(stats_reserved, offsetof(struct fsaio_stats, reserved) == 216);
#endif

T_ASSERT(op_pread, FSAIO_OP_PREAD == 1);
T_ASSERT(op_poll, FSAIO_OP_POLL == 7);
T_ASSERT(backend_uring, FSAIO_BACKEND_URING == 2);
T_ASSERT(version_hex, FSAIO_VERSION_HEX ==
	 ((FSAIO_VERSION_MAJOR << 16) | (FSAIO_VERSION_MINOR << 8) | FSAIO_VERSION_PATCH));

/* Every prep helper and declaration used as a program would. The timeout
 * comes as a pointer: strict C99 without _POSIX_C_SOURCE has no complete
 * struct timespec. */
int t_use_fsaio(fsaio_ctx_t *ctx, int fd, char *buf, const struct iovec *iov,
		const struct timespec *ts);
int t_use_fsaio(fsaio_ctx_t *ctx, int fd, char *buf, const struct iovec *iov,
		const struct timespec *ts)
{
	struct fsaio_req r[7];
	struct fsaio_req *rp[7];
	struct fsaio_event ev[7];
	unsigned i;

	fsaio_prep_pread(&r[0], fd, buf, 16, 0);
	fsaio_prep_pwrite(&r[1], fd, buf, 16, 16);
	fsaio_prep_preadv(&r[2], fd, iov, 2, 32);
	fsaio_prep_pwritev(&r[3], fd, iov, 2, 64);
	fsaio_prep_fsync(&r[4], fd);
	fsaio_prep_fdatasync(&r[5], fd);
	fsaio_prep_poll(&r[6], fd, 1);
	for (i = 0; i < 7; i++)
		rp[i] = &r[i];
	if (!fsaio_version_check(FSAIO_VERSION_MAJOR, FSAIO_VERSION_MINOR))
		return -1;
	if (fsaio_submit(ctx, rp, 7) < 0)
		return -1;
	return fsaio_getevents(ctx, 7, 7, ev, ts);
}

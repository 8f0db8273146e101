/* SPDX-License-Identifier: MIT */
/*
 * fsaio-bench: types shared by the driver and the methods.
 *
 * DESIGN: the driver (run.c) owns the I/O slots, the workload, the buffers
 * and the clock; a method (m_*.c) only moves slots from "submitted" to
 * "completed" through its own I/O path. Every method therefore sees the same
 * offsets, the same buffers and the same timing code, so the figures differ
 * only by the path under test. One thread drives a run; a method may start
 * its own threads in setup and must join them in teardown.
 */
#ifndef FSAIO_BENCH_H
#define FSAIO_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define BENCH_MAX_DEPTH 256
#define BENCH_SECTOR 512u
#define BENCH_MAX_METHODS 16
#define BENCH_MAX_FILES 64      /* --files at most */

enum bench_op { BOP_READ = 0, BOP_WRITE = 1 };
enum bench_region { REG_HOT = 0, REG_COLD = 1 };

/* One request slot. The driver fills everything above res before submit;
 * the method sets res when the request completes. */
struct bench_slot {
	void *buf;              /* where the request reads into or writes from */
	uint64_t off;           /* byte offset in the file */
	uint64_t t_submit;      /* ns (CLOCK_MONOTONIC) at the start of the submit call */
	uint32_t len;
	uint16_t file;          /* index into the method's fds */
	uint8_t op;             /* enum bench_op */
	uint8_t region;         /* enum bench_region; REG_COLD unless --cache mix */
	bool counted;           /* submitted after the ramp: its latency is recorded */
	unsigned idx;           /* 0..depth-1: index into the method's per-slot arrays */
	int64_t res;            /* bytes transferred or -errno, set by the method */
	void *rbuf, *wbuf;      /* the slot's read and write buffers (buf is one of them) */
};

/* What a method needs to know to set up one run. */
struct bench_job {
	unsigned nfiles;
	char **paths;
	uint64_t file_size;     /* bytes used in each file */
	unsigned depth;         /* slots in flight at most, already capped for the method */
	uint32_t bs;
	unsigned workers;       /* fsaio pool size; 0 = the engine's default */
	bool direct;            /* the method's: open the files with O_DIRECT */
	const void *arg;        /* the method's: its variant's parameters for the path */
	int fadvise;            /* POSIX_FADV_* applied to every buffered fd, or -1 */
	const char *shim_path;  /* libfsaio-libaio.so, or NULL if none was found */
};

/* The engine's own counters, for methods that have them (fsaio). */
struct bench_engine_stats {
	bool valid;
	uint64_t requests, completed_inline, partial_inline, queued, retries;
	uint64_t probe_calls, probe_cold, bytes_inline, bytes_worker;
	uint64_t readahead_calls, prefetched_bytes, stream_hits, uring_submissions, bytes_uring;
};

/*
 * A method's I/O path, shared by the method and its variants. submit and
 * reap are called from the driver's thread only. submit starts slots[0..n)
 * and returns how many it accepted (always a prefix) or -errno; reap waits
 * until at least min slots are complete (min 0: never waits) and returns up
 * to max of them in done[] with res set, or -errno.
 */
struct bench_path {
	/* 0 if the path can run on this machine, else -1 and why in why[];
	 * NULL when it always can. */
	int (*probe)(const struct bench_job *job, char *why, size_t whylen);
	int (*setup)(const struct bench_job *job, void **state);
	int (*submit)(void *state, struct bench_slot **slots, unsigned n);
	int (*reap)(void *state, unsigned min, unsigned max, struct bench_slot **done);
	void (*engine_stats)(void *state, struct bench_engine_stats *st); /* may be NULL */
	void (*teardown)(void *state);
};

/* A method: a path, and how the driver runs it. */
struct bench_method {
	const char *name;
	const char *what;       /* one line for --list */
	bool direct;            /* opens the files with O_DIRECT: probed for too */
	bool sync;              /* the I/O happens inside submit: run at depth 1 */
	bool extra;             /* a variant: not in "all", run only when named */
	const struct bench_path *path;
	const void *arg;        /* the variant's parameters for the path, or NULL */
};

/* methods.c: 0 if method m can run on this machine, else -1 and why. */
int bench_method_probe(const struct bench_method *m, const struct bench_job *job,
		       char *why, size_t whylen);

/* The POSIX AIO driver (m_posix_aio.c) on a set of aio functions: glibc's
 * for "posix-aio", the drop-in's for "fsaio-posix". */
struct aiocb;
struct sigevent;
struct timespec;
struct bench_pa_api {
	int (*lio_listio)(int mode, struct aiocb *const list[], int n, struct sigevent *sev);
	int (*error)(const struct aiocb *cb);
	ssize_t (*ret)(struct aiocb *cb);
	int (*suspend)(const struct aiocb *const list[], int n, const struct timespec *timeout);
};
int bench_pa_setup(const struct bench_job *job, const struct bench_pa_api *api, void **out);
int bench_pa_submit(void *state, struct bench_slot **v, unsigned n);
int bench_pa_reap(void *state, unsigned min, unsigned max, struct bench_slot **done);
void bench_pa_teardown(void *state);

/* m_pread.c: one slot's I/O with pread/pwrite on fd, its result in res. */
void bench_slot_pio(int fd, struct bench_slot *sl);

/* The paths, one per m_*.c file. */
extern const struct bench_path bench_path_fsaio, bench_path_fsaio_shim, bench_path_fsaio_posix;
extern const struct bench_path bench_path_kaio, bench_path_uring, bench_path_posix_aio;
extern const struct bench_path bench_path_pread, bench_path_threads;

/* methods.c: all methods in table order. */
extern const struct bench_method bench_methods[];
extern const unsigned bench_nmethods;
const struct bench_method *bench_method_find(const char *name);

/* files.c: the job's files as a method holds them, fd[] by a slot's file
 * index; n of them open (0 before bench_fds_open and after bench_fds_close). */
struct bench_fds {
	unsigned n;
	int fd[BENCH_MAX_FILES];
};
/* Open the job's files (O_RDWR, plus O_DIRECT when job->direct), applying
 * job->fadvise to buffered ones: 0, or -errno with none left open. */
int bench_fds_open(struct bench_fds *f, const struct bench_job *job);
void bench_fds_close(struct bench_fds *f);
/* A method's probe for O_DIRECT on the job's file system: 0, or -1 and why. */
int bench_probe_direct(const struct bench_job *job, char *why, size_t whylen);
/* The end of a method's setup: on success the state goes to *out; on
 * failure (e < 0) teardown, which takes a state at any step of its setup,
 * frees it. Returns e. */
static inline int bench_setup_end(int e, void *state, void (*teardown)(void *), void **out)
{
	if (e)
		teardown(state);
	else
		*out = state;
	return e;
}

uint64_t bench_now_ns(void);

/* dl.c: a drop-in's function NAME at VERSION, stored through fn. */
struct bench_dl_sym {
	const char *name, *version;
	void **fn;
};
/* NAME in ../dropin/ beside this program, in buf, or NULL if not there. */
const char *bench_beside_exe(const char *name, char *buf, size_t n);
/* dlopen PATH apart from this program and take every one of SYMS (any
 * version where a versioned one is missing, if any_version): the handle,
 * or NULL and why. */
void *bench_dl_open(const char *path, const struct bench_dl_sym *syms, unsigned nsyms,
		    bool any_version, char *why, size_t n);

#endif /* FSAIO_BENCH_H */

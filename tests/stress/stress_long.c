/* SPDX-License-Identifier: MIT */
/*
 * Scenarios faults and long: a mixed workload under faults injected while
 * it runs. Eight threads submit reads, writes and fsyncs on 64 files of
 * five kinds:
 *  - plain: on the build directory, made cold now and then;
 *  - cut: truncated under the requests and extended again (bytes past the
 *    cut read as the data or as zeros, reads may stop at the cut);
 *  - eio: on an ext4 on a loop device that is shut down once a round
 *    (EXT4_IOC_SHUTDOWN; any request may fail with -EIO), remounted and
 *    rewritten between rounds;
 *  - full: sparse files on a 16 MiB ext4 written past its end (-ENOSPC,
 *    holes read as zeros), emptied between rounds;
 *  - reuse (long mode only): fd numbers that dup2() moves between two files
 *    under queued requests; a request must act on the file its number
 *    named when it was submitted.
 * Half the threads reap with fsaio_getevents and cancel requests; the other
 * half take events through a completion callback and destroy their context
 * with requests in flight. Every write writes the file's own pattern at its
 * offset, so any byte read is checked against it whatever the order.
 *
 * Counted and required to be zero: events lost (not there at the end of a
 * round), duplicated, results out of their kind's rules, wrong bytes.
 * Wrong bytes on the reuse files are reported apart: they are the kernel's
 * rule for fd numbers, which the engine must follow.
 *
 * The loop-device kinds need root, loop devices and mkfs.ext4; without
 * them those files are plain ones, and the run says so.
 *
 * faults: a few seconds, no reuse files (in the stress suite).
 * long: `fsaio_stress --long [--requests N]`, N default 10 million.
 */
#include "stress_core.h"
#include "../fault/f_loop.h"

#include <sched.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/mount.h>


#define L_THREADS 8
#define L_FILES 64
#define L_SLOTS 24              /* requests in flight per thread, at most */
#define L_MAXLEN (32 * KiB)
#define L_PLAIN_SIZE (2 * MiB)
#define L_EIO_SIZE (1 * MiB)
#define L_FULL_SIZE (4 * MiB)   /* 8 of them: twice the small fs */
#define L_DESTROY_EVERY 2000    /* callback threads: requests per context */
#define L_ROUND_MS 2000

enum kind { K_PLAIN, K_CUT, K_EIO, K_FULL, K_REUSE, K_N };
static const char *const kind_name[K_N] = { "plain", "cut", "eio", "full", "reuse" };

enum op { OP_READ, OP_WRITE, OP_FSYNC };

/* A file the threads use. The fd and the sizes are set between rounds by
 * the controller (all threads parked); during a round: cut_at is atomic
 * (the lowest cut of the round, or UINT64_MAX), reuse files change which
 * file their number holds under reuse_lock (write: the controller's
 * dup2; read: a submitter, across fsaio_submit). */
struct lfile {
	enum kind kind;
	int fd;                 /* the number requests name */
	uint64_t size;
	unsigned seed;          /* the pattern; reuse: of the file at fd now */
	_Atomic uint64_t cut_at;
	int alt_fd[2];          /* reuse: the two files, kept open */
	unsigned alt_seed[2];
	int at;                 /* reuse: which of them is at fd (reuse_lock) */
	char path[4200];        /* plain and cut; eio and full: name on their fs */
};

enum { SL_FREE, SL_FLIGHT };

struct lslot {
	struct fsaio_req req;
	uint8_t *buf;
	struct lfile *f;
	enum op op;
	unsigned seed;          /* the pattern of the file named at submit */
	atomic_int state;       /* SL_*; the callback sets done */
	atomic_int nev;         /* events seen for this submission */
	atomic_bool done;
	atomic_int ncb;         /* callbacks for this submission */
	bool cancel_ok;         /* fsaio_cancel returned 0 */
	int64_t res;            /* written by the callback before done */
};

/* Totals, summed over the threads (atomics: threads add as they go). */
struct ltotals {
	_Atomic uint64_t requests, events, lost, dup, bad_res;
	_Atomic uint64_t err[K_N][4];     /* per file kind: EIO, ENOSPC, ECANCELED, short */
	_Atomic uint64_t wrong[K_N];      /* wrong bytes per file kind */
	_Atomic uint64_t cancels, destroys, shutdowns, cuts, dup2s, colds, rounds;
	_Atomic uint64_t bytes_read, bytes_written;
};

enum { E_EIO, E_ENOSPC, E_CANCELED, E_SHORT };

struct lrun;

struct lthr {
	struct lrun *run;
	int id;
	bool cb;                /* callback context, destroyed under load */
	fsaio_ctx_t *ctx;
	struct lslot slots[L_SLOTS];
	struct rng rng;
	uint64_t since_create;
	pthread_t thread;
};

struct f_fs {
	char img[4200], mnt[4200], dev[64];
	int loopfd;
	bool mounted;
};

struct lrun {
	struct lfile files[L_FILES];
	unsigned nfiles;
	struct lthr thr[L_THREADS];
	struct ltotals t;
	pthread_rwlock_t reuse_lock;
	pthread_barrier_t start, stop;
	atomic_bool round_over;
	atomic_bool quit;
	uint64_t target;        /* requests in all */
	int64_t end_ns;         /* the short mode's time budget */
	bool reuse;
	bool have_fs;
	struct f_fs eio_fs, full_fs;
};

/* ------------------------------------------------------------------ */
/* Loop-device file systems: a private mount namespace, so the mounts   */
/* and (autoclear) devices go when the process does, however it ends.   */

static const char *fs_unavailable;

static bool run_mkfs(const char *img)
{
	pid_t pid = f_mkfs_start(img);

	if (pid < 0)
		return false;
	int st = waitpid_bounded(pid, 60000);
	return st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static bool fs_mount_dev(struct f_fs *fs)
{
	if (mount(fs->dev, fs->mnt, "ext4", 0, NULL) < 0)
		return false;
	fs->mounted = true;
	return true;
}

static bool fs_make(struct f_fs *fs, const char *name, unsigned mib)
{
	static bool own_ns;

	memset(fs, 0, sizeof(*fs));
	fs->loopfd = -1;
	if (geteuid() != 0) {
		fs_unavailable = "not root";
		return false;
	}
	if (!own_ns) {
		if (unshare(CLONE_NEWNS) < 0 || mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
			fs_unavailable = "no mount namespace";
			return false;
		}
		own_ns = true;
	}
	snprintf(fs->img, sizeof(fs->img), "%s/%s.img", tdir, name);
	snprintf(fs->mnt, sizeof(fs->mnt), "%s/%s", tdir, name);
	int fd = open(fs->img, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, (off_t)mib * MiB) < 0) {
		fs_unavailable = "cannot make an image file";
		if (fd >= 0)
			close(fd);
		return false;
	}
	close(fd);
	if (!run_mkfs(fs->img)) {
		fs_unavailable = "mkfs.ext4 failed or is missing";
		unlink(fs->img);
		return false;
	}
	int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	int img = open(fs->img, O_RDWR | O_CLOEXEC);
	unlink(fs->img);
	if (ctl < 0 || img < 0) {
		fs_unavailable = "no /dev/loop-control";
		goto fail;
	}
	for (int tries = 0; tries < 100 && fs->loopfd < 0; tries++) {
		enum f_loop_fail why;
		int lfd = f_loop_attach_once(ctl, img, fs->dev, sizeof(fs->dev), &why);

		if (lfd >= 0)
			fs->loopfd = lfd;
		else if (why == F_LOOP_NOFREE)
			break;
		else if (why == F_LOOP_NOOPEN)
			sleep_us(10000);
	}
	if (fs->loopfd < 0) {
		fs_unavailable = "no loop device could be attached";
		goto fail;
	}
	if (mkdir(fs->mnt, 0700) < 0 || !fs_mount_dev(fs)) {
		fs_unavailable = "mount failed";
		goto fail;
	}
	close(ctl);
	close(img);
	return true;
fail:
	if (ctl >= 0)
		close(ctl);
	if (img >= 0)
		close(img);
	if (fs->loopfd >= 0)
		close(fs->loopfd);
	fs->loopfd = -1;
	rmdir(fs->mnt);
	return false;
}

static void fs_unmount(struct f_fs *fs)
{
	if (fs->mounted && umount2(fs->mnt, MNT_DETACH) < 0)
		FAIL("umount %s: %s", fs->mnt, strerror(errno));
	fs->mounted = false;
}

static void fs_drop(struct f_fs *fs)
{
	fs_unmount(fs);
	rmdir(fs->mnt);
	if (fs->loopfd >= 0)
		close(fs->loopfd);
	fs->loopfd = -1;
}

/* ------------------------------------------------------------------ */
/* Files.                                                               */

static void write_pattern(int fd, uint64_t size, unsigned seed, const char *what)
{
	uint8_t *buf = xmalloc(MiB);

	for (uint64_t off = 0; off < size; off += MiB) {
		size_t n = size - off < MiB ? (size_t)(size - off) : MiB;
		pat_fill(buf, n, seed, off);
		if (pwrite(fd, buf, n, (off_t)off) != (ssize_t)n)
			FAIL("writing %s: %s", what, strerror(errno));
	}
	free(buf);
	if (ftruncate(fd, (off_t)size) < 0 || fsync(fd) < 0)
		FAIL("sizing %s: %s", what, strerror(errno));
}

static int open_on(struct f_fs *fs, const char *name)
{
	char p[8500];

	snprintf(p, sizeof(p), "%s/%s", fs->mnt, name);
	int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		FAIL("open %s: %s", p, strerror(errno));
	return fd;
}

/* The controller, between rounds: every file to its known state. */
static void files_reset(struct lrun *r, bool remount_eio)
{
	if (remount_eio && r->have_fs) {
		for (unsigned i = 0; i < r->nfiles; i++)
			if (r->files[i].kind == K_EIO && r->files[i].fd >= 0) {
				close(r->files[i].fd);
				r->files[i].fd = -1;
			}
		/* The shut-down superblock goes with its last fd: then the
		 * device mounts again, the journal replayed. */
		fs_unmount(&r->eio_fs);
		if (!fs_mount_dev(&r->eio_fs))
			FAIL("mounting the eio file system again: %s", strerror(errno));
	}
	for (unsigned i = 0; i < r->nfiles; i++) {
		struct lfile *f = &r->files[i];
		switch (f->kind) {
		case K_PLAIN:
			break;
		case K_CUT:
			if (atomic_load(&f->cut_at) != UINT64_MAX)
				write_pattern(f->fd, f->size, f->seed, f->path);
			atomic_store(&f->cut_at, UINT64_MAX);
			break;
		case K_EIO:
			if (f->fd < 0)
				f->fd = open_on(&r->eio_fs, f->path);
			write_pattern(f->fd, f->size, f->seed, f->path);
			break;
		case K_FULL:
			if (ftruncate(f->fd, 0) < 0 || ftruncate(f->fd, (off_t)f->size) < 0)
				FAIL("emptying %s: %s", f->path, strerror(errno));
			break;
		case K_REUSE:
			/* A write that landed in the other file is counted by the
			 * reads that found it; both files start clean again. */
			for (int k = 0; k < 2; k++)
				write_pattern(f->alt_fd[k], f->size, f->alt_seed[k], "a reuse file");
			break;
		case K_N:
			break;
		}
	}
}

static void files_make(struct lrun *r)
{
	unsigned n = 0, seedbase = (unsigned)mix64(base_seed + 77) & 0xffff;

	r->have_fs = fs_make(&r->eio_fs, "eio-fs", 64) && fs_make(&r->full_fs, "full-fs", 16);
	for (; n < L_FILES; n++) {
		struct lfile *f = &r->files[n];
		/* 40 plain, 4 cut, 8 eio, 8 full, 4 reuse (or plain). */
		f->kind = n < 40 ? K_PLAIN : n < 44 ? K_CUT : n < 52 ? K_EIO : n < 60 ? K_FULL : K_REUSE;
		if (!r->have_fs && (f->kind == K_EIO || f->kind == K_FULL))
			f->kind = K_PLAIN;
		if (!r->reuse && f->kind == K_REUSE)
			f->kind = K_PLAIN;
		f->seed = seedbase + n * 7 + 1;
		atomic_store(&f->cut_at, UINT64_MAX);
		switch (f->kind) {
		case K_PLAIN:
		case K_CUT:
			f->size = L_PLAIN_SIZE;
			f->fd = make_file(f->size, f->seed, f->path, sizeof(f->path));
			break;
		case K_EIO:
			f->size = L_EIO_SIZE;
			snprintf(f->path, sizeof(f->path), "e%u", n);
			f->fd = open_on(&r->eio_fs, f->path);
			write_pattern(f->fd, f->size, f->seed, f->path);
			break;
		case K_FULL:
			f->size = L_FULL_SIZE;
			snprintf(f->path, sizeof(f->path), "s%u", n);
			f->fd = open_on(&r->full_fs, f->path);
			if (ftruncate(f->fd, (off_t)f->size) < 0)
				FAIL("ftruncate: %s", strerror(errno));
			break;
		case K_REUSE:
			f->size = L_EIO_SIZE;
			for (int k = 0; k < 2; k++) {
				f->alt_seed[k] = f->seed + 1000u * (unsigned)(k + 1);
				f->alt_fd[k] = make_file(f->size, f->alt_seed[k], NULL, 0);
			}
			f->fd = dup(f->alt_fd[0]);
			if (f->fd < 0)
				FAIL("dup: %s", strerror(errno));
			f->at = 0;
			f->seed = f->alt_seed[0];
			break;
		case K_N:
			break;
		}
	}
	r->nfiles = n;
}

static void files_close(struct lrun *r)
{
	for (unsigned i = 0; i < r->nfiles; i++) {
		struct lfile *f = &r->files[i];
		if (f->fd >= 0)
			close(f->fd);
		if (f->kind == K_REUSE)
			for (int k = 0; k < 2; k++)
				close(f->alt_fd[k]);
	}
	if (r->have_fs) {
		fs_drop(&r->eio_fs);
		fs_drop(&r->full_fs);
	}
}

/* ------------------------------------------------------------------ */
/* Checking one event.                                                  */

static bool zero_ok(const struct lfile *f, uint64_t off)
{
	return f->kind == K_FULL || (f->kind == K_CUT && off >= atomic_load(&f->cut_at));
}

/* Wrong bytes of a read's res bytes, by the file's rules. */
static uint64_t wrong_bytes(const struct lslot *s, int64_t res)
{
	const struct lfile *f = s->f;
	uint64_t off = (uint64_t)s->req.offset;

	if (pat_mismatch(s->buf, (size_t)res, s->seed, off) < 0)
		return 0;
	uint64_t wrong = 0;
	for (int64_t i = 0; i < res; i++) {
		uint8_t b = s->buf[i];
		if (b != pat_byte(s->seed, off + (uint64_t)i) && !(b == 0 && zero_ok(f, off + (uint64_t)i)))
			wrong++;
	}
	return wrong;
}

static void check_event(struct lrun *r, struct lslot *s, int64_t res)
{
	struct ltotals *t = &r->t;
	const struct lfile *f = s->f;
	uint64_t len = s->op == OP_FSYNC ? 0 : s->req.len;

	atomic_fetch_add(&t->events, 1);
	if (atomic_fetch_add(&s->nev, 1) != 0) {
		atomic_fetch_add(&t->dup, 1);
		FAIL("a request (%s on a %s file) had a second event", s->op == OP_READ ? "read" :
		     s->op == OP_WRITE ? "write" : "fsync", kind_name[f->kind]);
		return;
	}
	if (res == -ECANCELED) {
		atomic_fetch_add(&t->err[f->kind][E_CANCELED], 1);
		return;
	}
	if (s->cancel_ok)
		FAIL("a cancel returned 0 but the event is %" PRId64, res);
	if (res == -EIO && f->kind == K_EIO) {
		atomic_fetch_add(&t->err[f->kind][E_EIO], 1);
		return;
	}
	if (res == -ENOSPC && f->kind == K_FULL && s->op != OP_READ) {
		atomic_fetch_add(&t->err[f->kind][E_ENOSPC], 1);
		return;
	}
	if (res < 0 || (uint64_t)res > len) {
		atomic_fetch_add(&t->bad_res, 1);
		FAIL("%s of %" PRIu64 " at %" PRId64 " on a %s file: res %" PRId64,
		     s->op == OP_READ ? "read" : s->op == OP_WRITE ? "write" : "fsync", len,
		     s->req.offset, kind_name[f->kind], res);
		return;
	}
	if ((uint64_t)res < len) {
		/* Short: reads at a cut, writes on a failing or full disk. */
		bool ok = (f->kind == K_CUT && s->op == OP_READ) ||
			  f->kind == K_EIO || (f->kind == K_FULL && s->op == OP_WRITE);
		if (!ok) {
			atomic_fetch_add(&t->bad_res, 1);
			FAIL("%s of %" PRIu64 " at %" PRId64 " on a %s file came back short: %" PRId64,
			     s->op == OP_READ ? "read" : "write", len, s->req.offset, kind_name[f->kind], res);
			return;
		}
		atomic_fetch_add(&t->err[f->kind][E_SHORT], 1);
	}
	if (s->op == OP_READ) {
		atomic_fetch_add(&t->bytes_read, (uint64_t)res);
		uint64_t w = wrong_bytes(s, res);
		if (w) {
			atomic_fetch_add(&t->wrong[f->kind], w);
			if (f->kind != K_REUSE)
				FAIL("read of %" PRIu64 " at %" PRId64 " on a %s file: %" PRIu64 " wrong bytes",
				     len, s->req.offset, kind_name[f->kind], w);
		}
	} else if (s->op == OP_WRITE) {
		atomic_fetch_add(&t->bytes_written, (uint64_t)res);
	}
}

/* ------------------------------------------------------------------ */
/* The threads.                                                         */

static void on_complete(void *arg, const struct fsaio_event *ev)
{
	struct lthr *th = arg;
	struct lslot *s = ev->user_data;

	if (atomic_fetch_add(&s->ncb, 1) != 0 || atomic_load(&s->state) != SL_FLIGHT) {
		atomic_fetch_add(&th->run->t.dup, 1);
		FAIL("a second callback for one request");
		return;
	}
	s->res = ev->res;
	atomic_store_explicit(&s->done, true, memory_order_release);
}

static void thr_ctx(struct lthr *th)
{
	struct fsaio_params p = { .workers = 8 };

	/* Backends in turn: the engine's choice, the pool, io_uring. */
	p.miss_backend = (uint32_t)((th->id + atomic_load(&th->run->t.destroys)) % 3);
#ifdef __SANITIZE_THREAD__
	/* Under ThreadSanitizer the contexts destroyed under load keep to the
	 * pool: liburing maps and unmaps its rings with raw syscalls TSan does
	 * not see, so a ring mapped where another context's ring was, by
	 * another thread, reads to it as a race between the two ring threads
	 * (the kernel orders the unmap and the map; TSan cannot know). */
	if (th->cb)
		p.miss_backend = FSAIO_BACKEND_THREADS;
#endif
	if (th->cb) {
		p.complete = on_complete;
		p.complete_arg = th;
	}
	th->ctx = ctx_create(&p);
	th->since_create = 0;
}

static struct lfile *pick_file(struct lthr *th)
{
	struct lrun *r = th->run;
	uint64_t x = rnd(&th->rng) % 100;
	unsigned i;

	/* Half the requests on the plain files, the rest spread over the
	 * faulty kinds (whatever kind those files ended up). */
	if (x < 50)
		i = (unsigned)rnd_in(&th->rng, 0, 39);
	else
		i = (unsigned)rnd_in(&th->rng, 40, r->nfiles - 1);
	return &r->files[i];
}

static void prep(struct lthr *th, struct lslot *s)
{
	struct lfile *f = pick_file(th);
	uint64_t x = rnd(&th->rng) % 100;
	uint64_t len = x < 70 ? rnd_in(&th->rng, 1, 8) * 512 : rnd_in(&th->rng, 1, L_MAXLEN / 4096) * 4096;
	uint64_t off = rnd_in(&th->rng, 0, (f->size - len) / 512) * 512;

	s->f = f;
	s->op = x < 62 ? OP_READ : x < 97 ? OP_WRITE : OP_FSYNC;
	s->seed = f->seed;      /* reuse: set again under the lock at submit */
	s->cancel_ok = false;
	atomic_store(&s->nev, 0);
	atomic_store(&s->ncb, 0);
	atomic_store(&s->done, false);
	if (s->op == OP_READ) {
		memset(s->buf, 0xee, len);
		fsaio_prep_pread(&s->req, f->fd, s->buf, len, (int64_t)off);
	} else if (s->op == OP_WRITE) {
		fsaio_prep_pwrite(&s->req, f->fd, s->buf, len, (int64_t)off);
		/* On a reuse file, carried by a worker: still queued, often,
		 * when its number moves. */
		if (f->kind == K_REUSE)
			s->req.rw_flags = RWF_DSYNC;
	} else {
		fsaio_prep_fsync(&s->req, f->fd);
	}
	s->req.user_data = s;
}

/* Submit the prepared slots; with reuse files among them, under the read
 * side of reuse_lock, where each learns which file its number holds. */
static void submit_batch(struct lthr *th, struct lslot **batch, unsigned n)
{
	struct lrun *r = th->run;
	struct fsaio_req *reqs[L_SLOTS];
	bool locked = false;

	for (unsigned i = 0; i < n; i++)
		if (batch[i]->f->kind == K_REUSE)
			locked = true;
	if (locked)
		pthread_rwlock_rdlock(&r->reuse_lock);
	for (unsigned i = 0; i < n; i++) {
		struct lslot *s = batch[i];
		if (s->f->kind == K_REUSE)
			s->seed = s->f->alt_seed[s->f->at];
		if (s->op == OP_WRITE)
			pat_fill(s->buf, s->req.len, s->seed, (uint64_t)s->req.offset);
		reqs[i] = &s->req;
		atomic_store(&s->state, SL_FLIGHT);
	}
	unsigned done = 0;
	while (done < n) {
		int ret = submit(th->ctx, reqs + done, n - done);
		if (ret <= 0) {
			/* A full queue cannot happen (L_SLOTS < depth): any
			 * refusal is a failure, and the rest are not in flight. */
			FAIL("fsaio_submit: %d", ret);
			for (unsigned i = done; i < n; i++)
				atomic_store(&batch[i]->state, SL_FREE);
			break;
		}
		done += (unsigned)ret;
	}
	if (locked)
		pthread_rwlock_unlock(&r->reuse_lock);
	atomic_fetch_add(&r->t.requests, done);
	th->since_create += done;
}

static unsigned reap(struct lthr *th, unsigned min_nr, unsigned wait_ms)
{
	struct fsaio_event evs[L_SLOTS];
	unsigned got = 0;

	if (th->cb) {
		for (unsigned i = 0; i < L_SLOTS; i++) {
			struct lslot *s = &th->slots[i];
			if (atomic_load(&s->state) != SL_FLIGHT ||
			    !atomic_load_explicit(&s->done, memory_order_acquire))
				continue;
			check_event(th->run, s, s->res);
			atomic_store(&s->state, SL_FREE);
			got++;
		}
		if (got < min_nr)
			sleep_us(wait_ms ? 20 : 0);
		return got;
	}
	int n = getevents(th->ctx, min_nr, L_SLOTS, evs, wait_ms);
	for (int k = 0; k < n; k++) {
		struct lslot *s = evs[k].user_data;
		if (s < th->slots || s >= th->slots + L_SLOTS || atomic_load(&s->state) != SL_FLIGHT) {
			atomic_fetch_add(&th->run->t.dup, 1);
			FAIL("an event for a request not in flight");
			continue;
		}
		check_event(th->run, s, evs[k].res);
		atomic_store(&s->state, SL_FREE);
		got++;
	}
	return got;
}

static unsigned in_flight(struct lthr *th)
{
	unsigned n = 0;

	for (unsigned i = 0; i < L_SLOTS; i++)
		n += atomic_load(&th->slots[i].state) == SL_FLIGHT;
	return n;
}

/* Destroy with requests in flight: each gets its one callback before
 * destroy returns. */
static void thr_destroy(struct lthr *th)
{
	ctx_destroy(th->ctx);
	th->ctx = NULL;
	atomic_fetch_add(&th->run->t.destroys, 1);
	for (unsigned i = 0; i < L_SLOTS; i++) {
		struct lslot *s = &th->slots[i];
		if (atomic_load(&s->state) != SL_FLIGHT)
			continue;
		if (!atomic_load_explicit(&s->done, memory_order_acquire)) {
			atomic_fetch_add(&th->run->t.lost, 1);
			FAIL("a request had no callback when destroy returned");
			atomic_store(&s->state, SL_FREE);
			continue;
		}
		check_event(th->run, s, s->res);
		atomic_store(&s->state, SL_FREE);
	}
}

static void thr_round(struct lthr *th)
{
	struct lrun *r = th->run;

	while (!atomic_load(&r->round_over) && !has_failed()) {
		struct lslot *batch[L_SLOTS];
		unsigned n = 0;
		unsigned want = (unsigned)rnd_in(&th->rng, 1, 8);

		for (unsigned i = 0; i < L_SLOTS && n < want; i++) {
			struct lslot *s = &th->slots[i];
			if (atomic_load(&s->state) != SL_FREE)
				continue;
			prep(th, s);
			batch[n++] = s;
		}
		if (n)
			submit_batch(th, batch, n);
		if (!th->cb && rnd(&th->rng) % 64 == 0) {
			struct lslot *s = &th->slots[rnd(&th->rng) % L_SLOTS];
			if (atomic_load(&s->state) == SL_FLIGHT && atomic_load(&s->nev) == 0) {
				int ret = cancel(th->ctx, &s->req);
				atomic_fetch_add(&r->t.cancels, 1);
				/* -EINVAL: its event is already waiting to be reaped. */
				CHECK(ret == 0 || ret == -EBUSY || ret == -EINVAL, "fsaio_cancel: %d", ret);
				s->cancel_ok = ret == 0;
			}
		}
		if (th->cb && th->since_create >= L_DESTROY_EVERY) {
			thr_destroy(th);
			thr_ctx(th);
		}
		reap(th, in_flight(th) >= L_SLOTS / 2 ? 1 : 0, 5);
	}
	/* The round is over: everything in flight must come. */
	int64_t end = now_ns() + (int64_t)LOST_EVENT_S * 1000000000;
	while (in_flight(th) && now_ns() < end)
		reap(th, 1, 50);
	unsigned lost = in_flight(th);
	if (lost) {
		atomic_fetch_add(&r->t.lost, lost);
		FAIL("%u request(s) without an event %d s after the round ended", lost, LOST_EVENT_S);
		for (unsigned i = 0; i < L_SLOTS; i++)
			atomic_store(&th->slots[i].state, SL_FREE);
	}
}

static void *thr_main(void *arg)
{
	struct lthr *th = arg;
	struct lrun *r = th->run;

	thr_ctx(th);
	for (;;) {
		pthread_barrier_wait(&r->start);
		if (atomic_load(&r->quit))
			break;
		thr_round(th);
		pthread_barrier_wait(&r->stop);
	}
	if (th->ctx) {
		if (!th->cb)
			expect_no_more_events(th->ctx);
		ctx_destroy(th->ctx);
	}
	return NULL;
}

/* ------------------------------------------------------------------ */
/* The controller: faults at random moments of each round.              */

static void fault_once(struct lrun *r, struct rng *g, bool *shut)
{
	struct lfile *f = &r->files[rnd_in(g, 0, r->nfiles - 1)];
	uint64_t x = rnd(g) % 100;

	if (x < 40) {
		/* Cold: what is cached of a plain file goes. */
		struct lfile *p = &r->files[rnd_in(g, 0, 39)];
		make_cold(p->fd, 0, 0);
		atomic_fetch_add(&r->t.colds, 1);
	} else if (x < 65) {
		for (unsigned i = 0; i < r->nfiles; i++) {
			f = &r->files[(i + (unsigned)rnd(g)) % r->nfiles];
			if (f->kind == K_CUT)
				break;
		}
		if (f->kind != K_CUT)
			return;
		/* The cut is recorded before it is made, so a read that
		 * sees zeros finds it. */
		uint64_t cut = rnd_in(g, 0, f->size / 512) * 512;
		uint64_t old = atomic_load(&f->cut_at);
		if (cut < old)
			atomic_store(&f->cut_at, cut);
		if (ftruncate(f->fd, (off_t)cut) < 0 || ftruncate(f->fd, (off_t)f->size) < 0)
			FAIL("ftruncate: %s", strerror(errno));
		atomic_fetch_add(&r->t.cuts, 1);
	} else if (x < 90 && r->reuse) {
		f = &r->files[L_FILES - 1 - rnd_in(g, 0, 3)];
		if (f->kind != K_REUSE)
			return;
		/* Cold, so reads of them wait for a worker too. */
		for (int k = 0; k < 2; k++)
			make_cold(f->alt_fd[k], 0, 0);
		pthread_rwlock_wrlock(&r->reuse_lock);
		f->at ^= 1;
		if (dup2(f->alt_fd[f->at], f->fd) != f->fd)
			FAIL("dup2: %s", strerror(errno));
		f->seed = f->alt_seed[f->at];
		pthread_rwlock_unlock(&r->reuse_lock);
		atomic_fetch_add(&r->t.dup2s, 1);
	} else if (r->have_fs && !*shut && rnd(g) % 4 == 0) {
		int dfd = open(r->eio_fs.mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		uint32_t how = F_GOING_FLAGS_NOLOGFLUSH;
		if (dfd < 0 || ioctl(dfd, EXT4_IOC_SHUTDOWN, &how) < 0)
			FAIL("EXT4_IOC_SHUTDOWN: %s", strerror(errno));
		if (dfd >= 0)
			close(dfd);
		*shut = true;
		atomic_fetch_add(&r->t.shutdowns, 1);
	}
}

static void print_totals(struct lrun *r, char *msg, size_t msglen)
{
	struct ltotals *t = &r->t;
	uint64_t wrong_other = 0;

	for (int k = 0; k < K_N; k++)
		if (k != K_REUSE)
			wrong_other += atomic_load(&t->wrong[k]);
	printf("fsaio_stress: %" PRIu64 " rounds; requests %" PRIu64 ", events %" PRIu64
	       ", lost %" PRIu64 ", duplicated %" PRIu64 ", results out of their rules %" PRIu64
	       ", wrong bytes %" PRIu64 "\n", atomic_load(&t->rounds), atomic_load(&t->requests),
	       atomic_load(&t->events), atomic_load(&t->lost), atomic_load(&t->dup),
	       atomic_load(&t->bad_res), wrong_other);
	for (int k = 0; k < K_N; k++) {
		if (k == K_REUSE && !r->reuse)
			continue;
		printf("fsaio_stress:   %-5s files: EIO %" PRIu64 ", ENOSPC %" PRIu64 ", ECANCELED %" PRIu64
		       ", short %" PRIu64 ", wrong bytes %" PRIu64 "\n", kind_name[k],
		       atomic_load(&t->err[k][E_EIO]), atomic_load(&t->err[k][E_ENOSPC]),
		       atomic_load(&t->err[k][E_CANCELED]), atomic_load(&t->err[k][E_SHORT]),
		       atomic_load(&t->wrong[k]));
	}
	printf("fsaio_stress:   faults: %" PRIu64 " shutdowns, %" PRIu64 " cuts, %" PRIu64 " dup2s, %" PRIu64
	       " files made cold, %" PRIu64 " cancels tried, %" PRIu64 " destroys under load; %" PRIu64
	       " MiB read, %" PRIu64 " MiB written\n", atomic_load(&t->shutdowns), atomic_load(&t->cuts),
	       atomic_load(&t->dup2s), atomic_load(&t->colds), atomic_load(&t->cancels),
	       atomic_load(&t->destroys), atomic_load(&t->bytes_read) >> 20,
	       atomic_load(&t->bytes_written) >> 20);
	if (!r->have_fs)
		printf("fsaio_stress:   no loop-device file systems (%s): no eio or full files\n",
		       fs_unavailable ? fs_unavailable : "?");
	if (r->reuse)
		printf("fsaio_stress:   reuse files: %" PRIu64 " wrong bytes (a request acting on the file "
		       "its fd number held later, not at submit)\n", atomic_load(&t->wrong[K_REUSE]));
	snprintf(msg, msglen, "%" PRIu64 " requests, %" PRIu64 " events, lost %" PRIu64 ", duplicated %"
		 PRIu64 ", wrong bytes %" PRIu64 "%s", atomic_load(&t->requests), atomic_load(&t->events),
		 atomic_load(&t->lost), atomic_load(&t->dup), wrong_other,
		 r->have_fs ? "" : " (no loop devices: eio and full files plain)");
}

static bool run_faults(const char *name, uint64_t target, int64_t budget, bool reuse, char *msg,
		       size_t msglen)
{
	struct lrun *r = xcalloc(1, sizeof(*r));
	struct rng g;

	r->target = target;
	r->reuse = reuse;
	rng_init(&g, 4242);
	pthread_rwlock_init(&r->reuse_lock, NULL);
	pthread_barrier_init(&r->start, NULL, L_THREADS + 1);
	pthread_barrier_init(&r->stop, NULL, L_THREADS + 1);
	files_make(r);
	for (int i = 0; i < L_THREADS; i++) {
		struct lthr *th = &r->thr[i];
		th->run = r;
		th->id = i;
		th->cb = i % 2 == 1;
		rng_init(&th->rng, 5000 + (uint64_t)i);
		for (unsigned k = 0; k < L_SLOTS; k++)
			th->slots[k].buf = xalign(L_MAXLEN);
		spawn(&th->thread, thr_main, th);
	}

	/* The budget is the workload's, after the files are made. */
	r->end_ns = now_ns() + budget;
	bool shut = false;
	while (!has_failed()) {
		watchdog_arm(name);
		atomic_store(&r->round_over, false);
		shut = false;
		pthread_barrier_wait(&r->start);
		int64_t round_end = now_ns() + (int64_t)L_ROUND_MS * 1000000;
		while (now_ns() < round_end && !has_failed()) {
			sleep_us((unsigned)rnd_in(&g, 2000, 60000));
			fault_once(r, &g, &shut);
			if (atomic_load(&r->t.requests) >= r->target || now_ns() >= r->end_ns)
				break;
		}
		atomic_store(&r->round_over, true);
		pthread_barrier_wait(&r->stop);
		atomic_fetch_add(&r->t.rounds, 1);
		uint64_t done = atomic_load(&r->t.requests);
		if (target > 1000000)
			printf("fsaio_stress: round %" PRIu64 ": %" PRIu64 " requests so far\n",
			       atomic_load(&r->t.rounds), done);
		if (done >= r->target || now_ns() >= r->end_ns)
			break;
		files_reset(r, shut);
	}
	atomic_store(&r->quit, true);
	pthread_barrier_wait(&r->start);
	for (int i = 0; i < L_THREADS; i++) {
		pthread_join(r->thr[i].thread, NULL);
		for (unsigned k = 0; k < L_SLOTS; k++)
			free(r->thr[i].slots[k].buf);
	}
	print_totals(r, msg, msglen);
	CHECK(atomic_load(&r->t.requests) == atomic_load(&r->t.events) || has_failed(),
	      "%" PRIu64 " requests but %" PRIu64 " events", atomic_load(&r->t.requests),
	      atomic_load(&r->t.events));
	CHECK(!r->reuse || atomic_load(&r->t.wrong[K_REUSE]) == 0,
	      "reuse files: %" PRIu64 " wrong bytes: requests acted on the file their fd number held "
	      "later, not the one it named at submit", atomic_load(&r->t.wrong[K_REUSE]));
	files_close(r);
	pthread_barrier_destroy(&r->start);
	pthread_barrier_destroy(&r->stop);
	pthread_rwlock_destroy(&r->reuse_lock);
	free(r);
	return !has_failed();
}

bool sc_faults(char *msg, size_t msglen)
{
	return run_faults("faults", UINT64_MAX, budget_ns(4000), false, msg, msglen);
}

bool sc_long(char *msg, size_t msglen)
{
	return run_faults("long", long_requests, INT64_MAX / 2, true, msg, msglen);
}

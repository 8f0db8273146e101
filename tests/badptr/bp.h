/* SPDX-License-Identifier: MIT */
/*
 * badptr_diff: every pointer argument of every entry point, given each kind
 * of bad pointer, the answer compared with the kernel's (glibc's for POSIX
 * AIO, the kernel's io_submit rules for the native API).
 *
 * A case is one entry point, one of its pointer arguments and one kind of
 * pointer. It runs in a forked child of its own, so that a crash is a
 * result like any other, and says one line:
 *
 *   = RET [errno=E]     the call's answer: "= -1 EFAULT" through syscall(2)
 *                       and POSIX, "= -EFAULT" where the call returns
 *                       -errno (errno named only if such a call changed it)
 *   got N: NAME=RES ... the events a getevents under test returned
 *   | ev N: NAME=RES    every event reaped after the call, by request name,
 *                       RES bytes or -ERRNO (/RES2 when not 0)
 *   left N, extra N     events owed that did not come within BP_WAIT_SEC;
 *                       events beyond what was accepted
 *   data ok             the bytes a read brought, checked
 *   killed by SIGSEGV   how the child ended, when the case did not end
 *
 * Every accepted request must yield exactly one event. The child writes
 * each part of its line to a pipe as soon as it knows it, so a crash after
 * the call still shows the call's answer.
 *
 * This header is the harness the three families of cases share: the kinds
 * of pointer and how an object is placed at one (bp.c), the line a case
 * says, the test files, and the tables of cases and allowed differences
 * each family exports (bp_libaio.c, bp_posix.c, bp_native.c).
 */
#ifndef BP_H
#define BP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum bp_kind {
	BP_GOOD,        /* a valid object, page-aligned: the control */
	BP_NULL,
	BP_UNMAPPED,    /* an address whose page was mapped, then unmapped */
	BP_PROT_NONE,
	BP_READONLY,    /* the valid object in a read-only page: for what a call writes */
	BP_STRADDLE,    /* its first bytes in a good page, the rest in a PROT_NONE page */
	BP_KERNEL,      /* 0xffffffff81000000, kernel text */
	BP_NONCANON47,  /* 0x0000800000000000, just past 4-level user space */
	BP_NONCANON63,  /* 0x8000000000000000, non-canonical on every x86-64 */
	BP_MISALIGNED,  /* the valid object at an odd address: must work */
	BP_AFTER,       /* valid at the call, unmapped as soon as it returns */
	BP_NKINDS
};

#define BP_K(k) (1u << (k))
/* What a call only reads: every kind but read-only. */
#define BP_READ (BP_K(BP_GOOD) | BP_K(BP_NULL) | BP_K(BP_UNMAPPED) | BP_K(BP_PROT_NONE) | \
		 BP_K(BP_STRADDLE) | BP_K(BP_KERNEL) | BP_K(BP_NONCANON47) |             \
		 BP_K(BP_NONCANON63) | BP_K(BP_MISALIGNED))
/* What a call writes: read-only memory is bad too. */
#define BP_WRITE (BP_READ | BP_K(BP_READONLY))

extern const char *const bp_kind_names[BP_NKINDS];

/* An object for kind k: size bytes copied from tmpl (zeros when tmpl is
 * NULL) where the kind leaves memory to copy to. For BP_STRADDLE only the
 * first `first` bytes are in the good page (an array's first element, a
 * struct's first field), the rest in the PROT_NONE page after it. Pages
 * come from mmap and are never given back: a case's child is short-lived. */
void *bp_place(enum bp_kind k, const void *tmpl, size_t size, size_t first);
/* Fresh read-write pages for n bytes, page-aligned. */
void *bp_pages(size_t n);
/* Can this kind's object be read back by the case (to print what a call
 * wrote into it)? */
bool bp_readable(enum bp_kind k);
/* Reserve the unmapped address (in the process that forks the cases). */
void bp_hole_init(void);

/*
 * The line of the case running in this child: bp_say appends to it (a
 * space before each part), and what is said goes to the parent at once.
 * bp_stop ends the case (the fixture could not be made: says why).
 */
void bp_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
_Noreturn void bp_stop(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The runner's: where this child's line goes; the line ended, the child
 * gone. */
void bp_out_set(int fd);
_Noreturn void bp_end(void);
/* "EFAULT" for 14, "E4243" for what has no name. */
const char *bp_errname(int e);

/*
 * Requests a case follows: bp_track names the address an event's obj (or
 * the request pointer) will carry; bp_label finds the name again. Events
 * are printed by name, sorted, so that their arrival order does not show.
 */
void bp_track(const char *label, const void *obj);
const char *bp_label(const void *obj);
/* Say "PREFIX N: NAME=RES[/RES2] ..." (or "PREFIX 0") for n events,
 * sorted by name. */
struct bp_ev {
	const char *label;
	long long res, res2;
};
void bp_say_events(const char *prefix, struct bp_ev *ev, int n);
/* res as a count or -ENAME. */
const char *bp_res(long long res, char *buf, size_t n);

/* The test files, made by the process that forks the cases and inherited:
 * bp_fd_read, 64 KiB of bp_byte's pattern (cached, never written); bp_fd_write,
 * a file the write cases write to. bp_fd_direct: the same bytes as bp_fd_read
 * through O_DIRECT, or -1 where the filesystem refuses it. */
#define BP_FILE_SIZE 65536
extern int bp_fd_read, bp_fd_write, bp_fd_direct;
uint8_t bp_byte(uint64_t off);
/* Does buf hold the file's n bytes at off? */
bool bp_data_ok(const void *buf, size_t n, uint64_t off);

/* A data buffer's size in the buffer cases, and its good part when it
 * straddles into a bad page. */
#define BP_DATA 8192
#define BP_DATA_GOOD 4196
/* The bytes a read at 0 brought into b (of kind k), said where they can
 * be read back ("data ok" or "data BAD"). */
void bp_say_data(const char *b, enum bp_kind k, long long res);
/* BP_AFTER: give the memory back as soon as the submit call returned (a
 * read of cached pages, bp_warm, is done by then). */
void bp_unmap_after(void *p, size_t n, enum bp_kind k);
void bp_files_init(void);
void bp_files_fini(void);
/* Bring [off, off + len) of fd into the page cache, and check that it is
 * there: a request that must complete inside its submit call is a hit. */
void bp_warm(int fd, uint64_t off, size_t len);

/* Bound of any wait for an event that must come, and of a whole case. */
#define BP_WAIT_SEC 3
#define BP_CASE_SEC 10

/* ------------------------------------------------------- case tables */

enum { BP_WAY_LIB = 1, BP_WAY_SYS = 2, BP_WAY_ONE = 4 };

struct bp_case {
	const char *entry, *arg;
	unsigned kinds;     /* BP_K mask */
	unsigned ways;      /* BP_WAY_*: libaio's cases run through the library and syscall(2) */
	void (*run)(unsigned way, enum bp_kind k);
	/* The native API's expected line for kind k (no kernel twin to run). */
	const char *(*expect)(enum bp_kind k);
};

/* How a difference from the reference may be allowed. */
enum bp_allow_rule {
	/* The reference crashed in the library's own code (libaio, glibc)
	 * before any system call; the drop-in must answer what the kernel's
	 * system call answers: the reference's "sys" line of sys_entry for
	 * the same argument and kind, read as libaio reports it. */
	BP_AS_SYSCALL,
	/* The reference crashed; the drop-in may answer -1 with EFAULT (or
	 * EFAULT itself, where the call returns an error number). */
	BP_EFAULT,
	/* Expected as written, but a crash is also allowed. */
	BP_MAY_CRASH,
	/* Under UBSan only: its report (the case's exit 1) is allowed where
	 * the C of the drop-in reads a struct through a misaligned pointer,
	 * which x86 does and C leaves undefined. */
	BP_UBSAN_REPORT,
};

struct bp_allow {
	const char *way, *entry, *arg;  /* NULL: any */
	unsigned kinds;
	enum bp_allow_rule rule;
	const char *sys_entry;          /* BP_AS_SYSCALL */
	const char *reason;
};

struct bp_family {
	const char *name;
	const struct bp_case *cases;
	size_t ncases;
	const struct bp_allow *allow;
	size_t nallow;
	/* Where the family's entry points come from (the drop-in or not):
	 * NULL when that is as `dropin` says, else what is wrong. */
	const char *(*origin_error)(bool dropin);
	/* The reference's name in the table ("kernel", "glibc", "expected"). */
	const char *ref_name;
};

extern const struct bp_family bp_libaio, bp_posix, bp_native;

#endif /* BP_H */

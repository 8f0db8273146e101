/* SPDX-License-Identifier: MIT */
/*
 * seccomp_deny_uring [--errno=ENOSYS|EPERM] [--membarrier|--cachestat|--aio-setup] PROGRAM [ARG...]
 *
 * Run PROGRAM with io_uring switched off for real, the way users meet it:
 * a container's seccomp profile (Docker's default answers EPERM), a kernel
 * built without it (ENOSYS), or kernel.io_uring_disabled (EPERM). A
 * seccomp-BPF filter makes io_uring_setup, io_uring_enter and
 * io_uring_register fail with the chosen errno; the filter is inherited by
 * every child and kept across exec (no_new_privs), so Criterion's forked
 * test processes run under it too.
 *
 * Before exec it checks that io_uring_setup really fails under the filter,
 * so a suite run through it cannot pass without having been denied io_uring.
 * It sets FSAIO_TEST_NO_URING=1 for tests that would otherwise expect the
 * ring to be used.
 *
 * With --membarrier it denies membarrier(2) instead, and io_uring not: the
 * drop-in's calls then hold their context the counted way (dropin/libaio/
 * hazard.c), as under a profile without membarrier.
 *
 * With --cachestat it denies cachestat(2) instead (ENOSYS, as a kernel
 * before 6.5 answers), and io_uring not: the engine's page-cache probe then
 * falls back to mincore(2) (lib/base/probe.c).
 *
 * With --aio-setup it denies io_setup(2) as well as io_uring: the engine
 * gets no kernel AIO context for its batched first attempts
 * (lib/base/rw_batch.c) and attempts each read alone.
 *
 * Exit: PROGRAM's status; 1 if the filter could not be installed or did not
 * take; 127 if PROGRAM could not be run.
 */
#include <errno.h>
#include <stdbool.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/io_uring.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Syscall numbers differ between architectures (and ABIs of one CPU), so
 * the filter first checks that the caller uses the native one; a process of
 * another ABI is let through (the suites are native binaries). */
#if defined(__x86_64__) && defined(__ILP32__)
#error "x32 is not supported"
#elif defined(__x86_64__)
#define NATIVE_ARCH AUDIT_ARCH_X86_64
#elif defined(__i386__)
#define NATIVE_ARCH AUDIT_ARCH_I386
#elif defined(__aarch64__)
#define NATIVE_ARCH AUDIT_ARCH_AARCH64
#elif defined(__riscv) && __riscv_xlen == 64
#define NATIVE_ARCH AUDIT_ARCH_RISCV64
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define NATIVE_ARCH AUDIT_ARCH_PPC64LE
#elif defined(__s390x__)
#define NATIVE_ARCH AUDIT_ARCH_S390X
#else
#error "add this architecture's AUDIT_ARCH_ value"
#endif

#ifndef __NR_io_uring_setup
#error "the kernel headers know no io_uring: nothing to deny"
#endif

static const unsigned uring_calls[] = {
	__NR_io_uring_setup, __NR_io_uring_enter, __NR_io_uring_register,
};
static const unsigned uring_aio_calls[] = {
	__NR_io_uring_setup, __NR_io_uring_enter, __NR_io_uring_register, __NR_io_setup,
};
static const unsigned membarrier_calls[] = { __NR_membarrier };
/* cachestat(2) is 451 on every architecture; older headers lack the name. */
static const unsigned cachestat_calls[] = { 451 };

enum deny { DENY_URING, DENY_URING_AIO, DENY_MEMBARRIER, DENY_CACHESTAT };

/* Deny the n system calls nr[] with err. */
static int install(int err, const unsigned *nr, unsigned n)
{
	/* [0] arch, [1] native or ALLOW, [2] nr, [3 .. 3+n) one test each,
	 * then ALLOW, then ERRNO. Jump offsets count from the next
	 * instruction. */
	struct sock_filter f[3 + 4 + 2];
	unsigned k = 0;

	f[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
					      offsetof(struct seccomp_data, arch));
	f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE_ARCH, 0, n + 1);
	f[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
					      offsetof(struct seccomp_data, nr));
	for (unsigned i = 0; i < n; i++)
		f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr[i], n - i, 0);
	f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
					      SECCOMP_RET_ERRNO | ((unsigned)err & SECCOMP_RET_DATA));
	struct sock_fprog prog = { .len = (unsigned short)k, .filter = f };

	/* Without CAP_SYS_ADMIN a filter needs no_new_privs, which also keeps
	 * it across exec of set-id programs. */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
		perror("seccomp_deny_uring: PR_SET_NO_NEW_PRIVS");
		return -1;
	}
	if (syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0) {
		perror("seccomp_deny_uring: SECCOMP_SET_MODE_FILTER");
		return -1;
	}
	return 0;
}

/* The filter must answer a real call of the denied kind with err. */
static int check(int err, enum deny what)
{
	struct io_uring_params p;
	long fd;

	if (what == DENY_CACHESTAT) {
		/* Allowed, a bad fd would be EBADF. */
		errno = 0;
		if (syscall(451, -1, NULL, NULL, 0) >= 0 || errno != err) {
			fprintf(stderr, "seccomp_deny_uring: cachestat not denied with %s\n",
				strerror(err));
			return -1;
		}
		return 0;
	}
	if (what == DENY_MEMBARRIER) {
		errno = 0;
		if (syscall(__NR_membarrier, 0 /* MEMBARRIER_CMD_QUERY */, 0, 0) >= 0 ||
		    errno != err) {
			fprintf(stderr, "seccomp_deny_uring: membarrier not denied with %s\n",
				strerror(err));
			return -1;
		}
		return 0;
	}

	if (what == DENY_URING_AIO) {
		unsigned long id = 0;

		errno = 0;
		if (syscall(__NR_io_setup, 4, &id) >= 0 || errno != err) {
			fprintf(stderr, "seccomp_deny_uring: io_setup not denied with %s\n",
				strerror(err));
			return -1;
		}
	}
	memset(&p, 0, sizeof(p));
	errno = 0;
	fd = syscall(__NR_io_uring_setup, 4, &p);
	if (fd >= 0) {
		close((int)fd);
		fprintf(stderr, "seccomp_deny_uring: io_uring_setup still works under the filter\n");
		return -1;
	}
	if (errno != err) {
		fprintf(stderr, "seccomp_deny_uring: io_uring_setup failed with %s, not %s\n",
			strerror(errno), strerror(err));
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	int err = ENOSYS, i = 1;
	enum deny what = DENY_URING;
	const unsigned *calls = uring_calls;
	unsigned ncalls = sizeof(uring_calls) / sizeof(uring_calls[0]);

	if (i < argc && strncmp(argv[i], "--errno=", 8) == 0) {
		if (strcmp(argv[i] + 8, "EPERM") == 0)
			err = EPERM;
		else if (strcmp(argv[i] + 8, "ENOSYS") != 0) {
			fprintf(stderr, "seccomp_deny_uring: --errno=ENOSYS or --errno=EPERM\n");
			return 1;
		}
		i++;
	}
	if (i < argc && strcmp(argv[i], "--membarrier") == 0) {
		what = DENY_MEMBARRIER;
		calls = membarrier_calls;
		ncalls = 1;
		i++;
	} else if (i < argc && strcmp(argv[i], "--aio-setup") == 0) {
		what = DENY_URING_AIO;
		calls = uring_aio_calls;
		ncalls = sizeof(uring_aio_calls) / sizeof(uring_aio_calls[0]);
		i++;
	} else if (i < argc && strcmp(argv[i], "--cachestat") == 0) {
		what = DENY_CACHESTAT;
		calls = cachestat_calls;
		ncalls = 1;
		i++;
	}
	if (i >= argc) {
		fprintf(stderr, "usage: seccomp_deny_uring [--errno=ENOSYS|EPERM] "
			"[--membarrier|--cachestat|--aio-setup] PROGRAM [ARG...]\n");
		return 1;
	}
	if (install(err, calls, ncalls) < 0 || check(err, what) < 0)
		return 1;
	if ((what == DENY_URING || what == DENY_URING_AIO) && setenv("FSAIO_TEST_NO_URING", "1", 1) < 0) {
		perror("seccomp_deny_uring: setenv");
		return 1;
	}
	execv(argv[i], argv + i);
	fprintf(stderr, "seccomp_deny_uring: %s: %s\n", argv[i], strerror(errno));
	return 127;
}

/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: facts about this process that several of the shim's files ask
 * for: its pid without a system call, and whether an fd names a file that
 * I/O may use. A leaf: it calls nothing of the shim's.
 *
 * The pid is learnt at first use and again in a fork child (context.c's
 * handler calls shim__self_pid_reset); a relaxed atomic, as every thread
 * reads the same value.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <unistd.h>

#include "self.h"

/* getpid() is a system call; ours changes only at fork. */
static _Atomic pid_t self_pid;

pid_t shim__self_pid(void)
{
	pid_t pid = atomic_load_explicit(&self_pid, memory_order_relaxed);

	if (!pid) {
		pid = getpid();
		atomic_store_explicit(&self_pid, pid, memory_order_relaxed);
	}
	return pid;
}

void shim__self_pid_reset(void)
{
	atomic_store_explicit(&self_pid, getpid(), memory_order_relaxed);
}

/* fget(): a closed fd or an O_PATH one is no file for I/O. */
bool shim__fd_unusable(int fd)
{
	int saved = errno, fl = fcntl(fd, F_GETFL);

	errno = saved;
	return fl < 0 || (fl & O_PATH);
}

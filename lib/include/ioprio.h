/* SPDX-License-Identifier: MIT */
/*
 * A request's I/O priority judged as the kernel judges one
 * (block/ioprio.c, ioprio_check_cap), shared by the engine's submit and
 * the libaio drop-in's iocb decoding so that both answer alike: the class
 * in bits 13-15, the level in bits 0-2, the bits between (the kernel's
 * priority hints) passed on unchecked, as Linux 6.18 does.
 */
#ifndef FSAIO_IOPRIO_H
#define FSAIO_IOPRIO_H

#include <errno.h>
#include <linux/capability.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#define FSAIO__IOPRIO_CLASS(p) (((unsigned)(p) >> 13) & 7u)
#define FSAIO__IOPRIO_LEVEL(p) ((unsigned)(p) & 7u)
enum { FSAIO__IOPRIO_NONE, FSAIO__IOPRIO_RT, FSAIO__IOPRIO_BE, FSAIO__IOPRIO_IDLE };

/* The kernel's capable(CAP_SYS_NICE) || capable(CAP_SYS_ADMIN), from this
 * thread's effective set. Asked only for the real-time class. */
static inline int fsaio__ioprio_rt_allowed(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
	struct __user_cap_data_struct d[2];
	int saved = errno, ok;

	ok = syscall(SYS_capget, &h, d) == 0 &&
	     (d[0].effective & ((1u << CAP_SYS_ADMIN) | (1u << CAP_SYS_NICE)));
	errno = saved;
	return ok;
}

/* 0 when prio may be given to ioprio_set(2) or an iocb's aio_reqprio; a
 * class above IDLE, or a level with IOPRIO_CLASS_NONE, -EINVAL; the
 * real-time class without the capability for it, -EPERM. */
static inline int fsaio__ioprio_check(uint16_t prio)
{
	switch (FSAIO__IOPRIO_CLASS(prio)) {
	case FSAIO__IOPRIO_NONE:
		return FSAIO__IOPRIO_LEVEL(prio) ? -EINVAL : 0;
	case FSAIO__IOPRIO_RT:
		return fsaio__ioprio_rt_allowed() ? 0 : -EPERM;
	case FSAIO__IOPRIO_BE:
	case FSAIO__IOPRIO_IDLE:
		return 0;
	default:
		return -EINVAL;
	}
}

#endif /* FSAIO_IOPRIO_H */

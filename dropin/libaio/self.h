/* SPDX-License-Identifier: MIT */
/* self.c: facts about this process that several files ask for. */
#ifndef FSAIO_SHIM_SELF_H
#define FSAIO_SHIM_SELF_H

#include <stdbool.h>
#include <sys/types.h>

pid_t shim__self_pid(void);             /* getpid, kept across fork */
void shim__self_pid_reset(void);        /* in a fork child handler */
bool shim__fd_unusable(int fd);         /* closed or O_PATH: no file for I/O */

#endif /* FSAIO_SHIM_SELF_H */

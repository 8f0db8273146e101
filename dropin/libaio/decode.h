/* SPDX-License-Identifier: MIT */
/*
 * decode.c: judging an iocb (no context needed but for RESFD's cache, for
 * the fuzz target too). decode_head before a slot is taken; decode_fd,
 * then (aio_key written) decode_op; on an error from either, decode_fail
 * gives the kernel's answer and says whether the fd itself was bad;
 * decode_undo frees what a decode took (the RESFD dup, a malloc'd vector).
 */
#ifndef FSAIO_SHIM_DECODE_H
#define FSAIO_SHIM_DECODE_H

#include "shim.h"

int shim__decode_head(const struct iocb *cb);
int shim__decode_fd(struct shim_ctx *c, struct shim_slot *s, const struct iocb *cb);
int shim__decode_op(struct shim_slot *s, const struct iocb *cb);
int shim__decode_fail(const struct iocb *cb, int ret, bool *fd_bad);
void shim__decode_undo(struct shim_slot *s);

#endif /* FSAIO_SHIM_DECODE_H */

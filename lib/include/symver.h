/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: a symbol's version, in a form every supported compiler honours.
 *
 * The drop-ins export one name under several versions (libaio's
 * io_getevents@LIBAIO_0.1 and @@LIBAIO_0.4, glibc's aio_read@GLIBC_2.2.5
 * and @@GLIBC_2.34), which a version script alone cannot say: it gives a
 * name one version. The assembler's .symver directive, written as top-level
 * asm, binds an implementation to NAME@VERSION (a compatibility version) or
 * NAME@@VERSION (the default one links take); GCC and clang both pass it
 * through, where clang ignores GCC's symver attribute. The version script
 * still lists every NAME in its node and hides the implementation's name.
 *
 * The implementation is marked used: nothing in C refers to it, and link-
 * time optimisation must neither drop nor rename it under the asm.
 */
#ifndef FSAIO_SYMVER_H
#define FSAIO_SYMVER_H

/* Top-level: FSAIO__SYMVER(impl, "name@@VERSION"); before or after impl. */
#define FSAIO__SYMVER(impl, versioned) __asm__(".symver " #impl ", " versioned)

/* On the implementation a .symver names. */
#define FSAIO__VERSIONED __attribute__((used, visibility("default")))

#endif

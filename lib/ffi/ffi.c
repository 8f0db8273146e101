/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: libfsaio-ffi, the prep helpers of <fsaio.h> as real functions.
 *
 * The helpers are static inline in the header, which Rust, Python
 * (ctypes, cffi), Go (cgo) and other foreign-function users cannot call.
 * This file includes the header with FSAIO_PREP defined as an exported
 * definition, so each helper is compiled once from the header's own text
 * under its own name: the library cannot drift from the inline helpers.
 * libfsaio-ffi.map exports exactly them, in their own version node; the
 * header's private fsaio_prep__ stays static. The library holds nothing
 * else: the calls themselves are libfsaio.so's.
 */
#define FSAIO_PREP __attribute__((visibility("default")))
#include "fsaio.h"

#!/bin/sh
# SPDX-License-Identifier: MIT
# Build the libFuzzer target on the drop-in's iocb decoding (decode_fuzz.c)
# with clang, AddressSanitizer and UndefinedBehaviorSanitizer, linking the
# drop-in's decoding (decode.c and the files below it) and the engine's
# sources directly.
#   tests/shim/fuzz/build.sh [OUT]          (default build/decode_fuzz)
#   build/decode_fuzz -max_total_time=300 CORPUS_DIR
# Needs clang (14 or newer) with its fuzzer runtime, liburing, and a
# configured build/ (for the generated fsaio_version.h).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
out=${1:-$root/build/decode_fuzz}
cc=${CC:-clang}
gen=$root/build/include
[ -r "$gen/fsaio_version.h" ] || { echo "build.sh: run meson setup build first" >&2; exit 2; }
$cc -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	-D_GNU_SOURCE -D_FILE_OFFSET_BITS=64 -DFSAIO_BUILDING -std=gnu11 \
	-I"$root/include" -I"$gen" -I"$root/dropin/libaio" -I"$root/lib" -I"$root/lib/include" \
	"$here/decode_fuzz.c" \
	"$root"/dropin/libaio/decode.c "$root"/dropin/libaio/resfd.c "$root"/dropin/libaio/wake.c \
	"$root"/dropin/libaio/usermem.c "$root"/dropin/libaio/self.c "$root"/lib/*.c \
	-luring -lpthread -o "$out"
echo "built $out"

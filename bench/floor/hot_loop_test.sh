#!/bin/sh
# SPDX-License-Identifier: MIT
# fsaio-libaio-hot-loop runs on the kernel's AIO and under each library
# given (the drop-in, the floor): 2,000 reads of a 1 MiB file in DIR, exit
# status 0 and its figure printed.
#   hot_loop_test.sh LOOP DIR [LIBRARY.so...]
set -eu
loop=$1
dir=$2
shift 2
mkdir -p "$dir"
file=$dir/hot-loop.dat
dd if=/dev/urandom of="$file" bs=1M count=1 status=none
for lib in "" "$@"; do
	out=$(LD_PRELOAD=$lib "$loop" "$file" 2000 1)
	case $out in
	*"ns per I/O"*) echo "${lib:-kernel AIO}: $out" ;;
	*) echo "hot_loop_test: no figure from ${lib:-kernel AIO}: $out" >&2; exit 1 ;;
	esac
done
rm -f "$file"

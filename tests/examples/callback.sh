#!/bin/sh
# SPDX-License-Identifier: MIT
# fsaio-callback: every file's bytes and its number of 64 KiB reads, all
# counted by completion callbacks, cached and cold.
#   callback.sh FSAIO_CALLBACK
. "$(dirname "$0")/lib.sh"
ex=$1

random "$dir/r1" 65536
random "$dir/r2" 65537
random "$dir/r3" 5000000
seq 1 100000 >"$dir/text"
: >"$dir/empty"
set -- "$dir/r1" "$dir/r2" "$dir/r3" "$dir/text" "$dir/empty"

for f in "$@"; do
	n=$(wc -c <"$f")
	echo "$f: $n bytes in $(((n + 65535) / 65536)) reads"
done >"$dir/want"
total=0
for f in "$@"; do total=$((total + $(wc -c <"$f"))); done
echo "total: $total bytes" >>"$dir/want"

rounds "$ex" "$@"

expect 1 "fsaio-callback: $dir/missing: No such file or directory" "$ex" "$dir/missing" "$dir/r2"
printf '%s: 65537 bytes in 2 reads\ntotal: 65537 bytes\n' "$dir/r2" | cmp -s - "$dir/out" ||
	fail "the file beside a missing one: $(cat "$dir/out")"
echo "fsaio-callback: ok"

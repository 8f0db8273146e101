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

for round in cached cold; do
	[ $round = cached ] || cold "$@"
	run_ok "$dir/out" "$dir/err" "$ex" "$@"
	cmp -s "$dir/out" "$dir/want" || fail "$round: $(diff "$dir/want" "$dir/out")"
done

rc=0
"$ex" "$dir/missing" "$dir/r2" >"$dir/out" 2>"$dir/err" || rc=$?
[ "$rc" = 1 ] || fail "a missing file: exit $rc"
[ "$(cat "$dir/err")" = "fsaio-callback: $dir/missing: No such file or directory" ] || fail "stderr: $(cat "$dir/err")"
printf '%s: 65537 bytes in 2 reads\ntotal: 65537 bytes\n' "$dir/r2" | cmp -s - "$dir/out" ||
	fail "the file beside a missing one: $(cat "$dir/out")"
echo "fsaio-callback: ok"

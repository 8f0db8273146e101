#!/bin/sh
# SPDX-License-Identifier: MIT
# fsaio-libuv: for every file, the bytes and lines wc(1) counts, reaped
# in a libuv loop polling the event fd, cached and cold.
#   libuv.sh FSAIO_LIBUV
. "$(dirname "$0")/lib.sh"
ex=$1

random "$dir/r1" 65536
random "$dir/r2" 3000007
seq 1 100000 >"$dir/text"
printf 'no newline' >"$dir/short"
: >"$dir/empty"
set -- "$dir/r1" "$dir/r2" "$dir/text" "$dir/short" "$dir/empty"

# What wc counts for each of the files given.
expected() {
	for f in "$@"; do
		echo "$f: $(wc -c <"$f") bytes, $(wc -l <"$f") lines"
	done
}
expected "$@" >"$dir/want"
rounds "$ex" "$@"

# Only files with nothing to read: the loop never waits, and ends.
expected "$dir/empty" "$dir/empty" >"$dir/want"
rounds "$ex" "$dir/empty" "$dir/empty"

# A file that cannot be opened: reported, the others counted, exit 1.
expect 1 "fsaio-libuv: $dir/missing: No such file or directory" "$ex" "$dir/r1" "$dir/missing" "$dir/text"
expected "$dir/r1" "$dir/text" | cmp -s - "$dir/out" || fail "the files beside a missing one: $(cat "$dir/out")"
expect 2 "usage: fsaio-libuv FILE..." "$ex"
echo "fsaio-libuv: ok"

#!/bin/sh
# SPDX-License-Identifier: MIT
# fsaio-libuv: for every file, the bytes and lines wc(1) counts, reaped
# in a libuv loop polling the event fd, cached and cold.
#   libuv.sh FSAIO_LIBUV
. "$(dirname "$0")/lib.sh"
ex=$1

count_files
set -- "$dir/r1" "$dir/r2" "$dir/text" "$dir/short" "$dir/empty"
wc_counts "$@" >"$dir/want"
rounds "$ex" "$@"

# Only files with nothing to read: the loop never waits, and ends.
wc_counts "$dir/empty" "$dir/empty" >"$dir/want"
rounds "$ex" "$dir/empty" "$dir/empty"

# A file that cannot be opened: reported, the others counted, exit 1.
expect 1 "fsaio-libuv: $dir/missing: No such file or directory" "$ex" "$dir/r1" "$dir/missing" "$dir/text"
wc_counts "$dir/r1" "$dir/text" | cmp -s - "$dir/out" || fail "the files beside a missing one: $(cat "$dir/out")"
expect 2 "usage: fsaio-libuv FILE..." "$ex"
echo "fsaio-libuv: ok"

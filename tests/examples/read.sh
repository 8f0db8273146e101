#!/bin/sh
# SPDX-License-Identifier: MIT
# fsaio-read, the program of libfsaio(7): one line per 16 KiB chunk of the
# first 64 KiB, each with the bytes read (short at end of file, 0 past it),
# cached and cold; a missing file is an error.
#   read.sh FSAIO_READ
. "$(dirname "$0")/lib.sh"
prog=$1

# 40000 bytes: two whole chunks, a short one, one past the end.
random "$dir/f" 40000
expect="chunk 0: 16384 bytes
chunk 1: 16384 bytes
chunk 2: 7232 bytes
chunk 3: 0 bytes"
for how in cached cold; do
	[ "$how" = cached ] || cold "$dir/f"
	"$prog" "$dir/f" >"$dir/out" 2>"$dir/err" || fail "$how: exit $? ($(cat "$dir/err"))"
	[ "$(sort "$dir/out")" = "$expect" ] || fail "$how: printed $(cat "$dir/out")"
done
if "$prog" "$dir/missing" >"$dir/out" 2>"$dir/err"; then
	fail "a missing file did not fail"
fi
grep -q "No such file" "$dir/err" || fail "a missing file: $(cat "$dir/err")"
echo "fsaio-read: ok"

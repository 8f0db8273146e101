#!/bin/sh
# SPDX-License-Identifier: MIT
# fsaio-copy: the copy equals the source byte for byte, for sizes that are
# and are not multiples of the block size, an empty file, over a longer
# existing file; cached and cold; bad usage refused.
#   copy.sh FSAIO_COPY
. "$(dirname "$0")/lib.sh"
ex=$1

random "$dir/one" 1
random "$dir/page" 4096
random "$dir/block" 131072
random "$dir/odd" 3145739         # 24 blocks of 128 KiB and 11 bytes
random "$dir/big" 9437184
: >"$dir/empty"

for src in one page block odd big empty; do
	for opts in "" "-j 1 -b 4096" "-j 3 -b 100" "-j 32 -b 64k" "-j 2 -b 1M"; do
		rm -f "$dir/dst"
		# shellcheck disable=SC2086
		run_ok "$dir/out" "$dir/err" "$ex" $opts "$dir/$src" "$dir/dst"
		cmp "$dir/$src" "$dir/dst" >/dev/null || fail "$src $opts: the copy differs"
		[ ! -s "$dir/out" ] || fail "$src $opts: printed $(cat "$dir/out")"
	done
done

# Cold source; a longer file already at DST is cut to the source's size.
cold "$dir/odd"
random "$dir/dst" 12000000
run_ok "$dir/out" "$dir/err" "$ex" -b 64k "$dir/odd" "$dir/dst"
cmp "$dir/odd" "$dir/dst" >/dev/null || fail "cold source over a longer file"
random "$dir/dst" 100
run_ok "$dir/out" "$dir/err" "$ex" "$dir/empty" "$dir/dst"
if [ ! -f "$dir/dst" ] || [ -s "$dir/dst" ]; then fail "an empty source left DST non-empty"; fi
# DST gets SRC's permissions (under the umask).
chmod 640 "$dir/page"
rm -f "$dir/dst"
(umask 022 && "$ex" "$dir/page" "$dir/dst") || fail "copy for the mode"
[ "$(stat -c %a "$dir/dst")" = 640 ] || fail "DST mode $(stat -c %a "$dir/dst"), expected 640"

# Errors: one line on stderr; 2 for usage, 1 for a failed copy; DST is
# left alone.
cp "$dir/odd" "$dir/dst"
expect 2 "fsaio-copy: -j: '0' is not a number from 1 to 1024" "$ex" -j 0 "$dir/odd" "$dir/dst"
expect 2 "fsaio-copy: -j: 'x' is not a number from 1 to 1024" "$ex" -j x "$dir/odd" "$dir/dst"
expect 2 "fsaio-copy: -b: '65M' is not a size from 1 to 64M" "$ex" -b 65M "$dir/odd" "$dir/dst"
expect 2 "fsaio-copy: option '-b' needs a value" "$ex" "$dir/odd" "$dir/dst" -b
expect 2 "fsaio-copy: invalid option '-q' (see fsaio-copy -h)" "$ex" -q "$dir/odd" "$dir/dst"
expect 2 "fsaio-copy: expected SRC and DST (see fsaio-copy -h)" "$ex" "$dir/odd"
expect 1 "fsaio-copy: $dir/missing: No such file or directory" "$ex" "$dir/missing" "$dir/dst"
expect 1 "fsaio-copy: $dir/odd and $dir/./odd are the same file" "$ex" "$dir/odd" "$dir/./odd"
cmp "$dir/odd" "$dir/dst" >/dev/null || fail "a refused copy changed DST"
run_ok "$dir/out" "$dir/err" "$ex" -h
head -n 1 "$dir/out" | grep -q "^Usage: fsaio-copy " || fail "-h: $(cat "$dir/out")"
echo "fsaio-copy: ok"

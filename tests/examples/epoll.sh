#!/bin/sh
# SPDX-License-Identifier: MIT
# fsaio-epoll: for every file, the bytes and lines wc(1) counts, reaped
# through an epoll loop on the event fd, cached and cold.
#   epoll.sh FSAIO_EPOLL
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
for round in cached cold; do
	[ $round = cached ] || cold "$@"
	run_ok "$dir/out" "$dir/err" "$ex" "$@"
	cmp -s "$dir/out" "$dir/want" || fail "$round: $(diff "$dir/want" "$dir/out")"
done

# A file that cannot be opened: reported, the others counted, exit 1.
rc=0
"$ex" "$dir/r1" "$dir/missing" "$dir/text" >"$dir/out" 2>"$dir/err" || rc=$?
[ "$rc" = 1 ] || fail "a missing file: exit $rc"
[ "$(cat "$dir/err")" = "fsaio-epoll: $dir/missing: No such file or directory" ] || fail "stderr: $(cat "$dir/err")"
expected "$dir/r1" "$dir/text" | cmp -s - "$dir/out" || fail "the files beside a missing one: $(cat "$dir/out")"
echo "fsaio-epoll: ok"

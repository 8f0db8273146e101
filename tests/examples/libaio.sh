#!/bin/sh
# SPDX-License-Identifier: MIT
# libaio-read, a plain libaio program: on the kernel's AIO and on libfsaio's
# drop-in it prints the file unchanged, and the drop-in's own counters show
# that it served the reads.
#   libaio.sh LIBAIO_READ FSAIO_RUN
# env: FSAIO_SHIM, the drop-in; T_DIRECT_PRELOAD=1 preloads it without
# fsaio-run (sanitizer builds, whose runtime a shell cannot load).
. "$(dirname "$0")/lib.sh"
ex=$1
run=$2

on_dropin() {
	if [ -n "${T_DIRECT_PRELOAD:-}" ]; then
		LD_PRELOAD=$FSAIO_SHIM FSAIO_STATS=1 "$@"
	else
		"$run" -s "$@"
	fi
}

random "$dir/big" 2097159        # 32 chunks of 64 KiB and 7 bytes
seq 1 1000 >"$dir/small"
: >"$dir/empty"
for f in big small empty; do
	chunks=$((($(wc -c <"$dir/$f") + 65535) / 65536))
	for round in cached cold; do
		[ $round = cached ] || cold "$dir/$f"
		run_ok "$dir/kernel" "$dir/err" env FSAIO_STATS=1 "$ex" "$dir/$f"
		cmp -s "$dir/kernel" "$dir/$f" || fail "$f $round: the kernel's AIO output differs from the file"
		[ $round = cached ] || cold "$dir/$f"
		rc=0
		on_dropin "$ex" "$dir/$f" >"$dir/dropin" 2>"$dir/err" || rc=$?
		[ "$rc" = 0 ] || fail "$f $round: exit $rc on the drop-in: $(cat "$dir/err")"
		cmp -s "$dir/dropin" "$dir/kernel" || fail "$f $round: the drop-in's output differs from the kernel's"
		grep -q "^fsaio: io_context .*: requests $chunks, " "$dir/err" ||
			fail "$f $round: the drop-in did not serve $chunks reads: $(cat "$dir/err")"
	done
done
echo "libaio-read: ok"

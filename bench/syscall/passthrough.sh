#!/bin/sh
# SPDX-License-Identifier: MIT
# The cost of an ordinary system call through syscall(2) with the libaio
# drop-in preloaded against plain glibc: a syscall(SYS_getpid) loop and a
# syscall(SYS_futex, FUTEX_WAKE) loop (fsaio-syscall-loop), side by side,
# rounds alternating (plain, drop-in, drop-in, plain, ...), the median of
# each, and the ratio drop-in / plain (1.00: no cost).
#
#   bench/syscall/passthrough.sh [-b BUILDDIR] [-n ROUNDS] [-i ITERATIONS]
set -eu
. "$(dirname "$0")/../lib.sh"
build=build
rounds=11
iters=2000000
bench_opts "b:build n:rounds i:iters" "$@"
loop=$build/bench/fsaio-syscall-loop
shim=$(realpath "$build/dropin/libfsaio-libaio.so")
[ -x "$loop" ] && [ -f "$shim" ] || { echo "build first: $loop, $shim" >&2; exit 2; }
out=$(mktemp)
trap 'rm -f "$out"' EXIT

one() { # VARIANT TEST
	if [ "$1" = dropin ]; then
		r=$(LD_PRELOAD=$shim "$loop" "$2" "$iters")
	else
		r=$("$loop" "$2" "$iters")
	fi
	echo "$2 $1 $r" >>"$out"
}

i=0
while [ $i -lt "$rounds" ]; do
	for t in getpid futex; do
		if [ $((i % 2)) = 0 ]; then
			one plain $t; one dropin $t
		else
			one dropin $t; one plain $t
		fi
	done
	i=$((i + 1))
done

echo "$rounds rounds of $iters calls each, median ns per call (thread CPU time; wall time)"
printf '%-8s %10s %10s %7s   %10s %10s %7s\n' call plain drop-in ratio plain drop-in ratio
for t in getpid futex; do
	pc=$(median "$out" cpu_ns_per_call "$t plain"); dc=$(median "$out" cpu_ns_per_call "$t dropin")
	pw=$(median "$out" wall_ns_per_call "$t plain"); dw=$(median "$out" wall_ns_per_call "$t dropin")
	awk -v t=$t -v pc="$pc" -v dc="$dc" -v pw="$pw" -v dw="$dw" \
		'BEGIN { printf "%-8s %10.1f %10.1f %7.3f   %10.1f %10.1f %7.3f\n", t, pc, dc, dc / pc, pw, dw, dw / pw }'
done

#!/bin/sh
# SPDX-License-Identifier: MIT
# io_submit latency of ioping -A on cold data (ioping drops the file's cache
# before each request), on the kernel's AIO and on the libaio drop-in, side
# by side: rounds alternating, each `ioping -A -c COUNT -i 0` on a buffered
# file in DIR, io_submit timed by fsaio-submit-timer (ioping itself reports
# only the whole request). Prints each round's p50/p99 and ioping's mean
# request time, then the medians.
#
#   bench/syscall/ioping-submit.sh [-b BUILDDIR] [-n ROUNDS] [-c COUNT] DIR
set -eu
. "$(dirname "$0")/../lib.sh"
build=build
rounds=5
count=200
bench_opts "b:build n:rounds c:count" "$@"
shift $((OPTIND - 1))
[ $# = 1 ] || bench_usage
dir=$1
timer=$(realpath "$build/bench/libfsaio-submit-timer.so")
shim=$(realpath "$build/dropin/libfsaio-libaio.so")
bench_need ioping
out=$(mktemp)
trap 'rm -f "$out"' EXIT

one() { # kernel|dropin
	if [ "$1" = dropin ]; then pre="$timer:$shim"; else pre=$timer; fi
	r=$(LD_PRELOAD=$pre ioping -A -B -c "$count" -i 0 "$dir" 2>&1)
	# -B: "requests time iops bps min avg max mdev ..." (times in ns), one line.
	avg=$(echo "$r" | awk 'NF >= 8 && $0 ~ /^[0-9 ]+$/ { print $6 / 1000 }')
	echo "$1 $(echo "$r" | grep '^submit_timer:' | cut -d' ' -f3-) avg_request_us $avg" | tee -a "$out"
}

i=0
while [ $i -lt "$rounds" ]; do
	if [ $((i % 2)) = 0 ]; then one kernel; one dropin; else one dropin; one kernel; fi
	i=$((i + 1))
done

echo "medians of $rounds rounds ($count requests each): io_submit p50 / p99 us, ioping's mean request us"
for v in kernel dropin; do
	echo "$v $(median "$out" p50_us $v) / $(median "$out" p99_us $v)   $(median "$out" avg_request_us $v)"
done

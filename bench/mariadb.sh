#!/bin/bash
# SPDX-License-Identifier: MIT
# MariaDB with InnoDB's native AIO, side by side: on the libaio drop-in
# (buffered files, as fsaio-run gives them), on the kernel's own AIO with the
# same buffered files, and on the kernel's AIO with O_DIRECT (InnoDB's
# default, the one place where the kernel's AIO does not block). sysbench's
# oltp_read_only and oltp_read_write run on a data set several times the
# buffer pool, cold (the server restarted with its files dropped from the
# page cache) and then warm (the files read into the page cache, the same
# server): transactions per second, latency, and the server's CPU time per
# transaction (from /proc, every thread it had). Methods run in the order
# A B C ... then back, round after round, so that a change of the machine's
# load weighs on all of them.
#
#   mariadb.sh [-d DIR] [-s SHIM.so] [-r RUNS] [-t SECONDS] [-n THREADS]
#              [-T TABLES] [-R ROWS] [-m METHODS]
# DIR (default ./fsaio-mariadb-bench, on disk) holds the datadir, kept
# between runs; METHODS is a comma list of fsaio, fsaio-async-writes,
# kernel, direct (default fsaio,kernel,direct). Prints a table, and the
# drop-in's counters (FSAIO_STATS) of its last cold and warm run.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
dir=./fsaio-mariadb-bench
shim=$here/../build/dropin/libfsaio-libaio.so
run=$here/../build/dropin/fsaio-run
rounds=2
secs=20
threads=4
tables=8
rows=50000
methods=fsaio,kernel,direct
bench_opts "d:dir s:shim r:rounds t:secs n:threads T:tables R:rows m:methods" "$@"
# shellcheck source=tests/clients/mariadb_server.sh
. "$here/../tests/clients/mariadb_server.sh"
missing=$(md_missing)
[ -z "$missing" ] || { echo "mariadb.sh: not installed: $missing" >&2; exit 2; }
bench_have "use -s" "$shim"
export FSAIO_SHIM=$shim

mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
sockdir=$(mktemp -d "${TMPDIR:-/tmp}/fsaio-mariadb-bench.XXXXXX")
md_data=$dir/data
md_sock=$sockdir/sock
out=$dir/results.$$
mkdir -p "$out"
trap 'md_cleanup; rm -rf "$sockdir"' EXIT

# use METHOD: what runs the server, and how InnoDB opens its files.
use() {
	case $1 in
	fsaio) md_prefix=(env FSAIO_STATS=1 "$run"); md_opts=() ;;
	fsaio-async-writes) md_prefix=(env FSAIO_STATS=1 FSAIO_ASYNC_WRITES=1 "$run"); md_opts=() ;;
	kernel) md_prefix=(); md_opts=() ;;
	direct) md_prefix=(); md_opts=(--innodb-flush-method=O_DIRECT) ;;
	*) echo "mariadb.sh: unknown method $1" >&2; exit 2 ;;
	esac
}

# The server's CPU time so far, in clock ticks (all its threads, also
# those that have ended).
cpu_ticks() {
	awk '{ print $14 + $15 }' "/proc/$md_pid/stat"
}

if [ ! -d "$md_data/sbtest" ]; then
	echo "== loading $tables x $rows rows into $md_data"
	rm -rf "$md_data" "$(md_tmpdir)"
	md_install
	use kernel
	md_start "$dir/load.log" || md_fail "mariadbd did not start: $(tail "$dir/load.log")"
	md_sql "CREATE DATABASE sbtest"
	md_sysbench oltp_read_write --tables="$tables" --table-size="$rows" --threads=2 prepare >/dev/null
	md_stop
fi
echo "data: $(du -sm "$md_data/sbtest" | cut -f1) MiB, buffer pool 8 MiB," \
	"$threads sysbench threads, $secs s per run, $rounds rounds"

# measure METHOD TEST PHASE ROUND: one sysbench run on the running server;
# appends "method test phase tps avg_ms p95_ms cpu_ms_per_txn" to the table.
measure() {
	local f=$out/$1-$2-$3-$4.out c0 c1 tps avg p95 n
	c0=$(cpu_ticks)
	md_sysbench "$2" --tables="$tables" --table-size="$rows" --threads="$threads" \
		--time="$secs" --events=0 --report-interval=0 run >"$f" 2>&1 ||
		md_fail "sysbench $2 ($1, $3): $(tail "$f")"
	c1=$(cpu_ticks)
	n=$(awk '/transactions:/ { print $2 }' "$f")
	tps=$(awk '/transactions:/ { gsub(/\(/, "", $3); print $3 }' "$f")
	avg=$(awk '/avg:/ { print $2 }' "$f")
	p95=$(awk '/95th percentile:/ { print $3 }' "$f")
	echo "$1 $2 $3 $tps $avg $p95 $(awk -v c=$((c1 - c0)) -v n="$n" -v hz="$(getconf CLK_TCK)" \
		'BEGIN { printf "%.3f", c * 1000 / hz / n }')" >>"$out/table"
	printf '  %-19s %-16s %-5s %9s tps  avg %7s ms  p95 %7s ms\n' "$1" "$2" "$3" "$tps" "$avg" "$p95"
}

# one METHOD ROUND: for each test, a cold run on a freshly started server
# whose files are out of the page cache, then a warm run with them in it.
one() {
	local test
	use "$1"
	for test in oltp_read_only oltp_read_write; do
		md_evict
		md_start "$out/$1-$test-$2.log" || md_fail "mariadbd ($1) did not start: $(tail "$md_log")"
		measure "$1" "$test" cold "$2"
		cat "$md_data"/sbtest/*.ibd >/dev/null
		measure "$1" "$test" warm "$2"
		md_stop
		! grep "\[ERROR\]" "$md_log" || md_fail "[ERROR] in $md_log"
	done
}

IFS=, read -r -a list <<<"$methods"
for ((r = 1; r <= rounds; r++)); do
	echo "== round $r ($(date -u +%H:%M) UTC, load $(cut -d' ' -f1-3 /proc/loadavg))"
	if ((r % 2)); then order=("${list[@]}"); else order=(); for m in "${list[@]}"; do order=("$m" "${order[@]}"); done; fi
	for m in "${order[@]}"; do one "$m" "$r"; done
done

echo
echo "medians over $rounds rounds (tps, avg and p95 latency in ms, server CPU ms per transaction):"
printf '| %s | %s | %s | %s | %s | %s | %s |\n' method test phase tps "avg ms" "p95 ms" "CPU ms/txn"
echo "|---|---|---|---|---|---|---|"
for test in oltp_read_only oltp_read_write; do
	for phase in cold warm; do
		for m in "${list[@]}"; do
			awk -v m="$m" -v t="$test" -v p="$phase" '
				$1 == m && $2 == t && $3 == p { n++; for (i = 4; i <= 7; i++) v[i, n] = $i }
				function med(i,   a, k, j, x) {
					for (k = 1; k <= n; k++) a[k] = v[i, k]
					for (k = 2; k <= n; k++) { x = a[k]; for (j = k - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
					return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
				}
				END { if (n) printf "| %s | %s | %s | %.1f | %.2f | %.2f | %.3f |\n", m, t, p, med(4), med(5), med(6), med(7) }
			' "$out/table"
		done
	done
done
for f in "$out"/fsaio-*-"$rounds".log; do
	[ -e "$f" ] || continue
	echo "$(basename "$f" .log): $(grep -m1 "^fsaio: io_context" "$f" | cut -d, -f1,2,4,10)"
done
echo "raw results: $out"

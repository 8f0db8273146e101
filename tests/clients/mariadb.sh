#!/bin/bash
# SPDX-License-Identifier: MIT
# MariaDB on the libaio drop-in: mariadbd (Debian's, unmodified) started by
# hand under fsaio-run with InnoDB's native AIO on buffered files and a
# buffer pool much smaller than the data, so that pages are read and
# written through io_submit all the time. sysbench loads and runs OLTP
# read-write transactions; the server is shut down cleanly, restarted and
# checked; then it is killed with SIGKILL in the middle of a run, and the
# restart's crash recovery reads its pages through the drop-in too.
#
#   mariadb.sh MODE FSAIO_RUN
# MODE: kernel (no drop-in: the same checks on the kernel's AIO), shim, or
# shim-async-writes (FSAIO_ASYNC_WRITES=1). env: FSAIO_SHIM (the drop-in),
# FSAIO_TEST_BUILDDIR (scratch space on disk).
#
# Checks: every sysbench run does all its transactions without an error;
# each table keeps its row count (a transaction deletes and inserts one
# row); CHECK TABLE says OK for every table after the clean restart and
# after crash recovery; the clean restart sees the checksums taken before
# the shutdown; recovery really ran; no [ERROR] line in any error log; the
# server says it uses native AIO; and under the drop-in, the counters it
# prints at io_destroy show it carried the requests (none on the kernel).
# Exit 77 (skipped) when mariadbd or sysbench is not installed.
set -euo pipefail
mode=$1
run=$2
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/clients/mariadb_server.sh
. "$here/mariadb_server.sh"
fail() { md_fail "$mode: $*"; }

missing=$(md_missing)
if [ -n "$missing" ]; then
	echo "SKIP: not installed: $missing (scripts/install-deps --clients installs them)"
	exit 77
fi

tables=4
rows=25000
events=3000

case $mode in
kernel) md_prefix=() ;;
shim) md_prefix=(env FSAIO_STATS=1 "$run") ;;
shim-async-writes) md_prefix=(env FSAIO_STATS=1 FSAIO_ASYNC_WRITES=1 "$run") ;;
# io_uring refused as a container's seccomp profile refuses it (EPERM):
# the engine's misses go to its worker pool.
shim-no-uring) md_prefix=(env FSAIO_STATS=1 "$FSAIO_DENY_URING" --errno=EPERM "$run") ;;
*) echo "unknown mode $mode"; exit 2 ;;
esac
md_opts=()

dir=${FSAIO_TEST_BUILDDIR:-.}/mariadb-$mode.$$
sockdir=$(mktemp -d "${TMPDIR:-/tmp}/fsaio-mariadb.XXXXXX")
md_data=$dir/data
md_sock=$sockdir/sock
mkdir -p "$dir"
# On failure the datadir and error logs stay, for a look.
trap 'rc=$?; md_cleanup; rm -rf "$sockdir"
	if [ $rc = 0 ] || [ $rc = 77 ]; then rm -rf "$dir"; else echo "kept: $dir"; fi' EXIT
# A core dump of an aborting server would land in the datadir.
ulimit -c 0
[ "$(stat -f -c %T "$dir")" != tmpfs ] || fail "$dir is on tmpfs: the datadir must be on disk"

# start N: start the server with error log N; a server that dies at start
# fails the test, with the reason when it is a known one.
start() {
	md_start "$dir/err-$1.log" && return 0
	if grep -q "io_getevents returned" "$md_log" &&
		! nm -D --defined-only "$FSAIO_SHIM" 2>/dev/null | grep -qw syscall; then
		grep -m1 "io_getevents returned" "$md_log"
		echo "SKIP: mariadbd reaps with syscall(__NR_io_getevents), which this" \
			"libfsaio-libaio.so does not serve (it exports no syscall())"
		exit 77
	fi
	fail "mariadbd died at start: $(tail -30 "$md_log")"
}

# started N: start N, the drop-in is loaded in the server (ld.so only
# warns when it cannot preload it), and InnoDB kept native AIO (it falls
# back to its own simulated AIO, with a warning, when io_setup fails).
started() {
	start "$1"
	if [ "$mode" != kernel ] && ! grep -qF "$(realpath "$FSAIO_SHIM")" "/proc/$md_pid/maps"; then
		fail "the drop-in is not loaded in mariadbd: $(grep -m3 "ld\.so" "$md_log")"
	fi
	[ "$(md_sql "SELECT @@innodb_use_native_aio")" = 1 ] ||
		fail "InnoDB gave up native AIO: $(grep -i "aio\|io_setup" "$md_log")"
}

# check_log N: error log N has no [ERROR], and says native AIO is on.
check_log() {
	local log=$dir/err-$1.log
	! grep -n "\[ERROR\]" "$log" || fail "[ERROR] in error log $1"
	grep -q "InnoDB: Using Linux native AIO" "$log" ||
		fail "error log $1: InnoDB is not using native AIO: $(grep -m3 -i aio "$log")"
}

# counter N NAME: the sum of the drop-in's counter NAME over the lines it
# printed at each io_destroy into error log N.
counter() {
	grep "^fsaio: io_context" "$dir/err-$1.log" | grep -o "[,:] $2 [0-9]*" |
		awk '{ s += $NF } END { print s + 0 }'
}

# served N [cold]: the drop-in's counters in error log N (printed at a
# clean shutdown) show requests, and with "cold" that some left the
# submitter (the files were out of the page cache); on the kernel, none.
served() {
	local log=$dir/err-$1.log n away
	if [ "$mode" = kernel ]; then
		! grep -q "^fsaio:" "$log" || fail "drop-in counters in a run without it"
		return
	fi
	grep "^fsaio: io_context" "$log" ||
		fail "error log $1: no counters from the drop-in: $(tail -15 "$log")"
	n=$(counter "$1" requests)
	[ "$n" -gt 0 ] || fail "error log $1: the drop-in carried no request"
	away=$(( $(counter "$1" queued) + $(counter "$1" "io_uring SQEs") ))
	echo "the drop-in carried $n requests, $away of them past io_submit"
	[ "${2:-}" != cold ] || [ "$away" -gt 0 ] ||
		fail "error log $1: the files were cold, yet every request completed inline"
	if [ "$mode" = shim-no-uring ]; then
		[ "$(counter "$1" "io_uring SQEs")" = 0 ] ||
			fail "error log $1: io_uring SQEs under a filter that refuses io_uring"
		[ "${2:-}" != cold ] || [ "$(counter "$1" queued)" -gt 0 ] ||
			fail "error log $1: the files were cold, yet the worker pool carried nothing"
	fi
}

# rw EVENTS: sysbench read-write transactions, all of which must be done
# without an error (deadlocks are retried by sysbench and counted).
rw() {
	local out=$dir/rw.out
	md_sysbench oltp_read_write --tables=$tables --table-size=$rows --threads=4 \
		--events="$1" --time=0 --rand-seed=42 --report-interval=0 run >"$out" 2>&1 ||
		fail "sysbench run: $(tail -20 "$out")"
	grep -q "transactions: *$1 " "$out" || fail "sysbench did not do $1 transactions: $(cat "$out")"
	grep -E "transactions:|ignored errors:|reconnects:|95th" "$out"
	grep -q "reconnects: *0 " "$out" || fail "sysbench reconnected"
}

# check_tables: CHECK TABLE on every table of every database says OK, and
# each sbtest table still has its rows.
check_tables() {
	local out=$dir/check.out t n bad
	mariadb-check --no-defaults -S "$md_sock" -uroot --all-databases >"$out" 2>&1 ||
		fail "mariadb-check: $(cat "$out")"
	n=$(grep -c "^sbtest\.sbtest[0-9]* *OK$" "$out" || true)
	[ "$n" = "$tables" ] || fail "CHECK TABLE: $n of $tables sbtest tables OK: $(cat "$out")"
	# Every line names a table then OK; anything else is a finding.
	bad=$(grep -v -E "^[a-z_0-9]+\.[A-Za-z_0-9]+ +OK$" "$out" || true)
	[ -z "$bad" ] || fail "CHECK TABLE: $bad"
	echo "CHECK TABLE: $(wc -l <"$out") tables OK"
	for ((t = 1; t <= tables; t++)); do
		n=$(md_sql "SELECT COUNT(*) FROM sbtest.sbtest$t")
		[ "$n" = "$rows" ] || fail "sbtest$t has $n rows, not $rows"
	done
}

checksums() {
	local t list=sbtest.sbtest1
	for ((t = 2; t <= tables; t++)); do list="$list,sbtest.sbtest$t"; done
	md_sql "CHECKSUM TABLE $list EXTENDED"
}

t0=$SECONDS
echo "== $mode: install, start, load $tables x $rows rows (8 MiB buffer pool)"
md_install
started 1
md_sql "CREATE DATABASE sbtest"
md_sysbench oltp_read_write --tables=$tables --table-size=$rows --threads=2 prepare \
	>"$dir/prepare.out" 2>&1 || fail "sysbench prepare: $(tail -20 "$dir/prepare.out")"
size=$(du -sm "$md_data/sbtest" | cut -f1)
echo "sbtest: $size MiB on disk"
[ "$size" -gt 16 ] || fail "the data ($size MiB) is not larger than twice the buffer pool"
echo "== read-write: $events transactions, then a clean shutdown"
rw $events
sums=$(checksums)
md_stop
check_log 1
served 1

echo "== restart with the files out of the page cache, CHECK TABLE, the same checksums, read-write again"
md_evict
started 2
check_tables
[ "$(checksums)" = "$sums" ] || fail "checksums changed across a clean restart: $sums / $(checksums)"
rw $events
md_stop
check_log 2
served 2

echo "== read-write killed with SIGKILL after some commits"
started 3
base=$(md_sql "SHOW GLOBAL STATUS LIKE 'Com_commit'" | cut -f2)
md_sysbench oltp_read_write --tables=$tables --table-size=$rows --threads=4 \
	--events=0 --time=600 --rand-seed=7 run >"$dir/killed.out" 2>&1 &
bench=$!
for ((i = 0; ; i++)); do
	c=$(md_sql "SHOW GLOBAL STATUS LIKE 'Com_commit'" | cut -f2)
	[ $((c - base)) -lt 300 ] || break
	kill -0 $bench 2>/dev/null || fail "sysbench ended early: $(tail -20 "$dir/killed.out")"
	[ $i -lt 6000 ] || fail "only $((c - base)) commits in 600 s"
	sleep 0.1
done
md_kill
echo "killed after $((c - base)) commits"
wait $bench && fail "sysbench did not notice the server die" || true
check_log 3

echo "== restart with the files out of the page cache: crash recovery, CHECK TABLE"
md_evict
started 4
grep -q "InnoDB: Starting crash recovery" "$dir/err-4.log" ||
	fail "no crash recovery: $(grep InnoDB "$dir/err-4.log")"
grep -E "crash recovery|To recover|recover" "$dir/err-4.log" | sed 's/^[0-9-]* [0-9:]* 0 //'
check_tables
rw $events
md_stop
check_log 4
served 4 cold
echo "== $mode: passed in $((SECONDS - t0)) s"

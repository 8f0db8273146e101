# SPDX-License-Identifier: MIT
# Shared by the examples' tests (sourced): a scratch directory on disk,
# failure reporting, test files, and a way to make a file cold.

set -eu
fail() { echo "FAIL: $*"; exit 1; }

# Scratch files go under the build directory, never /tmp (may be tmpfs).
dir=${FSAIO_TEST_BUILDDIR:-.}/$(basename "$0" .sh).$$
mkdir -p "$dir"
trap 'rm -rf "$dir"' EXIT

# random FILE BYTES: a file of random bytes.
random() { head -c "$2" /dev/urandom >"$1"; }

# The files the event-loop examples count: random bytes small and large, a
# text, one without a final newline, an empty one ($dir/r1, r2, text,
# short, empty).
count_files() {
	random "$dir/r1" 65536
	random "$dir/r2" 3000007
	seq 1 100000 >"$dir/text"
	printf 'no newline' >"$dir/short"
	: >"$dir/empty"
}

# wc_counts FILE...: what wc(1) counts for each, as those examples print it.
wc_counts() {
	for f in "$@"; do
		echo "$f: $(wc -c <"$f") bytes, $(wc -l <"$f") lines"
	done
}

# cold FILE...: write the files back and drop them from the page cache, so
# that reads of them miss and are carried by the engine's workers.
cold() {
	for cold_file in "$@"; do
		sync "$cold_file"
		dd if="$cold_file" iflag=nocache count=0 status=none
	done
}

# run_to OUT ERR RC WANT_ERR CMD...: run CMD with its output in OUT and
# its stderr in ERR; it must exit RC with WANT_ERR on stderr.
run_to() {
	out=$1 err=$2 want_rc=$3 want_err=$4
	shift 4
	rc=0
	"$@" >"$out" 2>"$err" || rc=$?
	[ "$rc" = "$want_rc" ] || fail "$*: exit $rc, expected $want_rc: $(cat "$err")"
	[ "$(cat "$err")" = "$want_err" ] || fail "$*: stderr '$(cat "$err")'"
}

# expect RC ERR CMD...: run CMD, which must exit RC with ERR on stderr;
# its output is left in $dir/out.
expect() { run_to "$dir/out" "$dir/err" "$@"; }

# run_ok OUT ERR CMD...: run CMD, which must exit 0 with nothing on stderr.
run_ok() {
	run_ok_out=$1 run_ok_err=$2
	shift 2
	run_to "$run_ok_out" "$run_ok_err" 0 "" "$@"
}

# rounds PROG FILE...: run PROG on the files as they are, then again made
# cold; each time it must exit 0, quiet, and print what $dir/want holds.
rounds() {
	rounds_prog=$1
	shift
	for round in cached cold; do
		[ $round = cached ] || cold "$@"
		run_ok "$dir/out" "$dir/err" "$rounds_prog" "$@"
		cmp -s "$dir/out" "$dir/want" || fail "$round: $(diff "$dir/want" "$dir/out")"
	done
}

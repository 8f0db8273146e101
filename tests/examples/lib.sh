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

# cold FILE...: write the files back and drop them from the page cache, so
# that reads of them miss and are carried by the engine's workers.
cold() {
	for cold_file in "$@"; do
		sync "$cold_file"
		dd if="$cold_file" iflag=nocache count=0 status=none
	done
}

# run_ok OUT ERR CMD...: run CMD, which must exit 0 with nothing on stderr.
run_ok() {
	out=$1 err=$2
	shift 2
	rc=0
	"$@" >"$out" 2>"$err" || rc=$?
	[ "$rc" = 0 ] || fail "$*: exit $rc: $(cat "$err")"
	[ ! -s "$err" ] || fail "$*: stderr: $(cat "$err")"
}

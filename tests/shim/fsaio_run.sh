#!/bin/sh
# SPDX-License-Identifier: MIT
# fsaio-run: the wrapper's options and environment, its exit statuses and
# messages, and a libaio program run through it really gets the drop-in.
#   fsaio_run.sh FSAIO_RUN SHIM_TEST_ABI POSIX_SHIM VERSION
# FSAIO_SHIM names the libaio drop-in; POSIX_SHIM is a readable library
# given as FSAIO_POSIX_SHIM for -P; VERSION is the project's version.
set -eu
run=$1
abi_test=$2
posix_shim=$3
version=$4
fail() { echo "FAIL: $*"; exit 1; }

dir=${FSAIO_TEST_BUILDDIR:-.}/fsaio_run.$$
mkdir -p "$dir"
trap 'rm -rf "$dir"' EXIT
out=$dir/out
err=$dir/err

# expect STATUS STDERR_LINE CMD...: run CMD, check its exit status, that
# stderr is exactly the one line given, and that nothing went to stdout.
expect() {
	want_rc=$1 want_err=$2
	shift 2
	rc=0
	"$@" >"$out" 2>"$err" || rc=$?
	[ "$rc" = "$want_rc" ] || fail "$*: exit $rc, expected $want_rc (stderr: $(cat "$err"))"
	[ "$(cat "$err")" = "$want_err" ] || fail "$*: stderr '$(cat "$err")', expected '$want_err'"
	[ ! -s "$out" ] || fail "$*: wrote to stdout: $(cat "$out")"
}

# Options set the environment; the drop-in goes first in LD_PRELOAD, before
# the caller's, which is kept.
o=$(LD_PRELOAD=/lib/x86_64-linux-gnu/libc.so.6 "$run" -w 3 -s env)
echo "$o" | grep -qx "FSAIO_WORKERS=3" || fail "-w 3 did not set FSAIO_WORKERS"
echo "$o" | grep -qx "FSAIO_STATS=1" || fail "-s did not set FSAIO_STATS"
echo "$o" | grep -qx "LD_PRELOAD=$FSAIO_SHIM:/lib/x86_64-linux-gnu/libc.so.6" ||
	fail "the drop-in is not first in LD_PRELOAD, before the caller's: $(echo "$o" | grep LD_PRELOAD)"
o=$(env -u LD_PRELOAD -u FSAIO_WORKERS -u FSAIO_STATS -u FSAIO_BACKEND "$run" -- env)
echo "$o" | grep -qx "LD_PRELOAD=$FSAIO_SHIM" || fail "LD_PRELOAD without a caller's value"
echo "$o" | grep -q "^FSAIO_WORKERS=\|^FSAIO_STATS=\|^FSAIO_BACKEND=" &&
	fail "no option given, yet the environment was changed"
o=$(env -u LD_PRELOAD "$run" --workers 0007 --backend uring --stats env)
echo "$o" | grep -qx "FSAIO_WORKERS=7" || fail "--workers 0007 did not set FSAIO_WORKERS=7"
echo "$o" | grep -qx "FSAIO_BACKEND=uring" || fail "--backend uring did not set FSAIO_BACKEND"
echo "$o" | grep -qx "FSAIO_STATS=1" || fail "--stats did not set FSAIO_STATS"
o=$(env -u LD_PRELOAD "$run" --workers=1024 -bthreads env)
echo "$o" | grep -qx "FSAIO_WORKERS=1024" || fail "--workers=1024 refused or not set"
echo "$o" | grep -qx "FSAIO_BACKEND=threads" || fail "-bthreads did not set FSAIO_BACKEND"
o=$(env -u LD_PRELOAD "$run" -b auto env)
echo "$o" | grep -qx "FSAIO_BACKEND=auto" || fail "-b auto did not set FSAIO_BACKEND"

# -P adds the POSIX AIO drop-in after the libaio one, before the caller's.
o=$(LD_PRELOAD=/lib/x86_64-linux-gnu/libc.so.6 FSAIO_POSIX_SHIM="$posix_shim" "$run" -P env)
echo "$o" | grep -qx "LD_PRELOAD=$FSAIO_SHIM:$posix_shim:/lib/x86_64-linux-gnu/libc.so.6" ||
	fail "-P: $(echo "$o" | grep LD_PRELOAD)"
o=$(env -u LD_PRELOAD FSAIO_POSIX_SHIM="$posix_shim" "$run" --posix-aio -s env)
echo "$o" | grep -qx "LD_PRELOAD=$FSAIO_SHIM:$posix_shim" || fail "--posix-aio: $(echo "$o" | grep LD_PRELOAD)"
echo "$o" | grep -qx "FSAIO_STATS=1" || fail "--posix-aio -s did not set FSAIO_STATS"
o=$(env -u LD_PRELOAD FSAIO_POSIX_SHIM="$posix_shim" "$run" -sP env)
echo "$o" | grep -qx "LD_PRELOAD=$FSAIO_SHIM:$posix_shim" || fail "-sP: no POSIX drop-in"
echo "$o" | grep -qx "FSAIO_STATS=1" || fail "-sP: no FSAIO_STATS"
expect 125 "fsaio-run: cannot read the POSIX AIO drop-in /nonexistent.so" \
	env FSAIO_POSIX_SHIM=/nonexistent.so "$run" -P true

# Told nothing, the build tree's copy preloads the drop-ins built beside it.
built=$(dirname -- "$FSAIO_SHIM")
o=$(env -u LD_PRELOAD -u FSAIO_SHIM -u FSAIO_POSIX_SHIM "$run" env)
echo "$o" | grep -qx "LD_PRELOAD=$built/libfsaio-libaio.so" ||
	fail "the build tree's fsaio-run does not preload $built/libfsaio-libaio.so: $(echo "$o" | grep LD_PRELOAD)"
if [ -r "$built/libfsaio-posixaio.so" ]; then
	o=$(env -u LD_PRELOAD -u FSAIO_SHIM -u FSAIO_POSIX_SHIM "$run" -P env)
	echo "$o" | grep -qx "LD_PRELOAD=$built/libfsaio-libaio.so:$built/libfsaio-posixaio.so" ||
		fail "the build tree's fsaio-run -P: $(echo "$o" | grep LD_PRELOAD)"
fi

# --help: usage and every option on stdout, nothing on stderr, exit 0.
rc=0
"$run" --help >"$out" 2>"$err" || rc=$?
[ "$rc" = 0 ] || fail "--help exit $rc"
[ ! -s "$err" ] || fail "--help wrote to stderr"
head -n 1 "$out" | grep -q "^Usage: fsaio-run " || fail "--help does not start with the usage"
for opt in "-w, --workers" "-b, --backend" "-s, --stats" "-P, --posix-aio" "-h, --help" "--version" \
	FSAIO_SHIM FSAIO_POSIX_SHIM 125 126 127; do
	grep -q -e "$opt" "$out" || fail "--help does not explain $opt"
done
"$run" -h | cmp -s - "$out" || fail "-h differs from --help"

# --version: one line on stdout, exit 0.
o=$("$run" --version) || fail "--version exit $?"
[ "$o" = "fsaio-run (libfsaio) $version" ] || fail "--version printed '$o'"

# fsaio-run's own errors: 125 and one line.
expect 125 "fsaio-run: -w: 'abc' is not a number of workers (1 to 1024)" "$run" -w abc true
expect 125 "fsaio-run: -w: '0' is not a number of workers (1 to 1024)" "$run" -w 0 true
expect 125 "fsaio-run: -w: '-3' is not a number of workers (1 to 1024)" "$run" -w -3 true
expect 125 "fsaio-run: --workers: '1025' is not a number of workers (1 to 1024)" "$run" --workers=1025 true
expect 125 "fsaio-run: -w: '99999999999999999999' is not a number of workers (1 to 1024)" \
	"$run" -w 99999999999999999999 true
expect 125 "fsaio-run: option '-w' needs a value" "$run" -w
expect 125 "fsaio-run: -b: 'fast' is not a backend (auto, threads or uring)" "$run" -b fast true
expect 125 "fsaio-run: option '--backend' needs a value" "$run" --backend
expect 125 "fsaio-run: invalid option '-x' (see fsaio-run --help)" "$run" -x true
expect 125 "fsaio-run: unrecognized option '--frobnicate' (see fsaio-run --help)" "$run" --frobnicate true
expect 125 "fsaio-run: no program given (see fsaio-run --help)" "$run"
expect 125 "fsaio-run: no program given (see fsaio-run --help)" "$run" -s --
expect 125 "fsaio-run: cannot read the libaio drop-in /nonexistent.so" env FSAIO_SHIM=/nonexistent.so "$run" true

# The program: not found 127, found but not runnable 126.
expect 127 "fsaio-run: fsaio-no-such-program: command not found" "$run" fsaio-no-such-program
expect 127 "fsaio-run: $dir/missing: No such file or directory" "$run" "$dir/missing"
printf 'echo should not run\n' >"$dir/noexec"
chmod 644 "$dir/noexec"
expect 126 "fsaio-run: $dir/noexec: Permission denied" "$run" "$dir/noexec"
expect 126 "fsaio-run: $dir: Is a directory" "$run" "$dir"
# Looked up along PATH as exec does: a non-executable file there is 126,
# an executable one later in PATH wins over it.
mkdir "$dir/bin1" "$dir/bin2"
cp "$dir/noexec" "$dir/bin1/fsaio-test-prog"
expect 126 "fsaio-run: fsaio-test-prog: Permission denied" env PATH="$dir/bin1" "$run" fsaio-test-prog
printf '#!/bin/sh\necho ran "$@"\n' >"$dir/bin2/fsaio-test-prog"
chmod 755 "$dir/bin2/fsaio-test-prog"
o=$(PATH="$dir/bin1:$dir/bin2:$PATH" "$run" fsaio-test-prog a b) || fail "PATH lookup: exit $?"
[ "$o" = "ran a b" ] || fail "PATH lookup ran '$o'"
# A shell builtin that is no program is not found either.
expect 127 "fsaio-run: cd: command not found" "$run" cd /

# The exit status is the program's, even where it looks like fsaio-run's own.
for st in 0 1 7 125 126 127; do
	rc=0
	"$run" sh -c "exit $st" || rc=$?
	[ "$rc" = "$st" ] || fail "exit status $st came back as $rc"
done
# Options after the program are the program's.
o=$("$run" echo -w abc --help) || fail "options after PROGRAM were parsed"
[ "$o" = "-w abc --help" ] || fail "PROGRAM's arguments changed: '$o'"

# A real libaio program under the wrapper is served by the drop-in (its own
# check compares T_AIO_MODE with where io_submit comes from).
T_AIO_MODE=shim "$run" "$abi_test" >/dev/null 2>&1 || fail "the ABI tests fail under fsaio-run"
T_AIO_MODE=shim env -u FSAIO_SHIM -u FSAIO_POSIX_SHIM "$run" "$abi_test" >/dev/null 2>&1 ||
	fail "the ABI tests fail under the build tree's fsaio-run, told nothing"
echo "fsaio-run: ok"

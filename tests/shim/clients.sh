#!/bin/bash
# SPDX-License-Identifier: MIT
# Real programs that reach the io_* system calls through syscall(2), on the
# drop-in (fsaio-run), with their own checks:
#   stress-ng  stress-ng --aiol 2 --aiol-requests 64 --verify -t 10
#   ioping     ioping -A -c 20 on a buffered file (its cache dropped before
#              each request: cold data)
# FSAIO_STATS shows the drop-in carried their requests (ioping: all 20 of
# them, in one context), and strace shows that none of their io_* system
# calls reached the kernel's AIO but those on a context nobody made (stress-ng
# tries bogus ones on purpose: the kernel answers them with EINVAL), while
# the kernel does serve them when the same program runs without the drop-in.
# Skips (77) when the program is absent.
#
#   clients.sh stress-ng|ioping FSAIO_RUN WORKDIR
# env: FSAIO_SHIM (the library fsaio-run preloads), T_ASAN_PRELOAD (the
# sanitizer runtime to load first in ASan builds).
set -euo pipefail

prog=$1
run=$2
dir=$3/clients-$prog.$$
mkdir -p "$dir"
trap 'rm -rf "$dir"' EXIT

command -v "$prog" >/dev/null || { echo "SKIP: $prog is not installed (Debian package $prog)"; exit 77; }

fail() {
	echo "FAIL: $prog: $*"
	for f in "$dir"/log "$dir"/trace; do
		[ -s "$f" ] && { echo "--- $f"; tail -n 40 "$f"; }
	done
	exit 1
}

# strace with a filter on the AIO system calls only (cheap for the rest);
# without strace, run the program alone and say so.
aio_calls=io_setup,io_destroy,io_submit,io_cancel,io_getevents,io_pgetevents
traced() {
	if command -v strace >/dev/null; then
		rm -f "$dir"/trace*
		strace -ff -qq --seccomp-bpf -e trace=$aio_calls -e signal=none -o "$dir/trace" "$@"
		cat "$dir"/trace.* >"$dir/trace" 2>/dev/null || : >"$dir/trace"
	else
		: >"$dir/trace"
		"$@"
	fi
}

dropin() {
	if [ -n "${T_ASAN_PRELOAD:-}" ]; then
		traced env LD_PRELOAD="$T_ASAN_PRELOAD:$FSAIO_SHIM" \
			ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0 FSAIO_STATS=1 "$@"
	else
		traced "$run" -s "$@"
	fi
}

# The io_* calls the kernel's AIO served (any answer but EINVAL, which is
# its answer to a context it does not know).
kernel_calls() {
	grep -E "^io_[a-z]+\(" "$dir/trace" | grep -c -v "= -1 EINVAL " || true
}

stats_lines() {
	grep -E "^fsaio: io_context [^:]*: requests " "$dir/log" || true
}

case $prog in
stress-ng)
	args=(--aiol 2 --aiol-requests 64 --verify --temp-path "$dir" --metrics-brief)
	# The control: on the kernel, strace sees the program's AIO calls.
	if command -v strace >/dev/null; then
		traced stress-ng "${args[@]}" -t 2 >"$dir/log" 2>&1 || fail "exit $? on the kernel"
		[ "$(kernel_calls)" -gt 0 ] || fail "the kernel served no io_* call: the check below could not fail"
	fi
	rc=0
	dropin stress-ng "${args[@]}" -t 10 >"$dir/log" 2>&1 || rc=$?
	[ "$rc" = 0 ] || fail "exit $rc on the drop-in"
	grep -q "successful run completed" "$dir/log" || fail "no successful run"
	! grep -q ": fail:" "$dir/log" || fail "stress-ng reports a failure"
	lines=$(stats_lines)
	# One context per worker, each with requests.
	[ "$(echo "$lines" | grep -c "requests [1-9]")" -ge 2 ] || fail "no FSAIO_STATS line with requests per worker"
	! echo "$lines" | grep -q "requests 0," || fail "a context carried no request"
	;;
ioping)
	args=(-A -c 20 -i 0 "$dir")
	if command -v strace >/dev/null; then
		traced ioping "${args[@]}" >"$dir/log" 2>&1 || fail "exit $? on the kernel"
		[ "$(kernel_calls)" -gt 0 ] || fail "the kernel served no io_* call: the check below could not fail"
	fi
	rc=0
	dropin ioping "${args[@]}" >"$dir/log" 2>&1 || rc=$?
	[ "$rc" = 0 ] || fail "exit $rc on the drop-in"
	grep -q "^generated 20 requests" "$dir/log" || fail "ioping did not make its 20 requests"
	lines=$(stats_lines)
	[ "$(echo "$lines" | grep -c .)" = 1 ] || fail "want one FSAIO_STATS line (one context)"
	echo "$lines" | grep -q ": requests 20," || fail "the drop-in did not carry all 20 requests"
	;;
*)
	echo "usage: clients.sh stress-ng|ioping FSAIO_RUN WORKDIR" >&2
	exit 2
	;;
esac
[ "$(kernel_calls)" = 0 ] || fail "$(kernel_calls) io_* system calls were served by the kernel's AIO"
echo "$prog on the drop-in:"
echo "$lines"

#!/bin/sh
# SPDX-License-Identifier: MIT
# fsaio-run: the wrapper's options and environment, and a libaio program
# run through it really gets the shim.
#   fsaio_run.sh FSAIO_RUN SHIM_TEST_ABI
set -eu
run=$1
abi_test=$2
fail() { echo "FAIL: $*"; exit 1; }

out=$(LD_PRELOAD=/lib/x86_64-linux-gnu/libc.so.6 "$run" -w 3 -s env)
echo "$out" | grep -qx "FSAIO_WORKERS=3" || fail "-w 3 did not set FSAIO_WORKERS"
echo "$out" | grep -qx "FSAIO_STATS=1" || fail "-s did not set FSAIO_STATS"
echo "$out" | grep -qx "LD_PRELOAD=$FSAIO_SHIM:/lib/x86_64-linux-gnu/libc.so.6" ||
	fail "the shim is not first in LD_PRELOAD, before the caller's: $(echo "$out" | grep LD_PRELOAD)"
out=$(env -u LD_PRELOAD "$run" -- env)
echo "$out" | grep -qx "LD_PRELOAD=$FSAIO_SHIM" || fail "LD_PRELOAD without a caller's value"
if "$run" >/dev/null 2>&1; then fail "no program must be a usage error"; fi
if "$run" -x true >/dev/null 2>&1; then fail "an unknown option must be a usage error"; fi
if FSAIO_SHIM=/nonexistent.so "$run" true 2>/dev/null; then fail "a missing library must fail"; fi
# The exit status is the program's.
set +e
"$run" sh -c 'exit 7'
[ $? = 7 ] || fail "exit status not passed through"
set -e
# A real libaio program under the wrapper is served by the shim (its own
# check compares T_AIO_MODE with where io_submit comes from).
T_AIO_MODE=shim "$run" "$abi_test" >/dev/null 2>&1 || fail "the ABI tests fail under fsaio-run"
echo "fsaio-run: ok"

#!/bin/bash
# SPDX-License-Identifier: MIT
# Real POSIX AIO programs through the drop-in (fsaio-run -P): stress-ng's
# aio stressor with verification, and fio's posixaio engine writing with
# crc32c and verifying a cold read-back of a buffered file. Fails on any
# program error or verify error, and if the drop-in did not serve them.
#
#   real_programs.sh FSAIO_RUN WORKDIR
# env: FSAIO_SHIM, FSAIO_POSIX_SHIM (what fsaio-run preloads),
#      T_ASAN_PRELOAD (the sanitizer runtime to load first in ASan builds).
set -eu

run=$1
dir=$2/real-programs.$$
mkdir -p "$dir"
trap 'rm -rf "$dir"' EXIT

dropin() {
	if [ -n "${T_ASAN_PRELOAD:-}" ]; then
		LD_PRELOAD="$T_ASAN_PRELOAD:$FSAIO_POSIX_SHIM" ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0 \
			"$@"
	else
		"$run" -P "$@"
	fi
}

# Its processes leave with _exit (no exit-time counters): the dynamic
# linker's bindings (LD_DEBUG_OUTPUT=$dir/ld) show who served SYMBOL:
# "N M", N processes bound to the drop-in, M to glibc.
bound() {
	n=$(grep -l "libfsaio-posixaio.*normal symbol .$1'" "$dir"/ld.* | wc -l || true)
	others=$(grep -l "libc.so.6.*normal symbol .$1'" "$dir"/ld.* | wc -l || true)
	rm -f "$dir"/ld.*
	echo "$n $others"
}

# fsaio-run -P puts both drop-ins first in LD_PRELOAD; a bad path fails.
# (Not in ASan builds: env and true would load ASan-built libraries.)
if [ -z "${T_ASAN_PRELOAD:-}" ]; then
	out=$(LD_PRELOAD= "$run" -P env | grep '^LD_PRELOAD=')
	[ "$out" = "LD_PRELOAD=$FSAIO_SHIM:$FSAIO_POSIX_SHIM" ] || { echo "fsaio-run -P: $out"; exit 1; }
	out=$(LD_PRELOAD= "$run" --posix-aio env | grep '^LD_PRELOAD=')
	[ "$out" = "LD_PRELOAD=$FSAIO_SHIM:$FSAIO_POSIX_SHIM" ] || { echo "fsaio-run --posix-aio: $out"; exit 1; }
	if FSAIO_POSIX_SHIM=/nonexistent.so "$run" -P true 2>/dev/null; then
		echo "fsaio-run -P with a missing library must fail"; exit 1
	fi
fi

if command -v stress-ng >/dev/null; then
	echo "== stress-ng --aio, verified"
	LD_DEBUG=bindings LD_DEBUG_OUTPUT="$dir/ld" \
	dropin stress-ng --aio 2 --aio-ops 20000 --aio-requests 32 --verify --temp-path "$dir" \
		--metrics-brief 2>"$dir/s.err" >"$dir/s.out" || { cat "$dir/s.out" "$dir/s.err"; exit 1; }
	grep -h "aio " "$dir/s.out" "$dir/s.err" | grep -v dispatching || true
	if grep -qiE "fail|error" "$dir/s.out" "$dir/s.err"; then
		cat "$dir/s.out" "$dir/s.err"; exit 1
	fi
	read -r n others < <(bound aio_read64)
	echo "aio_read64 bound to the drop-in in $n process(es), to glibc in $others"
	[ "$n" -ge 1 ] && [ "$others" = 0 ] || { echo "the drop-in did not serve stress-ng"; exit 1; }
else
	echo "stress-ng not installed: its part is skipped"
fi

fio=$(command -v fio || true)
if [ -z "$fio" ]; then
	echo "fio not installed: its part is skipped"
	exit 0
fi
file=$dir/data
common=(--name=verify --filename="$file" --size=64m --ioengine=posixaio --direct=0
	--iodepth=32 --rw=randwrite --bssplit=4k/50:16k/30:64k/20 --verify=crc32c
	--verify_fatal=1 --randrepeat=1 --randseed=4243 --output-format=json)

. "$(dirname "$0")/../lib.sh"

echo "== fio posixaio: randwrite 4k/16k/64k, crc32c, verified after writing"
LD_DEBUG=bindings LD_DEBUG_OUTPUT="$dir/ld" \
dropin "$fio" "${common[@]}" --do_verify=1 --end_fsync=1 --output="$dir/w.json" 2>"$dir/w.err" ||
	{ cat "$dir/w.json" "$dir/w.err"; exit 1; }
read -r rb wb < <(check_json "$dir/w.json")
read -r n others < <(bound aio_write64)
echo "wrote $wb bytes, verified $rb bytes; aio_write64 bound to the drop-in in $n process(es), to glibc in $others"
[ "$wb" -ge $((64 << 20)) ] && [ "$rb" -ge $((64 << 20)) ] || { echo "too little I/O"; exit 1; }
[ "$n" -ge 1 ] && [ "$others" = 0 ] || { echo "the drop-in did not serve fio"; exit 1; }

sync "$file"
dd if=/dev/null of="$file" oflag=nocache conv=notrunc,fdatasync count=0 status=none
echo "== fio posixaio: cold read-back verify"
LD_DEBUG=bindings LD_DEBUG_OUTPUT="$dir/ld" \
dropin "$fio" "${common[@]}" --verify_only=1 --output="$dir/r.json" 2>"$dir/r.err" ||
	{ cat "$dir/r.json" "$dir/r.err"; exit 1; }
read -r rb wb < <(check_json "$dir/r.json")
read -r n others < <(bound aio_read64)
echo "verified $rb bytes; aio_read64 bound to the drop-in in $n process(es), to glibc in $others"
[ "$rb" -ge $((64 << 20)) ] || { echo "verified too little"; exit 1; }
[ "$n" -ge 1 ] && [ "$others" = 0 ] || { echo "the drop-in did not serve fio"; exit 1; }
echo "real programs: ok"

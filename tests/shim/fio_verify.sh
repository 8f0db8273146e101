#!/bin/bash
# SPDX-License-Identifier: MIT
# fio through the libaio shim, buffered: random writes of mixed sizes with
# crc32c verification, then cold read-back verify passes (io_getevents and
# fio's userspace ring reaping). Fails on any fio error or verify error,
# and if the shim was not what served the I/O.
#
#   fio_verify.sh FIO FSAIO_RUN WORKDIR
# env: FSAIO_SHIM (the library fsaio-run preloads), T_ASAN_PRELOAD (the
# sanitizer runtime to load first in ASan builds).
set -euo pipefail

fio=$1
run=$2
dir=$3/fio-verify.$$
mkdir -p "$dir"
file=$dir/data
trap 'rm -rf "$dir"' EXIT

common=(--name=verify --filename="$file" --size=96m --ioengine=libaio --direct=0
	--iodepth=32 --iodepth_batch_submit=4 --rw=randwrite
	--bssplit=4k/40:16k/30:64k/20:256k/10 --verify=crc32c --verify_fatal=1
	--randrepeat=1 --randseed=4242 --output-format=json)

shimmed() {
	if [ -n "${T_ASAN_PRELOAD:-}" ]; then
		LD_PRELOAD="$T_ASAN_PRELOAD:$FSAIO_SHIM" ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0 \
			FSAIO_STATS=1 "$@"
	else
		FSAIO_STATS=1 "$run" "$@"
	fi
}

. "$(dirname "$0")/../lib.sh"

# What the shim's engine reported at io_destroy: "requests N" and "queued N".
stat_of() {
	grep -o "$2 [0-9]*" "$1" | head -1 | awk '{print $NF}'
}

make_cold() {
	sync "$file"
	dd if=/dev/null of="$file" oflag=nocache conv=notrunc,fdatasync count=0 status=none
	if command -v fincore >/dev/null; then
		res=$(fincore --bytes --noheadings --output RES "$file" | tr -d ' ')
		[ "$res" = 0 ] || { echo "file still cached: $res bytes"; exit 1; }
	fi
}

echo "== write pass: randwrite 4k/16k/64k/256k, crc32c, verified after writing"
shimmed "$fio" "${common[@]}" --do_verify=1 --end_fsync=1 --output="$dir/w.json" 2>"$dir/w.err" ||
	{ cat "$dir/w.json" "$dir/w.err"; exit 1; }
read -r rb wb < <(check_json "$dir/w.json")
echo "wrote $wb bytes, verified $rb bytes"
[ "$wb" -ge $((96 << 20)) ] || { echo "wrote too little"; exit 1; }
[ "$rb" -ge $((96 << 20)) ] || { echo "verified too little"; exit 1; }
req=$(stat_of "$dir/w.err" requests)
echo "shim requests: $req"
[ "${req:-0}" -gt 0 ] || { echo "the shim did not serve fio"; cat "$dir/w.err"; exit 1; }

for mode in getevents userspace_reap; do
	extra=()
	[ $mode = userspace_reap ] && extra=(--userspace_reap=1 --iodepth_batch_complete_min=0)
	make_cold
	echo "== cold read-back verify ($mode)"
	shimmed "$fio" "${common[@]}" --verify_only=1 "${extra[@]}" --output="$dir/r.json" 2>"$dir/r.err" ||
		{ cat "$dir/r.json" "$dir/r.err"; exit 1; }
	read -r rb wb < <(check_json "$dir/r.json")
	echo "verified $rb bytes"
	[ "$rb" -ge $((96 << 20)) ] || { echo "verified too little"; exit 1; }
	req=$(stat_of "$dir/r.err" requests)
	queued=$(stat_of "$dir/r.err" queued)
	sqes=$(stat_of "$dir/r.err" "io_uring SQEs")
	echo "shim requests: $req, queued to workers: $queued, io_uring SQEs: $sqes"
	[ "${req:-0}" -gt 0 ] || { echo "the shim did not serve fio"; exit 1; }
	# Cold reads must have taken the asynchronous path: io_uring or workers.
	[ $(( ${queued:-0} + ${sqes:-0} )) -gt 0 ] || { echo "no request left the submitter"; exit 1; }
done

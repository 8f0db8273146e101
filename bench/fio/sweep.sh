#!/bin/bash
# SPDX-License-Identifier: MIT
# Cold random reads at queue depth 16 through fio's libaio engine on the
# libaio drop-in, beside fio's io_uring engine on the same buffered file, for
# read sizes from 4 KiB to 1 MiB: the drop-in's IOPS and CPU per I/O over
# io_uring's at each size.
#
# Each size runs its pair ROUNDS times, in the order A B B A ... (A the
# drop-in, B io_uring), from a cold cache each time (the file's pages
# dropped with POSIX_FADV_DONTNEED), after one io_uring run that is not
# counted: on a VM whose host caches its disk, the first run to read a
# size's blocks was the slow one, whichever side it was. fio's random map
# reads every block at most once and fadvise_hint makes it
# POSIX_FADV_RANDOM, so each run stays cold to its end. CPU is the whole
# fio process's task-clock (perf stat), per I/O.
#
# The ratios are of the sums, so a slow minute of the device weighs on both
# sides alike. A run that one side had alone in a slow minute (this host's
# runs of one build move up to 4x) weighs on that side only: the last
# column, the ratio of the median runs' IOPS, does not follow it; RUNS
# shows which run it was.
#
#   sweep.sh [-f FILE] [-b BUILD] [-n ROUNDS] [-s SIZES] [-o RUNS]
# FILE (default ./fsaio-sweep-4g.dat) is laid out at 4 GiB if absent, on
# disk, not tmpfs; BUILD is the build tree (default ../../build beside this
# script); ROUNDS (default 2) pairs per size; SIZES a comma-separated list
# (default 4k,16k,64k,256k,1m). Each run reads min(1 GiB x size/4k, 4 GiB).
# RUNS, if given, gets every run's line (size, A for the drop-in or B for
# io_uring, I/Os, ms, CPU ms): a sum that one slow run dominates shows there.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh"
file=./fsaio-sweep-4g.dat
build=$here/../../build
rounds=2
sizes=4k,16k,64k,256k,1m
runs=/dev/null
bench_opts "f:file b:build n:rounds s:sizes o:runs" "$@"
run=$build/dropin/fsaio-run
bench_have "build the tree, or use -b" "$run"
bench_need fio perf numfmt
case $rounds in '' | *[!0-9]* | 0) bench_usage ;; esac

if [ "$(stat -c %s "$file" 2>/dev/null || echo 0)" != $((4 << 30)) ]; then
	echo "sweep.sh: laying out $file (4 GiB)" >&2
	fio --name=layout --filename="$file" --size=4g --rw=write --bs=1m --ioengine=psync \
		--end_fsync=1 >/dev/null
fi

# one ENGINE BS BYTES [PREFIX...]: "IOPS CPU-ms" of one cold run
one() {
	local engine=$1 bs=$2 bytes=$3 out
	shift 3
	out=$(mktemp)
	dd if=/dev/null of="$file" oflag=nocache conv=notrunc,fdatasync count=0 status=none
	"$@" perf stat -x, -e task-clock -o "$out.perf" \
		fio --name=sweep --filename="$file" --size=4g --io_size="$bytes" --rw=randread \
		--bs="$bs" --ioengine="$engine" --iodepth=16 --direct=0 --invalidate=0 \
		--fadvise_hint=1 --randrepeat=1 --output-format=json --output="$out" >/dev/null
	python3 - "$out" <<-'PY'
	import json, sys
	t = open(sys.argv[1]).read()
	rd = json.loads(t[t.index("{"):])["jobs"][0]["read"]
	cpu = [float(l.split(",")[0]) for l in open(sys.argv[1] + ".perf") if "task-clock" in l][0]
	print(rd["total_ios"], rd["runtime"], cpu)
	PY
	rm -f "$out" "$out.perf"
}

echo "sweep.sh: $(date -u +%FT%TZ), load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf "%-6s %10s %10s %8s %10s %10s %8s %8s\n" size "drop-in" io_uring "IOPS" "dropin us" "uring us" "CPU/IO" \
	"median"
for bs in ${sizes//,/ }; do
	b=$(numfmt --from=iec "${bs^^}")
	bytes=$(( (1 << 30) / 4096 * b ))
	[ "$bytes" -le $((4 << 30)) ] || bytes=$((4 << 30))
	: >"/tmp/sweep.$$"
	# One run not counted: a host that caches the guest's disk then holds
	# this size's blocks for the first counted run as for the others.
	one io_uring "$bs" "$bytes" >/dev/null
	for ((i = 0; i < rounds; i++)); do
		if ((i % 2)); then order="io_uring libaio"; else order="libaio io_uring"; fi
		for e in $order; do
			if [ "$e" = libaio ]; then
				echo "A $(one libaio "$bs" "$bytes" "$run")" >>"/tmp/sweep.$$"
			else
				echo "B $(one io_uring "$bs" "$bytes")" >>"/tmp/sweep.$$"
			fi
		done
	done
	sed "s/^/$bs /" "/tmp/sweep.$$" >>"$runs"
	awk -v bs="$bs" '
		function median(side,    i, j, t, n, v) {
			n = 0
			for (i = 1; i <= nr; i++)
				if (run_side[i] == side)
					v[++n] = run_iops[i]
			for (i = 2; i <= n; i++)
				for (j = i; j > 1 && v[j - 1] > v[j]; j--) {
					t = v[j]; v[j] = v[j - 1]; v[j - 1] = t
				}
			return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
		}
		{ ios[$1] += $2; ms[$1] += $3; cpu[$1] += $4
		  nr++; run_side[nr] = $1; run_iops[nr] = $2 * 1000 / $3 }
		END {
			ia = ios["A"] * 1000 / ms["A"]; ib = ios["B"] * 1000 / ms["B"]
			ca = cpu["A"] * 1000 / ios["A"]; cb = cpu["B"] * 1000 / ios["B"]
			printf "%-6s %10.0f %10.0f %7.2fx %10.2f %10.2f %7.2fx %7.2fx\n", bs, ia, ib, ia / ib, ca, cb,
			       ca / cb, median("A") / median("B")
		}' "/tmp/sweep.$$"
	rm -f "/tmp/sweep.$$"
done
echo "sweep.sh: done $(date -u +%FT%TZ), load average $(cut -d' ' -f1-3 /proc/loadavg)"

#!/bin/bash
# SPDX-License-Identifier: MIT
# The libaio drop-in under fio: 4 KiB random reads, queue depth 32, on a 1 GiB
# file, cold and hot, through
#   shim      fio --ioengine=libaio --direct=0 under fsaio-run (libfsaio-libaio.so)
#   kaio-dio  fio --ioengine=libaio --direct=1 (kernel AIO, O_DIRECT)
#   kaio-buf  fio --ioengine=libaio --direct=0 (kernel AIO on the buffered file)
#   uring-buf fio --ioengine=io_uring --direct=0
#   psync     fio --ioengine=psync (one thread, pread)
# plus the p99 submission latency (fio's slat: the io_submit call) of cold
# buffered reads through the shim and through the kernel. Prints a table,
# the drop-in's goals as ratios, and writes every fio JSON next to the data
# file.
#
#   run.sh [-f FILE] [-s SHIM.so] [-r HOT_SECONDS] [-n REPEATS]
# FILE defaults to ./fsaio-fio-1g.dat (on disk, not tmpfs); SHIM to the
# build tree's lib/libfsaio-libaio.so or the installed one. Needs root
# for nothing: the cache is dropped per file with POSIX_FADV_DONTNEED.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh"
file=./fsaio-fio-1g.dat
shim=
hot_runtime=10
repeats=1
bench_opts "f:file s:shim r:hot_runtime n:repeats" "$@"
if [ -z "$shim" ]; then
	for c in "$here/../../build/dropin/libfsaio-libaio.so" \
		 "$here/../../build-shim/dropin/libfsaio-libaio.so" \
		 /usr/local/lib/x86_64-linux-gnu/libfsaio-libaio.so /usr/lib/x86_64-linux-gnu/libfsaio-libaio.so; do
		[ -r "$c" ] && { shim=$c; break; }
	done
fi
[ -r "$shim" ] || { echo "run.sh: no libfsaio-libaio.so (use -s)" >&2; exit 2; }
bench_need fio
out=$(dirname "$file")/fio-results.$$
mkdir -p "$out"

bench_layout "$file" "laying out $file (1 GiB)"

resident() {
	fincore --bytes --noheadings --output RES "$file" | tr -d ' '
}

make_cold() {
	sync "$file"
	dd if=/dev/null of="$file" oflag=nocache conv=notrunc,fdatasync count=0 status=none
	local r
	r=$(resident)
	[ "$r" = 0 ] || { echo "run.sh: $file still has $r bytes cached" >&2; exit 1; }
}

make_hot() {
	cat "$file" >/dev/null
	cat "$file" >/dev/null
	local r
	r=$(resident)
	[ "$r" = $((1 << 30)) ] || { echo "run.sh: only $r bytes of $file cached" >&2; exit 1; }
}

# run NAME PHASE ENGINE DIRECT DEPTH [wrapper...]
run() {
	local name=$1 phase=$2 engine=$3 direct=$4 depth=$5 i
	shift 5
	for ((i = 1; i <= repeats; i++)); do
		if [ "$phase" = cold ]; then make_cold; else make_hot; fi
		FIO_FILE=$file FIO_ENGINE=$engine FIO_DIRECT=$direct FIO_DEPTH=$depth \
		FIO_RUNTIME=$hot_runtime "$@" fio --output-format=json \
			--output="$out/$name-$phase-$i.json" "$here/randread-$phase.fio"
	done
}

shimrun=(env LD_PRELOAD="$shim" FSAIO_STATS=1)
for phase in cold hot; do
	echo "== $phase"
	run shim "$phase" libaio 0 32 "${shimrun[@]}" 2>"$out/shim-$phase.stderr"
	[ "$phase" = cold ] && run kaio-dio "$phase" libaio 1 32
	run kaio-buf "$phase" libaio 0 32
	run uring-buf "$phase" io_uring 0 32
	run psync "$phase" psync 0 1
done
grep -q "fsaio: io_context" "$out/shim-cold.stderr" ||
	{ echo "run.sh: the shim did not serve fio" >&2; exit 1; }

python3 - "$out" "$repeats" <<'PY'
import glob, json, os, statistics, sys
out, repeats = sys.argv[1], int(sys.argv[2])

def load(name, phase):
    iops, slat99, clat99 = [], [], []
    for i in range(1, repeats + 1):
        path = os.path.join(out, "%s-%s-%d.json" % (name, phase, i))
        if not os.path.exists(path):
            return None
        text = open(path).read()
        job = json.loads(text[text.index("{"):])["jobs"][0]
        rd = job["read"]
        iops.append(rd["iops"])
        slat99.append(rd["slat_ns"].get("percentile", {}).get("99.000000", 0) / 1000)
        clat99.append(rd["clat_ns"].get("percentile", {}).get("99.000000", 0) / 1000)
    return statistics.median(iops), statistics.median(slat99), statistics.median(clat99)

names = ["shim", "kaio-dio", "kaio-buf", "uring-buf", "psync"]
res = {}
print("\n%-10s %-5s %12s %14s %14s" % ("method", "cache", "IOPS", "slat p99 us", "clat p99 us"))
for phase in ["cold", "hot"]:
    for n in names:
        r = load(n, phase)
        if r:
            res[(n, phase)] = r
            print("%-10s %-5s %12.0f %14.1f %14.1f" % (n, phase, r[0], r[1], r[2]))

def ratio(a, b, want, what):
    x = res[a][0] / res[b][0]
    print("%-52s %5.2fx  (want >= %.1fx) %s" % (what, x, want, "ok" if x >= want else "MISSED"))

print("\nthe drop-in's goals (median of %d run%s):" % (repeats, "s" if repeats > 1 else ""))
ratio(("shim", "cold"), ("kaio-dio", "cold"), 0.9, "cold: shim / libaio O_DIRECT")
ratio(("shim", "cold"), ("kaio-buf", "cold"), 3.0, "cold: shim / libaio buffered")
ratio(("shim", "cold"), ("uring-buf", "cold"), 1.2, "cold: shim / io_uring buffered")
ratio(("shim", "hot"), ("uring-buf", "hot"), 1.2, "hot: shim / io_uring buffered")
ratio(("shim", "hot"), ("psync", "hot"), 0.8, "hot: shim / psync")
s, k = res[("shim", "cold")][1], res[("kaio-buf", "cold")][1]
print("%-52s %5.1f us vs %.1f us: %.3f (want <= 0.1) %s" % (
    "cold p99 io_submit latency, shim vs kernel", s, k, s / k, "ok" if s <= 0.1 * k else "MISSED"))
print("\nfio JSON and the shim's stats: %s" % out)
PY

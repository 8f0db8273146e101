#!/bin/bash
# SPDX-License-Identifier: MIT
# O_DIRECT through the libaio drop-in against the kernel's own AIO, and the
# drop-in's io_submit latency on cold buffered reads, kernel and drop-in
# side by side in one run. IOPS move with the machine's load, so the ratios
# are taken within the run, and each case runs in the order kernel, drop-in,
# drop-in, kernel (each half of the run), so that a change of load in the
# middle weighs on both alike:
#   fio         O_DIRECT 4 KiB random reads and writes, depth 32, ioengine=libaio
#   qemu-img    bench, aio=native cache.direct=on on a raw image, 4 KiB reads
#               and writes at depth 1 and 32
#   slat        fio's io_submit latency (slat p99): cold buffered 4 KiB random
#               reads through the drop-in against O_DIRECT ones on the kernel,
#               and fio's io_uring engine on the same buffered reads (what
#               submitting a cold buffered read costs the kernel's own
#               asynchronous path), in the order kernel, io_uring, drop-in,
#               drop-in, io_uring, kernel
# Each run is counted over the whole process with perf stat: CPU us, system
# calls, context switches per I/O, and io_submit / io_uring_enter calls,
# which show whose AIO served it (the drop-in makes no io_submit call).
#
#   direct.sh [-f FILE] [-s SHIM.so] [-r SECONDS]
# FILE defaults to ./fsaio-fio-1g.dat (on disk, not tmpfs); the raw image is
# fsaio-qemu-1g.raw beside it; both are laid out (1 GiB written) if missing.
# SECONDS is the fio time of each method in each case (10, in two halves).
# Needs fio, perf and qemu-img.

# shellcheck disable=SC2154 # file and shim: set by bench_fio_defaults (lib.sh)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh"
bench_fio_defaults
runtime=10
bench_opts "f:file s:shim r:runtime" "$@"
bench_have "use -s" "$shim"
bench_need perf fio qemu-img
shim=$(cd "$(dirname "$shim")" && pwd)/$(basename "$shim")
dir=$(dirname "$file")
image=$dir/fsaio-qemu-1g.raw
out=$dir/fio-direct.$$
mkdir -p "$out"

bench_layout "$file"
bench_layout "$image"

# Drop the file's pages: cold buffered reads need it, and O_DIRECT writes
# should not pay for invalidating cached pages in one run and not the other.
make_cold() {
	sync "$1"
	dd if=/dev/null of="$1" oflag=nocache conv=notrunc,fdatasync count=0 status=none
}

events=task-clock,context-switches,raw_syscalls:sys_enter
events=$events,syscalls:sys_enter_io_submit,syscalls:sys_enter_io_uring_enter
drop=(env LD_PRELOAD="$shim" FSAIO_STATS=1)

# fio_run NAME JOBFILE [wrapper...]; FIO_* set by the caller
fio_run() {
	local name=$1 job=$2
	shift 2
	make_cold "$file"
	FIO_FILE=$file FIO_RUNTIME=$half perf stat -x, -o "$out/$name.perf" -e "$events" \
		"$@" fio --output-format=json --output="$out/$name.json" "$job" 2>"$out/$name.err" >/dev/null
}

# qemu_run NAME COUNT DEPTH [-w] [wrapper...]
qemu_run() {
	local name=$1 count=$2 depth=$3 w=()
	shift 3
	if [ "${1:-}" = -w ]; then w=(-w); shift; fi
	make_cold "$image"
	perf stat -x, -o "$out/$name.perf" -e "$events" "$@" \
		qemu-img bench -f raw -t none -i native -c "$count" -d "$depth" -s 4096 "${w[@]}" "$image" \
		>"$out/$name.txt" 2>"$out/$name.err"
	echo "count $count" >>"$out/$name.txt"
}

half=$(( (runtime + 1) / 2 ))
# abba NAME RUN [ARG...]: RUN NAME-kernel-a ARG..., NAME-dropin-a ARG... drop-in,
# then the drop-in and the kernel again (-b).
abba() {
	local name=$1 run=$2
	shift 2
	"$run" "$name-kernel-a" "$@"
	"$run" "$name-dropin-a" "$@" "${drop[@]}"
	"$run" "$name-dropin-b" "$@" "${drop[@]}"
	"$run" "$name-kernel-b" "$@"
}

for rw in randread randwrite; do
	FIO_RW=$rw abba "fio-$rw" fio_run "$here/direct-rand.fio"
done

# Counts sized for a couple of seconds each (two halves) on the kernel's AIO.
for c in "read 1 20000" "write 1 10000" "read 32 150000" "write 32 150000"; do
	read -r op depth count <<<"$c"
	if [ "$op" = write ]; then
		abba "qemu-$op-d$depth" qemu_run "$count" "$depth" -w
	else
		abba "qemu-$op-d$depth" qemu_run "$count" "$depth"
	fi
done

# slat_run NAME [wrapper...]: the cold job (a fixed quarter of the file,
# read whole by each half): O_DIRECT on the kernel, buffered on the drop-in
# and on io_uring.
slat_run() {
	local name=$1 direct=0 engine=libaio
	shift
	case $name in
	*-kernel-*) direct=1 ;;
	*-uring-*) engine=io_uring ;;
	esac
	FIO_ENGINE=$engine FIO_DEPTH=32 FIO_DIRECT=$direct fio_run "$name" "$here/randread-cold.fio" "$@"
}
slat_run slat-kernel-a
slat_run slat-uring-a
slat_run slat-dropin-a "${drop[@]}"
slat_run slat-dropin-b "${drop[@]}"
slat_run slat-uring-b
slat_run slat-kernel-b

python3 - "$out" <<'PY'
import json, os, re, sys
out = sys.argv[1]
EVENTS = ("task-clock", "context-switches", "raw_syscalls:sys_enter",
          "syscalls:sys_enter_io_submit", "syscalls:sys_enter_io_uring_enter")

def perf(name):
    p = {}
    for line in open(os.path.join(out, name + ".perf")):
        f = line.strip().split(",")
        if len(f) > 2 and f[0].replace(".", "", 1).isdigit():
            p[f[2]] = float(f[0])
    return p

def fio(name):
    text = open(os.path.join(out, name + ".json")).read()
    job = json.loads(text[text.index("{"):])["jobs"][0]
    d = job["read"] if job["read"]["total_ios"] else job["write"]
    slat = d["slat_ns"].get("percentile", {}).get("99.000000", 0) / 1000
    return d["total_ios"], job["job_runtime"] / 1000, slat

def qemu(name):
    text = open(os.path.join(out, name + ".txt")).read()
    secs = float(re.search(r"Run completed in ([0-9.]+) seconds", text).group(1))
    return int(re.search(r"count (\d+)", text).group(1)), secs, None

# Both halves of one method: I/Os, time and counts summed; slat p99 the
# mean of the halves' p99.
def load(base, method, parse):
    ios = secs = 0
    slats, p = [], dict.fromkeys(EVENTS, 0.0)
    for half in "ab":
        name = "%s-%s-%s" % (base, method, half)
        n, t, slat = parse(name)
        ios, secs = ios + n, secs + t
        slats.append(slat)
        for k, v in perf(name).items():
            if k in p:
                p[k] += v
    return {"iops": ios / secs, "secs": secs, "cpu": p["task-clock"] * 1000 / ios,
            "sys": p["raw_syscalls:sys_enter"] / ios, "cs": p["context-switches"] / ios,
            "submit": p["syscalls:sys_enter_io_submit"] / ios,
            "enter": p["syscalls:sys_enter_io_uring_enter"] / ios,
            "slat99": None if slats[0] is None else sum(slats) / len(slats)}

cases = [("fio O_DIRECT 4k randread d32", "fio-randread", fio),
         ("fio O_DIRECT 4k randwrite d32", "fio-randwrite", fio),
         ("qemu-img O_DIRECT 4k read d1", "qemu-read-d1", qemu),
         ("qemu-img O_DIRECT 4k write d1", "qemu-write-d1", qemu),
         ("qemu-img O_DIRECT 4k read d32", "qemu-read-d32", qemu),
         ("qemu-img O_DIRECT 4k write d32", "qemu-write-d32", qemu),
         ("fio cold 4k randread d32", "slat", fio)]
hdr = "%-31s %-10s %8s %6s %9s %6s %6s %9s %8s %8s"
print(hdr % ("case", "method", "IOPS", "secs", "CPU us/IO", "sys/IO", "cs/IO",
             "submit/IO", "enter/IO", "slat p99"))
res, bad = {}, []
for label, base, parse in cases:
    for m in ("kernel", "dropin"):
        r = res[(base, m)] = load(base, m, parse)
        method = m if base != "slat" else {"kernel": "kernel-dio", "dropin": "dropin-buf"}[m]
        print(hdr % (label, method, "%.0f" % r["iops"], "%.2f" % r["secs"], "%.2f" % r["cpu"],
                     "%.2f" % r["sys"], "%.3f" % r["cs"], "%.2f" % r["submit"], "%.2f" % r["enter"],
                     "-" if r["slat99"] is None else "%.1fus" % r["slat99"]))
        # Whose AIO served it: the kernel's makes io_submit calls and no
        # io_uring_enter; the drop-in never calls io_submit.
        ok = (r["submit"] > 0 and r["enter"] == 0) if m == "kernel" else \
             (r["submit"] == 0 and r["enter"] > 0)
        if not ok:
            bad.append("%s %s: io_submit %.2f/IO, io_uring_enter %.2f/IO" % (
                label, m, r["submit"], r["enter"]))

print()
for label, base, _ in cases[:-1]:
    k, d = res[(base, "kernel")], res[(base, "dropin")]
    print("%s: drop-in / kernel AIO IOPS %.2fx (goal >= 0.95); CPU us/IO %.2fx, "
          "syscalls/IO %+.2f, switches/IO %+.3f" % (
          label, d["iops"] / k["iops"], d["cpu"] / k["cpu"], d["sys"] - k["sys"], d["cs"] - k["cs"]))
k, d = res[("slat", "kernel")], res[("slat", "dropin")]
u = load("slat", "uring", fio)
print(hdr % ("fio cold 4k randread d32", "uring-buf", "%.0f" % u["iops"], "%.2f" % u["secs"],
             "%.2f" % u["cpu"], "%.2f" % u["sys"], "%.3f" % u["cs"], "%.2f" % u["submit"],
             "%.2f" % u["enter"], "%.1fus" % u["slat99"]))
print("io_submit p99, cold 4k randread d32: drop-in buffered / kernel AIO O_DIRECT %.2fx "
      "(%.1f / %.1f us, goal <= 1.2); io_uring's own submission of the same buffered "
      "reads / kernel AIO O_DIRECT %.2fx (%.1f us); drop-in / io_uring %.2fx" % (
      d["slat99"] / k["slat99"], d["slat99"], k["slat99"], u["slat99"] / k["slat99"],
      u["slat99"], d["slat99"] / u["slat99"]))
print("\nfio JSON, qemu-img and perf output: %s" % out)
if bad:
    print("\nNOT served by the AIO named (LD_PRELOAD not taking effect?):\n  " + "\n  ".join(bad))
    sys.exit(1)
PY

#!/bin/bash
# SPDX-License-Identifier: MIT
# What a request costs, counted over the whole fio process with perf stat:
# CPU microseconds, system calls and context switches per I/O, beside IOPS,
# for 4 KiB random reads at depth 32 (cold and hot) and a cold block size
# of choice, through the libaio drop-in and through the paths it competes
# with; for hot reads also fio's libaio engine on the kernel's own AIO,
# which completes them inside io_submit, and on the least a libaio can do
# (build/bench/libfsaio-libaio-floor.so: pread inside io_submit, events
# handed back from memory), the floor of any libaio under fio's engine.
# Each figure is per I/O of what the I/O costs: a cold case is run once
# more with one block per slot (the null run), and its counts (fio's start,
# its layout check and random map, the library's setup: ~140 ms of CPU and
# ~2,300 system calls, ~2 us and 0.035 calls over the 65,536 reads of a
# cold run) are taken off before dividing; the hot runs have no ramp, so
# perf and fio count the same I/Os. The block size is written into a copy
# of the job file: fio's --bs before a job file is overridden by the
# job's own bs=.
# System calls per I/O do not depend on the machine's load; CPU time
# and switches per I/O (preemptions count) a little; IOPS a lot. So each
# case runs twice per method, in the order A B C C B A, and the two runs of
# a method are added up: a change of load during a case weighs on all.
#
#   cost.sh [-f FILE] [-s SHIM.so] [-b COLD_BS] [-d COLD_DEPTH] [-r HOT_SECONDS]
# FILE defaults to ./fsaio-fio-1g.dat (on disk, not tmpfs). Needs perf.

# shellcheck disable=SC2154 # file and shim: set by bench_fio_defaults (lib.sh)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh"
bench_fio_defaults
bs2=64k
depth2=16
hot_runtime=5
bench_opts "f:file s:shim b:bs2 d:depth2 r:hot_runtime" "$@"
bench_have "use -s" "$shim"
bench_need perf
out=$(dirname "$file")/fio-cost.$$
mkdir -p "$out"
bench_layout "$file"

make_cold() {
	sync "$file"
	dd if=/dev/null of="$file" oflag=nocache conv=notrunc,fdatasync count=0 status=none
}

make_hot() {
	cat "$file" >/dev/null
}

# one RUN NAME PHASE ENGINE DIRECT DEPTH BS [wrapper...]; RUN null: one
# block per slot, whose counts load() takes off the case's
one() {
	local run=$1 name=$2 phase=$3 engine=$4 direct=$5 depth=$6 bs=$7 job
	shift 7
	job=$out/$name-$phase.$run.fio
	sed -e "s/^bs=.*/bs=$bs/" -e "s/^ramp_time=.*/ramp_time=0/" \
		"$here/randread-${phase%%-*}.fio" >"$job"
	[ "$run" = null ] && sed -i "s/^io_size=.*/io_size=$((depth * $(numfmt --from=iec "${bs^^}")))/" "$job"
	if [ "$phase" = hot ]; then make_hot; else make_cold; fi
	FIO_FILE=$file FIO_ENGINE=$engine FIO_DIRECT=$direct FIO_DEPTH=$depth \
	FIO_RUNTIME=$hot_runtime perf stat -x, -o "$out/$name-$phase.$run.perf" \
		-e task-clock,context-switches,raw_syscalls:sys_enter \
		"$@" fio --output-format=json --output="$out/$name-$phase.$run.json" "$job" >/dev/null
}

drop=(env LD_PRELOAD="$shim")
floor_so=$(dirname "$shim")/../bench/libfsaio-libaio-floor.so
bench_have "build the tree first" "$floor_so"
floor=(env LD_PRELOAD="$(cd "$(dirname "$floor_so")" && pwd)/$(basename "$floor_so")")
# case PHASE BS DEPTH METHOD... (METHOD: name:engine:direct, dropin or floor)
case_abba() {
	local phase=$1 bs=$2 depth=$3 m
	shift 3
	local -a order=("$@")
	for ((i = ${#order[@]} - 1; i >= 0; i--)); do order+=("${order[i]}"); done
	local run=1 n=0
	[ "$phase" = hot ] || order+=("$@")
	for m in "${order[@]}"; do
		n=$((n + 1))
		[ $n -gt $# ] && run=2
		[ $n -gt $((2 * $#)) ] && run=null
		IFS=: read -r name engine direct <<<"$m"
		if [ "$name" = dropin ]; then
			one $run dropin "$phase" libaio 0 "$depth" "$bs" "${drop[@]}"
		elif [ "$name" = floor ]; then
			one $run floor "$phase" libaio 0 "$depth" "$bs" "${floor[@]}"
		else
			one $run "$name" "$phase" "$engine" "$direct" "$depth" "$bs"
		fi
	done
}
case_abba cold 4k 32 dropin uring-buf:io_uring:0 kaio-dio:libaio:1
case_abba "cold-$bs2" "$bs2" "$depth2" dropin uring-buf:io_uring:0 kaio-dio:libaio:1
case_abba hot 4k 32 dropin uring-buf:io_uring:0 kaio-buf:libaio:0 floor
one 1 psync hot psync 0 1 4k
one 2 psync hot psync 0 1 4k

python3 - "$out" "$bs2" <<'PY'
import json, os, sys
out, bs2 = sys.argv[1], sys.argv[2]

def load(name, phase):
    ios = ms = run_ios = 0
    perf = {}
    # The cold cases' null run counts twice, once per run it is taken from.
    runs = [(1, 1), (2, 1)] + ([] if phase == "hot" else [("null", -2)])
    for run, k in runs:
        text = open(os.path.join(out, "%s-%s.%s.json" % (name, phase, run))).read()
        rd = json.loads(text[text.index("{"):])["jobs"][0]["read"]
        ios += k * rd["total_ios"]
        if k > 0:
            ms += rd["runtime"]
            run_ios += rd["total_ios"]
        for line in open(os.path.join(out, "%s-%s.%s.perf" % (name, phase, run))):
            f = line.strip().split(",")
            if len(f) > 2 and f[0].replace(".", "", 1).isdigit():
                perf[f[2]] = perf.get(f[2], 0.0) + k * float(f[0])
    return {"iops": run_ios * 1000.0 / ms, "cpu": perf["task-clock"] * 1000 / ios,
            "sys": perf["raw_syscalls:sys_enter"] / ios, "cs": perf["context-switches"] / ios}

rows = [("dropin", "cold"), ("uring-buf", "cold"), ("kaio-dio", "cold"),
        ("dropin", "cold-" + bs2), ("uring-buf", "cold-" + bs2), ("kaio-dio", "cold-" + bs2),
        ("dropin", "hot"), ("uring-buf", "hot"), ("kaio-buf", "hot"), ("floor", "hot"),
        ("psync", "hot")]
res = {}
print("%-10s %-10s %10s %10s %10s %10s" % ("method", "case", "IOPS", "CPU us/IO", "sys/IO", "cs/IO"))
for n, p in rows:
    r = res[(n, p)] = load(n, p)
    print("%-10s %-10s %10.0f %10.2f %10.2f %10.3f" % (n, p, r["iops"], r["cpu"], r["sys"], r["cs"]))
d, u = res[("dropin", "cold")], res[("uring-buf", "cold")]
print("\ncold 4k: drop-in / io_uring buffered: CPU %.2fx (goal <= 1.10), syscalls %+.2f/IO (<= +0.3), "
      "switches %+.3f/IO (<= +0.03), IOPS %.2fx (>= 1.0); / O_DIRECT IOPS %.2fx (>= 0.9)" % (
      d["cpu"] / u["cpu"], d["sys"] - u["sys"], d["cs"] - u["cs"], d["iops"] / u["iops"],
      d["iops"] / res[("kaio-dio", "cold")]["iops"]))
d, u = res[("dropin", "cold-" + bs2)], res[("uring-buf", "cold-" + bs2)]
print("cold %s: drop-in / io_uring buffered: CPU %.2fx (goal <= 1.15), IOPS %.2fx" % (
      bs2, d["cpu"] / u["cpu"], d["iops"] / u["iops"]))
d, p, u = res[("dropin", "hot")], res[("psync", "hot")], res[("uring-buf", "hot")]
print("hot 4k: drop-in / psync: CPU %.2fx (goal <= 1.25), IOPS %.2fx (>= 0.9); / io_uring IOPS %.2fx (>= 1.0)" % (
      d["cpu"] / p["cpu"], d["iops"] / p["iops"], d["iops"] / u["iops"]))
# A libaio reference for hot reads against psync, and the drop-in against it.
def hot_ref(name, what):
    r = res[(name, "hot")]
    print("hot 4k, %s: / psync CPU %.2fx, IOPS %.2fx; drop-in / it: CPU %.2fx, IOPS %.2fx" % (
          what, r["cpu"] / p["cpu"], r["iops"] / p["iops"], d["cpu"] / r["cpu"], d["iops"] / r["iops"]))

hot_ref("kaio-buf", "the libaio API on the kernel itself (cached reads complete in io_submit)")
hot_ref("floor", "the least a libaio can do (pread in io_submit, events from memory)")
print("\nfio JSON and perf output: %s" % out)
PY

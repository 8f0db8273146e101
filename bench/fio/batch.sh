#!/bin/bash
# SPDX-License-Identifier: MIT
# Cached reads submitted in batches, through the libaio drop-in against the
# kernel's own AIO and io_uring: hot 4 KiB random reads on a 1 GiB file at
# depth 32, fio handing over and reaping BATCH requests per call (32 by
# default; 1 is fio's default, one request per call). Each method runs once
# per round, in an order that rotates from round to round; the kernel's AIO
# runs twice per round (kaio and kaio-again), so the spread of an A/A pair
# of one instrument is printed beside the ratios. Ratios are taken within
# each round, their medians over the rounds reported. CPU per I/O and
# system calls per I/O are perf stat's task-clock and raw_syscalls:sys_enter
# over the whole fio process, divided by the I/Os done (ramp included in
# both, so the count covers the process's whole life).
#
#   batch.sh [-f FILE] [-s SHIM.so] [-o OTHER.so] [-b BATCH] [-n ROUNDS] [-r SECONDS]
# FILE defaults to ./fsaio-fio-1g.dat (on disk, not tmpfs); 6 rounds of
# 3-second runs. OTHER.so, another build of the drop-in (an older one, to
# compare versions), joins the rounds as "other". Needs perf (and root, or perf_event_paranoid <= 1, for
# the system call count).

# shellcheck disable=SC2154 # file and shim: set by bench_fio_defaults (lib.sh)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh"
bench_fio_defaults
batch=32
rounds=6
runtime=3
other=
bench_opts "f:file s:shim o:other b:batch n:rounds r:runtime" "$@"
bench_have "build the tree, or use -s" "$shim"
bench_need perf fio
bench_layout "$file"
out=$(dirname "$file")/fio-batch.$$
mkdir -p "$out"
cat "$file" >/dev/null

# NAME:ENGINE:PRELOAD
methods=("dropin:libaio:$shim" "kaio:libaio:" "io_uring:io_uring:" "kaio-again:libaio:")
[ -z "$other" ] || methods+=("other:libaio:$other")
for ((r = 1; r <= rounds; r++)); do
	for ((k = 0; k < ${#methods[@]}; k++)); do
		IFS=: read -r name engine preload <<<"${methods[(k + r) % ${#methods[@]}]}"
		FIO_FILE=$file FIO_ENGINE=$engine FIO_BATCH=$batch FIO_RUNTIME=$runtime \
		perf stat -x, -e task-clock,raw_syscalls:sys_enter -o "$out/$name.$r.perf" \
			env LD_PRELOAD="$preload" fio --output-format=json \
			--output="$out/$name.$r.json" "$here/randread-batch.fio" >/dev/null
	done
done

python3 - "$out" "$rounds" "$batch" "$other" <<'PY'
import json, statistics, sys
out, rounds, batch, other = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
names = ["dropin", "kaio", "io_uring", "kaio-again"] + (["other"] if other else [])
R = range(1, rounds + 1)

def load(name, r):
    text = open("%s/%s.%d.json" % (out, name, r)).read()
    job = json.loads(text[text.index("{"):])["jobs"][0]
    rd = job["read"]
    # every I/O of the process, the ramp's too: what perf counted over
    ios = rd["total_ios"] + rd["iops"] * 1.0   # the 1 s ramp at the measured rate
    perf = {}
    for line in open("%s/%s.%d.perf" % (out, name, r)):
        f = line.split(",")
        if len(f) > 2 and f[2] in ("task-clock", "raw_syscalls:sys_enter"):
            perf[f[2]] = float(f[0])
    return (rd["iops"], perf["task-clock"] * 1000.0 / ios,
            perf.get("raw_syscalls:sys_enter", float("nan")) / ios)

res = {(n, r): load(n, r) for n in names for r in R}
med = statistics.median
print("hot 4k random reads, depth 32, batches of %s: medians of %d rounds" % (batch, rounds))
print("%-11s %12s %11s %12s" % ("method", "IOPS", "CPU us/IO", "syscalls/IO"))
for n in names:
    print("%-11s %12.0f %11.2f %12.3f" % (n, med([res[n, r][0] for r in R]),
          med([res[n, r][1] for r in R]), med([res[n, r][2] for r in R])))
def ratio(a, b, i):
    xs = [res[a, r][i] / res[b, r][i] for r in R]
    return med(xs), min(xs), max(xs)
def say(a, b, what, i):
    m, lo, hi = ratio(a, b, i)
    print("  %-22s %5.2fx  (rounds %.2f-%.2f)" % ("%s / %s %s" % (a, b, what), m, lo, hi))
print("\nratios within each round:")
say("dropin", "kaio", "IOPS", 0)
say("dropin", "io_uring", "IOPS", 0)
say("dropin", "kaio", "CPU/IO", 1)
say("kaio-again", "kaio", "IOPS", 0)
if other:
    say("dropin", "other", "IOPS", 0)
    say("dropin", "other", "CPU/IO", 1)
PY
echo "fio JSON and perf output: $out"

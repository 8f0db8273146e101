#!/bin/bash
# SPDX-License-Identifier: MIT
# Cached reads through the libaio drop-in against the paths it competes
# with, in rounds: hot 4 KiB random reads on a 1 GiB file, at depth 32 (psync
# at depth 1), each method once per round for a few seconds, in an order
# that rotates from round to round. Ratios to the drop-in are taken within
# each round and their medians over the rounds reported: where the machine's
# load moves from minute to minute, a ratio of runs seconds apart moves far
# less than any one run. CPU per I/O is perf stat's task-clock over the
# whole fio process divided by the I/Os done.
#
#   hot.sh [-f FILE] [-s SHIM.so] [-n ROUNDS] [-r SECONDS]
# FILE defaults to ./fsaio-fio-1g.dat (on disk, not tmpfs); 8 rounds of
# 3-second runs. Methods: the drop-in; fio's io_uring and psync engines;
# fio's libaio engine on the kernel's AIO, on the floor and on the contract
# floor (build/bench/libfsaio-libaio-floor.so and
# libfsaio-libaio-contract-floor.so, bench/README.md). Needs perf.

# shellcheck disable=SC2154 # file and shim: set by bench_fio_defaults (lib.sh)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh"
bench_fio_defaults
rounds=8
runtime=3
bench_opts "f:file s:shim n:rounds r:runtime" "$@"
floor=$(dirname "$shim")/../bench/libfsaio-libaio-floor.so
cfloor=$(dirname "$shim")/../bench/libfsaio-libaio-contract-floor.so
bench_have "build the tree, or use -s" "$shim" "$floor" "$cfloor"
bench_need perf
bench_layout "$file"
out=$(dirname "$file")/fio-hot.$$
mkdir -p "$out"
cat "$file" >/dev/null

# NAME:ENGINE:DEPTH:PRELOAD
methods=("dropin:libaio:32:$shim" "io_uring:io_uring:32:" "psync:psync:1:"
	 "kaio:libaio:32:" "floor:libaio:32:$floor" "cfloor:libaio:32:$cfloor")
for ((r = 1; r <= rounds; r++)); do
	for ((k = 0; k < ${#methods[@]}; k++)); do
		IFS=: read -r name engine depth preload <<<"${methods[(k + r) % ${#methods[@]}]}"
		FIO_FILE=$file FIO_ENGINE=$engine FIO_DIRECT=0 FIO_DEPTH=$depth FIO_RUNTIME=$runtime \
		perf stat -x, -e task-clock -o "$out/$name.$r.perf" \
			env LD_PRELOAD="$preload" fio --output-format=json \
			--output="$out/$name.$r.json" "$here/randread-hot.fio" >/dev/null
	done
done

python3 - "$out" "$rounds" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
names = ["dropin", "io_uring", "psync", "kaio", "floor", "cfloor"]

def load(name, r):
    text = open("%s/%s.%d.json" % (out, name, r)).read()
    rd = json.loads(text[text.index("{"):])["jobs"][0]["read"]
    ms = [float(l.split(",")[0]) for l in open("%s/%s.%d.perf" % (out, name, r))
          if "task-clock" in l][0]
    return rd["iops"], ms * 1000.0 / rd["total_ios"]

res = {(n, r): load(n, r) for n in names for r in range(1, rounds + 1)}
med = lambda xs: statistics.median(xs)
print("%-9s %12s %12s   (medians of %d rounds)" % ("method", "IOPS", "CPU us/IO", rounds))
for n in names:
    print("%-9s %12.0f %12.2f" % (n, med([res[n, r][0] for r in range(1, rounds + 1)]),
                                  med([res[n, r][1] for r in range(1, rounds + 1)])))
def ratio(other, i):
    return med([res["dropin", r][i] / res[other, r][i] for r in range(1, rounds + 1)])
print("\ndrop-in / psync: IOPS %.2fx (goal >= 0.9), CPU %.2fx (<= 1.25); / io_uring IOPS %.2fx "
      "(>= 1.0); / the kernel's AIO %.2fx; / the floor %.2fx; / the contract floor %.2fx "
      "(medians of each round's ratio)" % (
      ratio("psync", 0), ratio("psync", 1), ratio("io_uring", 0), ratio("kaio", 0),
      ratio("floor", 0), ratio("cfloor", 0)))
def fratio(a, b):
    return med([res[a, r][0] / res[b, r][0] for r in range(1, rounds + 1)])
print("the contract floor / psync: IOPS %.2fx; / io_uring %.2fx; / the floor %.2fx" % (
      fratio("cfloor", "psync"), fratio("cfloor", "io_uring"), fratio("cfloor", "floor")))
PY
echo "fio JSON and perf output: $out"

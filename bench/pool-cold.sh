#!/bin/bash
# SPDX-License-Identifier: MIT
# Cold random reads where io_uring is refused: the worker pool (native API
# and the libaio drop-in) beside io_uring buffered, a naive thread pool and
# kernel AIO with O_DIRECT, all run by fsaio-bench on one 1 GiB file.
#
# Each round runs fsaio-bench three times, in an order that alternates from
# round to round:
#   pool     FSAIO_BACKEND=threads: fsaio-pool, fsaio-shim, uring-buffered,
#            threads, kaio-direct (one run: the ratios within it count)
#   again    the same run once more: its uring-buffered over the first's is
#            the instrument's A/A spread
#   seccomp  fsaio and fsaio-shim under a seccomp filter that refuses
#            io_uring (EPERM, as container profiles answer), so the default
#            backend falls back to the pool; divided by the uring-buffered
#            of the pool run of its round
# For each case it prints the medians over the rounds of the per-round
# ratios (and their range): IOPS, CPU per I/O and submit p99.
#
#   pool-cold.sh [-d DIR] [-b BUILD] [-n ROUNDS] [-r SECONDS] [-c CASES]
# DIR (default .) holds the file (on disk, not tmpfs); BUILD the build tree
# (default: build beside this script); 3 rounds of 5-second runs; CASES
# is a comma-separated list of BS:DEPTH (default 4k:32,64k:16).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
dir=.
build=$here/../build
rounds=3
runtime=5
cases=4k:32,64k:16
while getopts "d:b:n:r:c:" o; do
	case $o in
	d) dir=$OPTARG ;;
	b) build=$OPTARG ;;
	n) rounds=$OPTARG ;;
	r) runtime=$OPTARG ;;
	c) cases=$OPTARG ;;
	*) sed -n '2,/^set /p' "$0" | sed '$d'; exit 2 ;;
	esac
done
bench=$build/bench/fsaio-bench
deny=$build/tests/seccomp_deny_uring
for f in "$bench" "$deny"; do
	[ -x "$f" ] || { echo "pool-cold.sh: no $f: build the tree first" >&2; exit 1; }
done
out=$(mktemp -d "${TMPDIR:-/tmp}/pool-cold.XXXXXX")
trap 'rm -rf "$out"' EXIT
common=(--dir "$dir" --keep --size 1g --cache cold --batch 1 --runtime "$runtime" --reps 1)
pool_methods=fsaio-pool,fsaio-shim,uring-buffered,threads,kaio-direct

run() { # NAME CASE ROUND
	local bs=${2%:*} depth=${2#*:} json=$out/$1.$2.$3.json
	case $1 in
	pool | again)
		FSAIO_BACKEND=threads "$bench" "${common[@]}" --bs "$bs" --depth "$depth" \
			--methods "$pool_methods" --json "$json" >/dev/null ;;
	seccomp)
		"$deny" --errno=EPERM "$bench" "${common[@]}" --bs "$bs" --depth "$depth" \
			--methods fsaio,fsaio-shim --json "$json" >/dev/null ;;
	esac
}

IFS=, read -r -a case_list <<<"$cases"
for c in "${case_list[@]}"; do
	for ((r = 1; r <= rounds; r++)); do
		if ((r % 2)); then order=(pool again seccomp); else order=(seccomp again pool); fi
		ok=1
		for name in "${order[@]}"; do
			run "$name" "$c" "$r" || ok=0
		done
		if ((ok)); then
			echo "case $c round $r done (load $(cut -d' ' -f1 /proc/loadavg))"
		else
			echo "case $c round $r: a run failed; the round is left out"
			rm -f "$out"/*."$c.$r".json
		fi
	done
done

python3 - "$out" "$rounds" "${case_list[@]}" <<'EOF'
import json, statistics, sys
out, rounds, cases = sys.argv[1], int(sys.argv[2]), sys.argv[3:]

def load(name, case, r):
    d = json.load(open(f"{out}/{name}.{case}.{r}.json"))
    res = {}
    for c in d["cases"]:
        for m in c["results"]:
            if m.get("status") == "ok":
                res[m["method"]] = m
    return res

def fig(m, key):
    return {"iops": m["iops"], "cpu": m["cpu_us_per_io"], "sub99": m["submit_us"]["p99"]}[key]

def line(label, vals):
    if not vals:
        return
    print(f"  {label:44s} {statistics.median(vals):6.2f}x  ({min(vals):.2f}-{max(vals):.2f})")

for case in cases:
    print(f"cold random {case.replace(':', ' depth ')}, {rounds} rounds: medians of per-round ratios (range)")
    rows = {}
    for r in range(1, rounds + 1):
        try:
            p, a, s = load("pool", case, r), load("again", case, r), load("seccomp", case, r)
        except FileNotFoundError:
            continue
        ref = p["uring-buffered"]
        def add(k, v):
            rows.setdefault(k, []).append(v)
        for name, src in (("fsaio-pool", p), ("fsaio-shim (pool)", p)):
            m = src[name.split()[0]]
            add(f"{name} / uring-buffered IOPS", fig(m, "iops") / fig(ref, "iops"))
            add(f"{name} / threads IOPS", fig(m, "iops") / fig(p["threads"], "iops"))
            add(f"{name} / kaio-direct IOPS", fig(m, "iops") / fig(p["kaio-direct"], "iops"))
            add(f"{name} / uring-buffered CPU per I/O", fig(m, "cpu") / fig(ref, "cpu"))
            add(f"{name} / kaio-direct submit p99", fig(m, "sub99") / fig(p["kaio-direct"], "sub99"))
        add("fsaio-shim / fsaio-pool IOPS", fig(p["fsaio-shim"], "iops") / fig(p["fsaio-pool"], "iops"))
        for name in ("fsaio", "fsaio-shim"):
            add(f"seccomp {name} / uring-buffered IOPS", fig(s[name], "iops") / fig(ref, "iops"))
            add(f"seccomp {name} / uring-buffered CPU per I/O", fig(s[name], "cpu") / fig(ref, "cpu"))
        best = max(fig(p[m], "iops") for m in ("fsaio-pool", "fsaio-shim", "uring-buffered", "threads"))
        add("best buffered method / kaio-direct IOPS", best / fig(p["kaio-direct"], "iops"))
        add("A/A: uring-buffered again / first IOPS", fig(a["uring-buffered"], "iops") / fig(ref, "iops"))
        add("A/A: fsaio-pool again / first IOPS", fig(a["fsaio-pool"], "iops") / fig(p["fsaio-pool"], "iops"))
    for k, v in rows.items():
        line(k, v)
EOF

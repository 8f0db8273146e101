#!/bin/bash
# SPDX-License-Identifier: MIT
# What a read costs through each drop-in, beside the native API and io_uring,
# in one run: for each client, IOPS and per I/O the CPU time, system calls
# and context switches of its whole process (perf stat -e
# task-clock,context-switches,raw_syscalls:sys_enter), for cold 4k reads at
# depth 32, cold 64k at depth 16 and hot 4k at depth 32 (random, 1 GiB file).
#
#   fio-uring     fio --ioengine=io_uring, buffered (the reference)
#   fio-libaio    fio --ioengine=libaio under fsaio-run (the libaio drop-in)
#   fio-posixaio  fio --ioengine=posixaio under fsaio-run -P (the POSIX drop-in)
#   native        fsaio-bench --methods fsaio (fsaio_submit/fsaio_getevents)
#   bench-shim    fsaio-bench --methods fsaio-shim (io_submit/io_getevents)
#   bench-posix   fsaio-bench --methods fsaio-posix (lio_listio/aio_suspend)
#   bench-uring   fsaio-bench --methods uring-buffered
#   fio-glibc     fio --ioengine=posixaio on glibc's POSIX AIO (cold and hot 4k)
#   fio-psync     fio --ioengine=psync, one read at a time (hot 4k)
#
# Every client runs twice per case, in the order A B ... B A, and once more
# with one block per slot (the null run: the program's start, its file
# checks, the library's setup), whose counts are taken off twice before
# dividing by the I/Os the two runs did more than it: the figures are what
# the reads cost, not what a process costs. IOPS are of the two runs.
# System calls and switches per I/O hardly depend on the machine's load;
# CPU time a little; IOPS a lot.
#
#   dropin-cost.sh [-d DIR] [-b BUILD] [-o OUT] [-x SCALE] [-c CASES]
# SCALE (default 1) multiplies every run's bytes: runs of a fraction of a
# second give noisy IOPS, 4 makes them seconds long. CASES (default all)
# is a comma-separated subset of cold-4k, cold-64k, hot-4k.
# DIR (default .) holds fsaio-bench.0.dat (1 GiB, made if absent, kept; on
# disk, not tmpfs); BUILD is the build tree (default ../build beside this
# script); OUT keeps the perf, fio and CSV files (default DIR/dropin-cost.PID).
# Needs perf, fio and a built tree.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
dir=.
build=$here/../build
out=
scale=1
cases=cold-4k,cold-64k,hot-4k
bench_opts "d:dir b:build o:out x:scale c:cases" "$@"
case $scale in '' | *[!0-9]* | 0) bench_usage ;; esac
build=$(cd "$build" && pwd)
bench=$build/bench/fsaio-bench
run=$build/dropin/fsaio-run
shim=$build/dropin/libfsaio-libaio.so
bench_have "build the tree, or use -b" "$bench" "$run" "$shim" "$build/dropin/libfsaio-posixaio.so"
bench_need perf fio fincore numfmt
out=${out:-$dir/dropin-cost.$$}
mkdir -p "$out"
file=$dir/fsaio-bench.0.dat
export FSAIO_SHIM=$shim FSAIO_POSIX_SHIM=$build/dropin/libfsaio-posixaio.so

# The file, laid out by fsaio-bench (it checks what it reads).
"$bench" --dir "$dir" --keep --size 1g --cache hot --bs 4k --depth 1 --methods pread \
	--bytes 4k --reps 1 --ramp 0 >/dev/null

cold() {
	sync "$file"
	dd if=/dev/null of="$file" oflag=nocache conv=notrunc,fdatasync count=0 status=none
}

hot() {
	cat "$file" >/dev/null
	[ "$(fincore --bytes --noheadings --output RES "$file" | tr -d ' ')" = $((1 << 30)) ] ||
		cat "$file" >/dev/null
}

# one CLIENT CASE RUN BS DEPTH BYTES: a run under perf stat
one() {
	local client=$1 case=$2 r=$3 bs=$4 depth=$5 bytes=$6 cache=${2%%-*} tag=$out/$1.$2.$3
	local -a cmd
	if [ "$cache" = hot ]; then hot; else cold; fi
	case $client in
	fio-*)
		local engine=${client#fio-}
		case $engine in
		uring) engine=io_uring ;;
		glibc) engine=posixaio ;;
		psync) depth=1 ;;
		esac
		cat >"$tag.fio" <<-EOF
		[read]
		filename=$file
		size=1g
		io_size=$bytes
		rw=randread
		bs=$bs
		ioengine=$engine
		direct=0
		iodepth=$depth
		invalidate=0
		fadvise_hint=1
		randrepeat=1
		EOF
		cmd=(fio --output-format=json --output="$tag.json" "$tag.fio")
		case $client in
		fio-libaio) cmd=("$run" "${cmd[@]}") ;;
		fio-posixaio) cmd=("$run" -P "${cmd[@]}") ;;
		esac
		;;
	*)
		local method=${client#bench-}
		case $client in
		native) method=fsaio ;;
		bench-shim) method=fsaio-shim ;;
		bench-posix) method=fsaio-posix ;;
		bench-uring) method=uring-buffered ;;
		esac
		cmd=("$bench" --dir "$dir" --keep --size 1g --cache "$cache" --bs "$bs"
		     --depth "$depth" --methods "$method" --bytes "$bytes" --reps 1 --ramp 0
		     --csv "$tag.csv")
		# A run of --bytes N makes N / bs reads.
		echo $(($(numfmt --from=iec "${bytes^^}") / $(numfmt --from=iec "${bs^^}"))) >"$tag.ios"
		;;
	esac
	perf stat -x, -o "$tag.perf" -e task-clock,context-switches,raw_syscalls:sys_enter \
		"${cmd[@]}" >"$tag.log" 2>&1 ||
		{ echo "dropin-cost.sh: $client $case failed (see $tag.log)" >&2; exit 1; }
}

# Every case runs these; some also some of extra.
base=(fio-uring fio-libaio fio-posixaio native bench-shim bench-posix bench-uring)
extra=(fio-glibc fio-psync)
# case NAME BS DEPTH BYTES [CLIENT...]: base and the clients given
run_case() {
	local name=$1 bs=$2 depth=$3 bytes=$(($(numfmt --from=iec "${4^^}") * scale)) c i
	local -a clients=("${base[@]}" "${@:5}")
	case ,$cases, in *,$name,*) ;; *) return 0 ;; esac
	local null=$((depth * $(numfmt --from=iec "${bs^^}")))
	for c in "${clients[@]}"; do one "$c" "$name" 1 "$bs" "$depth" "$bytes"; done
	for ((i = ${#clients[@]} - 1; i >= 0; i--)); do
		one "${clients[i]}" "$name" 2 "$bs" "$depth" "$bytes"
	done
	for c in "${clients[@]}"; do one "$c" "$name" null "$bs" "$depth" "$null"; done
}

echo "dropin-cost.sh: $(date -u +%FT%TZ), load average $(cut -d' ' -f1-3 /proc/loadavg)"
run_case cold-4k 4k 32 128m fio-glibc
run_case cold-64k 64k 16 512m
run_case hot-4k 4k 32 512m fio-glibc fio-psync
echo "dropin-cost.sh: done $(date -u +%FT%TZ), load average $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$out" "$cases" "${base[@]}" "${extra[@]}" <<'PY'
import csv, json, os, sys
out, cases, every = sys.argv[1], sys.argv[2].split(","), sys.argv[3:]

def perf(tag):
    v = {}
    for line in open(tag + ".perf"):
        f = line.strip().split(",")
        if len(f) > 2 and f[0].replace(".", "", 1).isdigit():
            v[f[2]] = float(f[0])
    return v

def run(client, case, r):
    tag = os.path.join(out, "%s.%s.%s" % (client, case, r))
    if client.startswith("fio-"):
        text = open(tag + ".json").read()
        rd = json.loads(text[text.index("{"):])["jobs"][0]["read"]
        ios, secs = rd["total_ios"], rd["runtime"] / 1000.0
    else:
        row = next(x for x in csv.DictReader(open(tag + ".csv")) if x["status"] == "ok")
        ios = int(open(tag + ".ios").read())
        secs = ios / float(row["iops"])
    return ios, secs, perf(tag)

print("%-9s %-13s %9s %9s %9s %9s %8s %8s" % ("case", "client", "IOPS", "CPU us/IO", "sys/IO",
                                           "csw/IO", "IOPS/ur", "CPU/ur"))
for case in [c for c in ("cold-4k", "cold-64k", "hot-4k") if c in cases]:
    clients = [c for c in every if os.path.exists(os.path.join(out, "%s.%s.1.perf" % (c, case)))]
    res = {}
    for c in clients:
        a, b, n = run(c, case, 1), run(c, case, 2), run(c, case, "null")
        ios = a[0] + b[0] - 2 * n[0]
        cost = {k: (a[2][k] + b[2][k] - 2 * n[2][k]) / ios for k in a[2]}
        res[c] = (float(a[0] + b[0]) / (a[1] + b[1]), cost)
    ref = res["fio-uring"]
    for c in clients:
        iops, cost = res[c]
        cpu = cost["task-clock"] * 1000
        print("%-9s %-13s %9.0f %9.2f %9.2f %9.3f %7.2fx %7.2fx" % (
            case, c, iops, cpu, cost["raw_syscalls:sys_enter"], cost["context-switches"],
            iops / ref[0], cpu / (ref[1]["task-clock"] * 1000)))
    nat, sh = res["native"], res["bench-shim"]
    print("%-9s bench-shim / native: IOPS %.2fx, CPU/IO %.2fx; bench-posix / native: IOPS %.2fx, "
          "CPU/IO %.2fx" % (case, sh[0] / nat[0], sh[1]["task-clock"] / nat[1]["task-clock"],
                            res["bench-posix"][0] / nat[0],
                            res["bench-posix"][1]["task-clock"] / nat[1]["task-clock"]))
    px = res["fio-posixaio"]
    for other in ("fio-glibc", "fio-psync"):
        if other in res:
            print("%-9s fio-posixaio / %s: IOPS %.2fx, CPU/IO %.2fx" % (
                case, other, px[0] / res[other][0], px[1]["task-clock"] / res[other][1]["task-clock"]))
print("\n/ur: over fio-uring's. Files: %s" % out)
PY

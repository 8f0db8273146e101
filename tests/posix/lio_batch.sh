#!/bin/bash
# SPDX-License-Identifier: MIT
# One lio_listio reaches the io_uring ring in a few system calls, not one
# per read: lio_batch runs LISTS lists of 32 cold reads under the POSIX
# drop-in, strace counts its io_uring_enter calls that submitted three SQEs
# or more (a read that goes to the ring alone takes three: its slot's two
# FILES_UPDATEs and itself), and the drop-in's FSAIO_STATS line says how
# many bytes went through the ring. Unbatched, every read in the ring is an
# enter of its own; batched, a list enters in batches of 64 KiB (two for 32
# reads of 4 KiB), and a harvest that runs meanwhile may enter what is
# built so far. Asserted: at most one enter per list and one per 4 reads,
# while at least 4 reads per list went through the ring. The aiocbs are
# zeroed, so they ask for signal 0, which sends nothing: such requests must
# not go to the worker pool (the drop-in's context for signalled
# requests). Where too few reads reached the ring because pages stayed
# cached, the run is redone, then skipped with a message.
#
#   lio_batch.sh LIO_BATCH DROPIN.so DIR
set -eu

prog=$1
so=$2
dir=$3
lists=8
command -v strace >/dev/null || { echo "strace missing: skipped"; exit 77; }

for try in 1 2 3; do
	out=$(mktemp "$dir/lio_batch.XXXXXX")
	FSAIO_STATS=1 LD_PRELOAD=$so strace -f -qq -e trace=io_uring_enter -e signal=none \
		-o "$out.trace" "$prog" "$dir" $lists 2>"$out.err" ||
		{ cat "$out.err"; echo "FAIL: lio_batch failed"; exit 1; }
	line=$(grep '^libfsaio-posixaio' "$out.err" || true)
	[ -n "$line" ] || { cat "$out.err"; echo "FAIL: no FSAIO_STATS line: not the drop-in"; exit 1; }
	ring=$(echo "$line" | sed -n 's/.* bytes_uring \([0-9]*\).*/\1/p')
	reads=$((ring / 4096))
	worker=$(echo "$line" | sed -n 's/.* bytes_worker \([0-9]*\).*/\1/p')
	# io_uring_enter(fd, to_submit, min_complete, ...)
	enters=$(grep -c 'io_uring_enter([0-9]*, \([3-9]\|[1-9][0-9][0-9]*\),' "$out.trace" || true)
	rm -f "$out" "$out.trace" "$out.err"
	echo "try $try: $lists lists, $reads reads through the ring, $enters submitting io_uring_enter calls"
	if [ "$reads" -ge $((4 * lists)) ]; then
		if [ "$enters" -le $((lists + reads / 4)) ]; then
			echo "ok"
			exit 0
		fi
		echo "FAIL: more than one submitting io_uring_enter call per list and per 4 reads"
		exit 1
	fi
	if [ "$worker" -ge $((4 * lists * 4096)) ]; then
		echo "FAIL: $((worker / 4096)) reads went to the worker pool: zeroed aiocbs (signal 0) belong on the ring"
		exit 1
	fi
done
echo "fewer than 4 reads per list reached the ring in 3 tries (pages stayed cached): skipped"
exit 77

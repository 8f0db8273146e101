# SPDX-License-Identifier: MIT
# Sourced by the scripts of bench/ (POSIX sh, so bash and dash both take it):
# their options, their checks before a run, the 1 GiB file fio reads, and
# the median of a column. A script's name in its messages is bench_name.
bench_name=$(basename "$0")

# bench_usage: the script's header comment (its usage), exit status 2.
bench_usage() {
	awk 'NR > 1 { if (!/^#/) exit; print }' "$0"
	exit 2
}

# bench_opts "f:file s:shim ..." "$@": each word is an option letter and the
# variable its argument goes to. -h or any other option: bench_usage. The
# caller shifts $((OPTIND - 1)) for the operands.
bench_opts() {
	_spec=$1
	shift
	_letters=h
	for _o in $_spec; do
		_letters=$_letters${_o%%:*}:
	done
	OPTIND=1
	while getopts "$_letters" _opt; do
		_var=
		for _o in $_spec; do
			[ "${_o%%:*}" = "$_opt" ] && _var=${_o#*:}
		done
		[ -n "$_var" ] || bench_usage
		eval "$_var=\$OPTARG"
	done
}

# bench_need PROGRAM...: every one on PATH, or exit 2 naming the first missing.
bench_need() {
	for _p in "$@"; do
		command -v "$_p" >/dev/null || { echo "$bench_name: $_p not installed" >&2; exit 2; }
	done
}

# bench_have HINT FILE...: every file readable, or exit 2 with HINT.
bench_have() {
	_hint=$1
	shift
	for _f in "$@"; do
		[ -r "$_f" ] || { echo "$bench_name: no $_f ($_hint)" >&2; exit 2; }
	done
}

# bench_fio_defaults: the defaults of bench/fio's scripts (which set here to
# their folder): file, the 1 GiB file in the current directory; shim, this
# tree's libaio drop-in.
bench_fio_defaults() {
	file=./fsaio-fio-1g.dat
	shim=$here/../../build/dropin/libfsaio-libaio.so
}

# bench_layout FILE [SAY]: FILE holds 1 GiB written by fio, unless it
# already does; SAY, if given, is printed before writing it.
bench_layout() {
	[ "$(stat -c %s "$1" 2>/dev/null || echo 0)" -eq $((1 << 30)) ] && return 0
	[ $# -lt 2 ] || echo "$2"
	fio --name=layout --filename="$1" --size=1g --rw=write --bs=1m \
		--ioengine=psync --refill_buffers=1 --end_fsync=1 --output=/dev/null
}

# median FILE FIELD PREFIX: the median of the values that follow the word
# FIELD on the lines of FILE beginning with the words PREFIX.
median() {
	awk -v p="$3 " -v f="$2" 'index($0, p) == 1 { for (i = 1; i < NF; i++) if ($i == f) print $(i + 1) }' "$1" |
		sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}

#!/bin/sh
# SPDX-License-Identifier: MIT
# fsaio-cat: output is the concatenation of its operands and stdin; a file
# it cannot open or read is reported, the others are still printed, exit 1.
#   cat.sh FSAIO_CAT VERSION
. "$(dirname "$0")/lib.sh"
cat_=$1
version=$2

# Sizes around the 128 KiB chunk and the 16-deep window (2 MiB).
random "$dir/a" 1
random "$dir/b" 131072
random "$dir/c" 2500001
seq 1 30000 >"$dir/text"
: >"$dir/empty"
cat "$dir/a" "$dir/b" "$dir/c" "$dir/text" "$dir/empty" >"$dir/all"

run_ok "$dir/out" "$dir/err" "$cat_" "$dir/a" "$dir/b" "$dir/c" "$dir/text" "$dir/empty"
cmp -s "$dir/out" "$dir/all" || fail "the files, cached"
cold "$dir/a" "$dir/b" "$dir/c" "$dir/text"
run_ok "$dir/out" "$dir/err" "$cat_" "$dir/a" "$dir/b" "$dir/c" "$dir/text" "$dir/empty"
cmp -s "$dir/out" "$dir/all" || fail "the files, cold"

# stdin: no operand, "-" among files, as a pipe and as a regular file.
run_ok "$dir/out" "$dir/err" "$cat_" <"$dir/c"
cmp -s "$dir/out" "$dir/c" || fail "no operand: stdin from a file"
cat "$dir/c" | "$cat_" >"$dir/out" || fail "no operand: stdin from a pipe, exit $?"
cmp -s "$dir/out" "$dir/c" || fail "no operand: stdin from a pipe"
cat "$dir/text" | "$cat_" "$dir/a" - "$dir/b" >"$dir/out" || fail "'-' from a pipe, exit $?"
cat "$dir/a" "$dir/text" "$dir/b" | cmp -s - "$dir/out" || fail "'-' between files, from a pipe"
run_ok "$dir/out" "$dir/err" "$cat_" "$dir/a" - "$dir/b" - <"$dir/c"
cat "$dir/a" "$dir/c" "$dir/b" | cmp -s - "$dir/out" || fail "'-' twice, from a file: the second is at its end"
run_ok "$dir/out" "$dir/err" "$cat_" -- - <"$dir/b"
cmp -s "$dir/out" "$dir/b" || fail "'--' then '-'"
# A regular stdin is read from its offset and left at the end of what was read.
{ dd bs=1000 count=1 of=/dev/null status=none; "$cat_" >"$dir/out"; cat >"$dir/rest"; } <"$dir/c"
tail -c +1001 "$dir/c" | cmp -s - "$dir/out" || fail "stdin not read from its offset"
[ ! -s "$dir/rest" ] || fail "stdin's offset not left at its end"

# A missing file and a directory in the middle: reported, the rest printed.
rc=0
"$cat_" "$dir/a" "$dir/missing" "$dir/b" "$dir" "$dir/text" >"$dir/out" 2>"$dir/err" || rc=$?
[ "$rc" = 1 ] || fail "a failed operand: exit $rc, expected 1"
cat "$dir/a" "$dir/b" "$dir/text" | cmp -s - "$dir/out" || fail "the files around the failed ones"
printf 'fsaio-cat: %s\nfsaio-cat: %s\n' "$dir/missing: No such file or directory" "$dir: Is a directory" |
	cmp -s - "$dir/err" || fail "stderr: $(cat "$dir/err")"

# Options.
run_ok "$dir/out" "$dir/err" "$cat_" --help
head -n 1 "$dir/out" | grep -q "^Usage: fsaio-cat " || fail "--help: $(cat "$dir/out")"
grep -q -- "--version" "$dir/out" || fail "--help does not list --version"
run_ok "$dir/out2" "$dir/err" "$cat_" -h
cmp -s "$dir/out" "$dir/out2" || fail "-h differs from --help"
run_ok "$dir/out" "$dir/err" "$cat_" --version
[ "$(cat "$dir/out")" = "fsaio-cat (libfsaio) $version" ] || fail "--version: $(cat "$dir/out")"
rc=0
"$cat_" -x "$dir/a" >"$dir/out" 2>"$dir/err" || rc=$?
[ "$rc" = 2 ] || fail "a bad option: exit $rc, expected 2"
[ "$(cat "$dir/err")" = "fsaio-cat: invalid option '-x' (see fsaio-cat --help)" ] || fail "-x: $(cat "$dir/err")"
[ ! -s "$dir/out" ] || fail "a bad option printed a file"
echo "fsaio-cat: ok"

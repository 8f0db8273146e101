#!/bin/sh
# SPDX-License-Identifier: MIT
# check-example.sh PAGE.scd PROGRAM.c: the program shown in PAGE's EXAMPLES
# section (its first ``` block there) is PROGRAM.c, line for line (scdoc
# takes \\ for one backslash), so the page shows a program the tests build
# and run.
set -eu
page=$1 prog=$2
shown=$(sed -n '/^# EXAMPLES/,$p' "$page" | awk '/^```/ { n++; next } n == 1' | sed 's/\\\\/\\/g')
[ -n "$shown" ] || { echo "FAIL: no program in the EXAMPLES section of $page"; exit 1; }
if [ "$shown" != "$(cat "$prog")" ]; then
	echo "FAIL: the program in $page differs from $prog:"
	printf "%s\n" "$shown" | diff -u "$prog" - || true
	exit 1
fi
echo "$(basename "$page"): its EXAMPLES program is $(basename "$prog")"

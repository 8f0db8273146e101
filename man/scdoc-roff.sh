#!/bin/sh
# SPDX-License-Identifier: MIT
# Turn one scdoc page into troff: scdoc-roff.sh SCDOC IN OUT.
# scdoc writes paragraph macros that start no paragraph: right after and
# right before section headings, beside other paragraph macros, and at the
# end of indented blocks (before .RE). roff skips them and mandoc -T lint
# warns about each, so the first three are dropped and the last is moved
# after its .RE, where it gives the space it was meant to give. The .nh
# that scdoc writes before .TH is repeated after it, where groff's man
# macros no longer reset it: no hyphenated identifiers.
set -eu
scdoc=$1 in=$2 out=$3

trap 'rm -f "$out.roff" "$out.tmp"' EXIT
"$scdoc" < "$in" > "$out.roff"
awk '
	/^\.P$/ {
		if (prev !~ /^\.S[HS] /)
			held = 1
		next
	}
	/^\.S[HS] / { held = 0 }
	/^\.RE$/ { print; prev = $0; next }
	/^\.TH / { print; print ".nh"; prev = $0; next }
	{
		if (held)
			print ".P"
		held = 0
		print
		prev = $0
	}
' "$out.roff" > "$out.tmp"
mv "$out.tmp" "$out"

#!/bin/sh
# SPDX-License-Identifier: MIT
# check-pages.sh MANDIR LIBFSAIO.SO FSAIO.H SRCDIR built|not-built
#
# Every function libfsaio.so exports and every fsaio_prep_* helper of
# fsaio.h has a page in MANDIR, its own or a link to the page that
# documents it, whose NAME section names it (whatis and apropos read that);
# every SRCDIR/NAME.SECTION.scd was built (listed in man/meson.build), and
# every section 3 page has an EXAMPLES section;
# and every page renders without a warning under mandoc -T lint -W warning
# and under man -l where man is installed. Exit 0 when all hold, 1 when one
# does not, 77 (skipped) when the pages were not built, or when mandoc is
# missing and the checks that need no mandoc passed.
set -u
mandir=$1 lib=$2 header=$3 srcdir=$4 built=$5

if [ "$built" != built ]; then
	echo "SKIP: man pages not built: scdoc not found (install scdoc, or -Dman=enabled to require it)"
	exit 77
fi

fail=0
bad() {
	echo "FAIL: $*"
	fail=1
}

# Exported functions (the version nodes are type A and left out) and the
# prep helpers (fsaio_prep__ is the header's private one).
syms=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TtWi]$/ { sub(/@.*/, "", $3); print $3 }')
preps=$(sed -n 's/.*[^a-z_]\(fsaio_prep_[a-z0-9_]*\)(.*/\1/p' "$header" | grep -v '^fsaio_prep__' | sort -u)
[ -n "$syms" ] || bad "no exported function read from $lib"
[ -n "$preps" ] || bad "no fsaio_prep_* helper read from $header"

n=0
for s in $syms $preps; do
	n=$((n + 1))
	page=$mandir/$s.3
	if [ ! -f "$page" ]; then
		bad "$s has no page: $page is missing (or a link to nothing)"
	elif ! sed -n '/^\.SH NAME/,/^\.SH /p' "$page" | grep -q "\\<$s\\>"; then
		bad "$s is not named in the NAME section of $page"
	fi
done
echo "$n functions and prep helpers looked up"

for src in "$srcdir"/*.scd; do
	page=$(basename "$src" .scd)
	[ -f "$mandir/$page" ] || bad "$page was not built from $src: is it in man/meson.build?"
	# A call's or a struct's page shows it used.
	case $page in
	*.3) grep -q '^# EXAMPLES$' "$src" || bad "$page has no EXAMPLES section" ;;
	esac
done

pages=$(find "$mandir" -maxdepth 1 \( -type f -o -type l \) -name '*.[1-8]' | sort)
[ -n "$pages" ] || bad "no pages in $mandir"

if ! command -v mandoc >/dev/null 2>&1; then
	[ "$fail" -eq 0 ] || exit 1
	echo "SKIP: mandoc not installed, so the pages were not linted (apt-get install mandoc)"
	exit 77
fi
# man-db's man (the one with --warnings); another man is left out.
have_man=false
if command -v man >/dev/null 2>&1; then
	if MANWIDTH=80 man --warnings -l "$(echo "$pages" | head -n 1)" >/dev/null 2>&1; then
		have_man=true
	else
		echo "note: this man cannot render with --warnings: pages checked by mandoc only"
	fi
fi

for p in $pages; do
	out=$(mandoc -T lint -W warning "$p" 2>&1)
	if [ $? -ne 0 ] || [ -n "$out" ]; then
		bad "mandoc -T lint -W warning $p:"
		echo "$out"
	fi
	if $have_man; then
		err=$(MANWIDTH=80 man --warnings -l "$p" 2>&1 >/dev/null)
		if [ -n "$err" ]; then
			bad "man --warnings -l $p:"
			echo "$err"
		elif ! MANWIDTH=80 man -l "$p" 2>/dev/null | grep -q '^NAME'; then
			bad "man -l $p shows no NAME section"
		fi
	fi
done
echo "$(echo "$pages" | wc -l) pages linted by mandoc$($have_man && echo ", rendered by man")"
exit "$fail"

#!/bin/sh
# The docs name only what exists (scripts/check-docs), and the check fails
# on each kind of stale name planted back: a path, a bare file name, a
# function, a macro and an environment variable.
set -u
top=$1
check=$top/scripts/check-docs
out=$("$check" "$top" 2>&1) || { echo "$out"; echo "FAIL: the tree names what does not exist"; exit 1; }
echo "$out"

planted=$(mktemp)
trap 'rm -f "$planted"' EXIT
cat > "$planted" <<'DOC'
Lock rules are in `lib/internal.h`; public functions carry `FSAIO_APIX`.
Set FSAIO_NO_SUCH_VAR=1, then call fsaio_gone() as `gone.c` does.
DOC
out=$("$check" --extra "$planted" "$top" 2>&1) && { echo "FAIL: planted names passed"; exit 1; }
fail=0
for name in lib/internal.h FSAIO_APIX FSAIO_NO_SUCH_VAR fsaio_gone gone.c; do
	echo "$out" | grep -q ": $name: " || { echo "FAIL: planted $name not reported"; fail=1; }
done
[ $fail -eq 0 ] && echo "planted stale names: all five reported"
exit $fail

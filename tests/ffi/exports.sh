#!/bin/sh
# SPDX-License-Identifier: MIT
# exports.sh LIBFSAIO_FFI.SO FSAIO.H: the library exports every prep helper
# the header has (fsaio_prep_*, not the private fsaio_prep__), each at
# FSAIO_FFI_0, and nothing else.
set -eu
lib=$1 header=$2
want=$(sed -n 's/.*[^a-z_]\(fsaio_prep_[a-z0-9_]*\)(.*/\1/p' "$header" | grep -v '^fsaio_prep__$' |
	sed 's/$/@@FSAIO_FFI_0/' | sort -u)
have=$(nm -D --with-symbol-versions --defined-only "$lib" | awk '$2 != "A" { print $3 }' | sort -u)
if [ "$want" != "$have" ]; then
	echo "FAIL: $lib exports $(echo $have), the header's helpers are $(echo $want)"
	exit 1
fi
echo "exports.sh: $(echo "$have" | wc -l) helpers exported, the header's"

#!/bin/sh
# SPDX-License-Identifier: MIT
# fsaio-epoll: for every file, the bytes and lines wc(1) counts, reaped
# through an epoll loop on the event fd, cached and cold.
#   epoll.sh FSAIO_EPOLL
. "$(dirname "$0")/lib.sh"
ex=$1

count_files
set -- "$dir/r1" "$dir/r2" "$dir/text" "$dir/short" "$dir/empty"
wc_counts "$@" >"$dir/want"
rounds "$ex" "$@"

# A file that cannot be opened: reported, the others counted, exit 1.
expect 1 "fsaio-epoll: $dir/missing: No such file or directory" "$ex" "$dir/r1" "$dir/missing" "$dir/text"
wc_counts "$dir/r1" "$dir/text" | cmp -s - "$dir/out" || fail "the files beside a missing one: $(cat "$dir/out")"
echo "fsaio-epoll: ok"

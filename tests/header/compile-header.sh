#!/bin/sh
# SPDX-License-Identifier: MIT
# compile-header.sh COMPILER ARGS...: run the compiler as given; any warning
# is an error through -Werror, so its status is the test's.
echo "$*"
exec "$@"

# SPDX-License-Identifier: MIT
# Shared by installed.sh and subproject.sh (sourced): strict mode, src
# (the scripts' directory), fail and the sanitizer skip.
set -eu
src=$(dirname "$0")

fail() { echo "FAIL: $*"; exit 1; }

# skip_sanitized SANITIZE: an instrumented library is no installable
# product, so a sanitizer build has nothing to check (exit 77, skipped).
skip_sanitized() {
	if [ "$1" != none ]; then
		echo "SKIP: -Db_sanitize=$1 build"
		exit 77
	fi
}

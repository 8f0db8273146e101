#!/bin/sh
# SPDX-License-Identifier: MIT
# run-tests.sh [PYTEST ARG]...: the Python package's tests, with pytest and
# pytest-asyncio, on the package in this folder and the libraries named by
# FSAIO_LIBRARY_PATH (meson test sets it to the build tree's). The first of
# $FSAIO_PYTHON, python3 and /usr/bin/python3 that has both runs them;
# without one the test is skipped (exit 77) with the reason.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
for py in ${FSAIO_PYTHON:-} python3 /usr/bin/python3; do
	command -v "$py" >/dev/null 2>&1 || continue
	"$py" -c 'import pytest, pytest_asyncio' 2>/dev/null || continue
	export PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}" PYTHONDONTWRITEBYTECODE=1
	exec "$py" -m pytest -c "$here/pytest.ini" --rootdir "$here" -p no:cacheprovider -q "$@" "$here/tests"
done
echo "SKIP: no python3 with pytest and pytest-asyncio (Debian: python3-pytest python3-pytest-asyncio)"
exit 77

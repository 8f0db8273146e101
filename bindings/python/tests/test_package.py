# SPDX-License-Identifier: MIT
"""The package against the C library: the structs' layout beside the
header's, the library lookup, the versions."""
from __future__ import annotations

import ctypes
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import fsaio
from fsaio import _lib

TOP = Path(__file__).resolve().parents[3]
HEADER = TOP / "include" / "fsaio.h"


def header_struct(name: str) -> list[str]:
    """The field names of struct name in fsaio.h, in order."""
    text = re.sub(r"/\*.*?\*/", "", HEADER.read_text(), flags=re.S)
    body = re.search(r"struct %s \{(.*?)\n\};" % name, text, re.S).group(1)
    body = re.sub(r"\bunion \{.*?\};", "buf;", body, flags=re.S)
    body = re.sub(r"\(\*(\w+)\)\(.*?\);", r"\1;", body, flags=re.S)    # function pointers
    return re.findall(r"(\w+)(?:\[\d+\])?;", body)


@pytest.mark.skipif(not HEADER.exists(), reason="no include/fsaio.h beside the package")
@pytest.mark.parametrize("cls,name,size", [
    (_lib.Req, "fsaio_req", 120),
    (_lib.Event, "fsaio_event", 32),
    (_lib.Params, "fsaio_params", 80),
    (_lib.Stats, "fsaio_stats", 256),
])
def test_structs_match_the_header(cls, name, size):
    assert [f[0] for f in cls._fields_] == header_struct(name)
    assert ctypes.sizeof(cls) == size


def test_versions():
    assert fsaio.library_version() == fsaio.__version__
    want = os.environ.get("FSAIO_PROJECT_VERSION")
    if want:
        assert fsaio.__version__ == want


def test_library_path_follows_the_variable():
    dirs = os.environ.get("FSAIO_LIBRARY_PATH")
    if dirs:
        assert os.path.dirname(fsaio.library_path()) in [os.path.abspath(d) for d in dirs.split(":")]
    else:
        assert fsaio.library_path() == "libfsaio.so.0"


def test_a_missing_library_is_an_import_error(workdir):
    env = dict(os.environ, FSAIO_LIBRARY_PATH=str(workdir))
    run = subprocess.run([sys.executable, "-c", "import fsaio"], env=env,
                         capture_output=True, text=True)
    assert run.returncode == 1
    assert "ImportError: fsaio: cannot load libfsaio.so.0" in run.stderr
    assert "FSAIO_LIBRARY_PATH" in run.stderr

# SPDX-License-Identifier: MIT
"""examples/read.py, the program README.md shows: run on a file cached and
cold, its output checked; and the README shows it as it is."""
from __future__ import annotations

import hashlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parents[1]
EXAMPLE = HERE / "examples" / "read.py"
README = HERE.parents[1] / "README.md"


def test_read_example(datafile, on_disk):
    want = f"{datafile.path}: {len(datafile.data)} bytes, sha256 {hashlib.sha256(datafile.data).hexdigest()}\n"
    for state in ("hot", "cold"):
        getattr(datafile, state)()
        run = subprocess.run([sys.executable, str(EXAMPLE), datafile.path],
                             capture_output=True, text=True, timeout=60)
        assert (run.returncode, run.stderr, run.stdout) == (0, "", want), state


def test_a_missing_file(workdir):
    run = subprocess.run([sys.executable, str(EXAMPLE), str(workdir / "missing")],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 1 and "FileNotFoundError" in run.stderr


@pytest.mark.skipif(not README.exists(), reason="no README.md above the package")
def test_the_readme_shows_the_example():
    section = README.read_text().split("\n## Python\n", 1)[1].split("\n## ", 1)[0]
    shown = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    assert shown == EXAMPLE.read_text()

# SPDX-License-Identifier: MIT
"""bench/asyncio/asyncio_reads.py, run small: every method and cache state
measured, its table and ratios printed, its file removed."""
from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[3] / "bench" / "asyncio" / "asyncio_reads.py"


@pytest.mark.skipif(not BENCH.exists(), reason="no bench/asyncio beside the package")
def test_asyncio_reads_runs(workdir, on_disk):
    run = subprocess.run([sys.executable, str(BENCH), "--dir", str(workdir), "--size", "8m",
                          "--reps", "2", "--runtime", "0.05", "--ramp", "0.01"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    has_aiofiles = importlib.util.find_spec("aiofiles") is not None
    methods = ["fsaio", "aiofiles", "executor", r"fsaio \(A/A\)"]
    if not has_aiofiles:
        assert "aiofiles: not run" in run.stderr
        methods.remove("aiofiles")
    for cache in ("hot", "cold"):
        for m in methods:
            assert re.search(rf"^{cache} +{m} +[0-9.]+k? +[0-9.]+ +[0-9.]+ ", run.stdout, re.M), \
                (cache, m, run.stdout)
        ratio = r"[0-9.]+x reads/s at [0-9.]+x CPU/read"
        other = rf"fsaio / aiofiles {ratio}; " if has_aiofiles else ""
        assert re.search(rf"^{cache}: {other}fsaio / executor {ratio}; "
                         rf"A/A fsaio [0-9.]+x \(reps [0-9.]+-[0-9.]+\)$", run.stdout, re.M), run.stdout
    if has_aiofiles:
        assert re.search(r"^target hot: .*: [0-9.]+x at [0-9.]+x, (met|not met)$", run.stdout, re.M)
        assert re.search(r"^target cold: .*: [0-9.]+x, (met|not met)$", run.stdout, re.M)
    assert os.listdir(workdir) == []


def test_asyncio_reads_refuses_bad_options(workdir):
    run = subprocess.run([sys.executable, str(BENCH), "--dir", str(workdir), "--methods", "fsaio,nope"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 2 and "--methods: nope: not one of" in run.stderr
    assert os.listdir(workdir) == []

# SPDX-License-Identifier: MIT
"""Shared by the Python tests: files on disk, and their page-cache state.

Scratch files go under $FSAIO_TEST_BUILDDIR (the build directory when
meson runs the tests), else the current directory; never /tmp, which may
be tmpfs, where nothing can be made cold. The kernel may evict a page or
read one ahead at any time, so a test that needs a hit or a miss checks
that it got one and sets the file up again if not (at most a few times).
"""
from __future__ import annotations

import os
import random
import shutil
import tempfile
from pathlib import Path
from typing import Iterator

import pytest

SETUP_TRIES = 5


def scratch_base() -> str:
    return os.environ.get("FSAIO_TEST_BUILDDIR") or os.getcwd()


def fs_type(path: str) -> str:
    """The type of the filesystem path is on (from /proc/self/mounts)."""
    path = os.path.realpath(path)
    best, kind = "", ""
    with open("/proc/self/mounts") as f:
        for line in f:
            mnt, typ = line.split()[1:3]
            if (path == mnt or path.startswith(mnt.rstrip("/") + "/")) and len(mnt) >= len(best):
                best, kind = mnt, typ
    return kind


def make_cold(path: str) -> None:
    """Write path back and drop it from the page cache."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def make_hot(path: str) -> None:
    """Read path whole, so that the page cache holds it."""
    with open(path, "rb") as f:
        while f.read(1 << 20):
            pass


class DataFile:
    """A file of random bytes, with its content kept to check reads."""

    def __init__(self, path: Path, size: int, seed: int) -> None:
        self.path = str(path)
        self.data = random.Random(seed).randbytes(size)
        with open(path, "wb") as f:
            f.write(self.data)
        self.fd = os.open(path, os.O_RDONLY)

    def cold(self) -> None:
        make_cold(self.path)

    def hot(self) -> None:
        make_hot(self.path)

    def close(self) -> None:
        os.close(self.fd)


@pytest.fixture
def workdir() -> Iterator[Path]:
    d = tempfile.mkdtemp(prefix="fsaio-py.", dir=scratch_base())
    try:
        yield Path(d)
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def datafile(workdir: Path) -> Iterator[DataFile]:
    """4 MiB of random bytes on disk, open for reading."""
    f = DataFile(workdir / "data", 4 << 20, 1)
    try:
        yield f
    finally:
        f.close()


@pytest.fixture
def on_disk(workdir: Path) -> None:
    """Skip a test that needs cold pages where the scratch folder cannot
    have them."""
    if fs_type(str(workdir)) in ("tmpfs", "ramfs"):
        pytest.skip(f"{workdir} is on {fs_type(str(workdir))}: no page is ever cold there")

# SPDX-License-Identifier: MIT
"""fsaio.Context: the blocking calls, their results and their errors."""
from __future__ import annotations

import array
import errno
import os

import pytest

import fsaio


def test_read_hot_and_cold(datafile, on_disk):
    with fsaio.Context() as ctx:
        datafile.hot()
        assert ctx.read(datafile.fd, 4096, 8192) == datafile.data[8192:12288]
        datafile.cold()
        assert ctx.read(datafile.fd, 100000, 12345) == datafile.data[12345:112345]
        # Larger than a slot's own buffer: a buffer of its own.
        assert ctx.read(datafile.fd, 1 << 20, 3) == datafile.data[3:3 + (1 << 20)]


def test_read_at_and_past_the_end(datafile):
    size = len(datafile.data)
    with fsaio.Context() as ctx:
        assert ctx.read(datafile.fd, 4096, size - 10) == datafile.data[-10:]
        assert ctx.read(datafile.fd, 4096, size + 4096) == b""
        assert ctx.read(datafile.fd, 0, 0) == b""


def test_readinto_buffers(datafile):
    with fsaio.Context() as ctx:
        buf = bytearray(5000)
        assert ctx.readinto(datafile.fd, buf, 100) == 5000
        assert buf == datafile.data[100:5100]
        # A slice of a larger buffer: only the slice is written.
        big = bytearray(b"x" * 300)
        assert ctx.readinto(datafile.fd, memoryview(big)[100:200], 7) == 100
        assert big[:100] == b"x" * 100 and big[200:] == b"x" * 100
        assert big[100:200] == datafile.data[7:107]
        # Any writable buffer: its size in bytes is what is read.
        words = array.array("I", bytes(64))
        assert ctx.readinto(datafile.fd, words, 0) == 64
        assert words.tobytes() == datafile.data[:64]
        with pytest.raises(TypeError):
            ctx.readinto(datafile.fd, b"read-only", 0)


def test_write_fsync_and_read_back(workdir):
    path = workdir / "out"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        with fsaio.Context() as ctx:
            assert ctx.write(fd, b"hello, ", 0) == 7
            assert ctx.write(fd, bytearray(b"world"), 7) == 5
            assert ctx.write(fd, memoryview(b"!!!")[:1], 12) == 1
            ctx.fsync(fd)
            ctx.fsync(fd, datasync=True)
            assert ctx.read(fd, 100, 0) == b"hello, world!"
        assert os.pread(fd, 100, 0) == b"hello, world!"
    finally:
        os.close(fd)


def test_read_many_submits_in_one_call(datafile, monkeypatch):
    from fsaio import _engine
    calls = []
    real = _engine._submit

    def counting(ctx, reqs, nr):
        calls.append(nr)
        return real(ctx, reqs, nr)
    monkeypatch.setattr(_engine, "_submit", counting)
    reqs = [(datafile.fd, 4096, off) for off in range(0, 50 * 8192, 8192)]
    with fsaio.Context(queue_depth=64) as ctx:
        got = ctx.read_many(reqs)
    assert got == [datafile.data[off:off + 4096] for _, _, off in reqs]
    assert calls == [50]


def test_read_many_beyond_the_queue_depth(datafile):
    reqs = [(datafile.fd, 1000, off) for off in range(0, 200 * 4096, 4096)]
    with fsaio.Context(queue_depth=4) as ctx:
        got = ctx.read_many(reqs)
    assert got == [datafile.data[off:off + 1000] for _, _, off in reqs]


def test_errors_carry_their_errno(datafile, workdir):
    wronly = os.open(workdir / "w", os.O_WRONLY | os.O_CREAT, 0o644)
    dirfd = os.open(workdir, os.O_RDONLY | os.O_DIRECTORY)
    closed = os.dup(datafile.fd)
    os.close(closed)
    try:
        with fsaio.Context() as ctx:
            # Refused at submit.
            with pytest.raises(OSError) as e:
                ctx.read(closed, 10, 0)
            assert e.value.errno == errno.EBADF and e.value.strerror == os.strerror(errno.EBADF)
            with pytest.raises(OSError) as e:
                ctx.read(wronly, 10, 0)
            assert e.value.errno == errno.EBADF
            with pytest.raises(OSError) as e:
                ctx.write(datafile.fd, b"x", 0)
            assert e.value.errno == errno.EBADF
            with pytest.raises(OSError) as e:
                ctx.read(datafile.fd, 10, -5)
            assert e.value.errno == errno.EINVAL
            # Known only in the event: what read(2) says of a directory.
            with pytest.raises(IsADirectoryError):
                ctx.read(dirfd, 10, 0)
            # One bad request among good ones fails the batch, once all are done.
            with pytest.raises(OSError) as e:
                ctx.read_many([(datafile.fd, 10, 0), (closed, 10, 0), (datafile.fd, 10, 10)])
            assert e.value.errno == errno.EBADF
            # The context goes on after errors.
            assert ctx.read(datafile.fd, 10, 0) == datafile.data[:10]
            with pytest.raises(ValueError):
                ctx.read(datafile.fd, -1, 0)
    finally:
        os.close(wronly)
        os.close(dirfd)


def test_close_and_reuse(datafile):
    ctx = fsaio.Context(queue_depth=8, workers=2, backend="threads")
    assert ctx.queue_depth == 8 and not ctx.closed
    assert ctx.read(datafile.fd, 10, 0) == datafile.data[:10]
    ctx.close()
    assert ctx.closed
    ctx.close()
    with pytest.raises(ValueError):
        ctx.read(datafile.fd, 10, 0)
    with pytest.raises(ValueError):
        ctx.stats()


def test_bad_parameters():
    for kwargs in ({"queue_depth": 0}, {"workers": 2000}, {"backend": "fast"}):
        with pytest.raises(ValueError):
            fsaio.Context(**kwargs)


def test_stats_and_fadvise(datafile):
    with fsaio.Context() as ctx:
        datafile.hot()
        before = ctx.stats()
        ctx.read(datafile.fd, 4096, 0)
        after = ctx.stats()
        assert after["requests"] == before["requests"] + 1
        ctx.fadvise(datafile.fd, os.POSIX_FADV_RANDOM)
        with pytest.raises(OSError) as e:
            ctx.fadvise(datafile.fd, 12345)
        assert e.value.errno == errno.EINVAL

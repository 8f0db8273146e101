# SPDX-License-Identifier: MIT
"""fsaio.AsyncContext: hits done inside the call with no thread, misses
reaped through the eventfd, gather, cancellation, buffers held until their
event, and closing."""
from __future__ import annotations

import asyncio
import errno
import fcntl
import gc
import os
import threading

import pytest

import fsaio
from conftest import SETUP_TRIES

pytestmark = pytest.mark.asyncio


def os_threads() -> list[str]:
    return sorted(os.listdir("/proc/self/task"))


async def until(cond, what: str, timeout: float = 10.0) -> None:
    """Let the loop run until cond() holds."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not cond():
        if loop.time() > end:
            pytest.fail(f"timed out waiting for {what}")
        await asyncio.sleep(0.001)


async def test_hot_read_is_done_in_the_call_without_a_thread(datafile, monkeypatch):
    loop = asyncio.get_running_loop()

    def no_executor(*args, **kwargs):
        raise AssertionError("run_in_executor called")
    monkeypatch.setattr(loop, "run_in_executor", no_executor)
    for _ in range(SETUP_TRIES):
        datafile.hot()
        async with fsaio.AsyncContext() as ctx:
            threads, py_threads = os_threads(), threading.active_count()
            before = ctx.stats()
            fut = ctx.read(datafile.fd, 4096, 65536)
            if not fut.done():
                await fut               # evicted meanwhile: set up again
                continue
            # Done when the call returned: completed inside fsaio_submit,
            # in this thread; no thread started, no executor used.
            assert fut.result() == datafile.data[65536:69632]
            after = ctx.stats()
            assert after["completed_inline"] == before["completed_inline"] + 1
            assert after["pool_threads"] == 0
            assert os_threads() == threads
            assert threading.active_count() == py_threads
            assert loop._default_executor is None
            # Awaiting it does not go back to the loop either.
            assert await fut == datafile.data[65536:69632]
            return
    pytest.fail("the file never stayed in the page cache long enough")


async def test_cold_read_completes_through_the_eventfd(datafile, on_disk):
    loop = asyncio.get_running_loop()
    for _ in range(SETUP_TRIES):
        datafile.cold()
        async with fsaio.AsyncContext() as ctx:
            fut = ctx.read(datafile.fd, 65536, 1 << 20)
            if fut.done():
                continue                # the kernel had the page: set up again
            efd = ctx._efd
            assert os.readlink(f"/proc/self/fd/{efd}") == "anon_inode:[eventfd]"
            assert efd in loop._selector.get_map()
            assert await asyncio.wait_for(fut, 10) == datafile.data[1 << 20:(1 << 20) + 65536]
            return
    pytest.fail("the file never left the page cache")


async def test_each_wake_reaps_every_waiting_event(datafile, on_disk, monkeypatch):
    from fsaio import _engine
    calls = []
    real = _engine._getevents

    def counting(*args):
        n = real(*args)
        calls.append(n)
        return n
    monkeypatch.setattr(_engine, "_getevents", counting)
    offsets = range(0, 4 << 20, 128 * 1024)
    for _ in range(SETUP_TRIES):
        datafile.cold()
        async with fsaio.AsyncContext(queue_depth=64) as ctx:
            ctx.fadvise(datafile.fd, os.POSIX_FADV_RANDOM)   # no readahead across the file
            wakes = []
            on_readable = ctx._on_readable

            def wake():
                mark = len(calls)
                on_readable()
                wakes.append(calls[mark:])
            ctx._on_readable = wake
            futs = [ctx.read(datafile.fd, 4096, off) for off in offsets]
            await asyncio.sleep(0)      # the loop's turn ends: all are submitted
            pending = sum(not f.done() for f in futs)
            got = await asyncio.wait_for(asyncio.gather(*futs), 10)
        assert got == [datafile.data[off:off + 4096] for off in offsets]
        if pending:
            break
        # Every read completed while it was submitted (the disk answered
        # before the loop could wait): set up again.
    else:
        pytest.fail("the reads never waited for the disk")
    # A request left in flight is reaped by a wake-up; each makes one
    # fsaio_getevents call (the event array is never full here), which
    # takes what is there. (A wake-up may find nothing: a submit earlier
    # in the same turn of the loop reaps too.)
    assert wakes
    assert all(len(w) == 1 for w in wakes), wakes
    assert sum(sum(w) for w in wakes) >= 1


async def test_reads_of_a_missing_fd_are_submitted_together(datafile, on_disk, monkeypatch):
    from fsaio import _engine
    calls = []
    real = _engine._submit

    def counting(ctx, reqs, nr):
        calls.append(nr)
        return real(ctx, reqs, nr)
    monkeypatch.setattr(_engine, "_submit", counting)
    offsets = range(0, 4 << 20, 64 * 1024)
    for _ in range(SETUP_TRIES):
        datafile.cold()
        async with fsaio.AsyncContext(queue_depth=128) as ctx:
            ctx.fadvise(datafile.fd, os.POSIX_FADV_RANDOM)
            first = ctx.read(datafile.fd, 4096, 8192)
            if first.done():
                continue                # the kernel had the page: set up again
            # It missed: the fd's next reads are gathered in this turn of
            # the loop and submitted in one call at its end.
            del calls[:]
            futs = [ctx.read(datafile.fd, 4096, off) for off in offsets]
            assert calls == [] and not any(f.done() for f in futs)
            got = await asyncio.wait_for(asyncio.gather(first, *futs), 10)
            assert got == [datafile.data[8192:12288]] + [datafile.data[off:off + 4096] for off in offsets]
            assert calls[0] == len(futs)
            # Cached again: once a batch's reads all complete in their call
            # (libfsaio itself sends some reads of an fd that kept missing
            # to its ring, and tries one in sixteen inline), the fd's reads
            # are submitted at once again, and done in the call.
            for i in range(200):
                if i % 16 == 0:
                    datafile.hot()
                fut = ctx.read(datafile.fd, 4096, i * 4096)
                if fut.done():
                    assert fut.result() == datafile.data[i * 4096:(i + 1) * 4096]
                    return
                await fut
            pytest.fail("the fd's reads never went back to being submitted at once")
    pytest.fail("the file never left the page cache")


async def test_gather_many_beyond_the_queue_depth(datafile, on_disk):
    offsets = [(i * 7919 * 512) % (len(datafile.data) - 3000) for i in range(500)]
    want = [datafile.data[off:off + 3000] for off in offsets]
    for state in ("hot", "cold"):
        getattr(datafile, state)()
        async with fsaio.AsyncContext(queue_depth=8) as ctx:
            got = await asyncio.wait_for(
                asyncio.gather(*(ctx.read(datafile.fd, 3000, off) for off in offsets)), 20)
        assert got == want, state


async def test_readinto_write_fsync(workdir, datafile):
    path = workdir / "out"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        async with fsaio.AsyncContext() as ctx:
            n = await ctx.write(fd, datafile.data[:100000], 0)
            assert n == 100000
            await ctx.fsync(fd)
            await ctx.fsync(fd, datasync=True)
            buf = bytearray(100001)
            assert await ctx.readinto(fd, buf, 0) == 100000
            assert buf[:100000] == datafile.data[:100000]
            writes = [ctx.write(fd, bytes([i]) * 10, 100000 + 10 * i) for i in range(20)]
            assert await asyncio.gather(*writes) == [10] * 20
        assert os.pread(fd, 200, 100000) == b"".join(bytes([i]) * 10 for i in range(20))
    finally:
        os.close(fd)


async def test_errors_are_oserror_with_errno(datafile, workdir):
    dirfd = os.open(workdir, os.O_RDONLY | os.O_DIRECTORY)
    closed = os.dup(datafile.fd)            # a number no fd holds
    os.close(closed)
    try:
        async with fsaio.AsyncContext() as ctx:
            # Refused at submit: the future carries the error, as a
            # coroutine would raise it when awaited.
            fut = ctx.read(closed, 10, 0)
            with pytest.raises(OSError) as e:
                await fut
            assert e.value.errno == errno.EBADF
            with pytest.raises(IsADirectoryError):
                await ctx.read(dirfd, 10, 0)
            res = await asyncio.gather(ctx.read(datafile.fd, 5, 0), ctx.write(datafile.fd, b"x", 0),
                                       return_exceptions=True)
            assert res[0] == datafile.data[:5]
            assert isinstance(res[1], OSError) and res[1].errno == errno.EBADF
    finally:
        os.close(dirfd)


def nonblocking_pipe() -> tuple[int, int]:
    r, w = os.pipe()
    for fd in (r, w):
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_NONBLOCK)
    return r, w


async def test_buffers_are_held_until_the_event():
    r, w = nonblocking_pipe()
    try:
        async with fsaio.AsyncContext() as ctx:
            buf = bytearray(8)
            fut = ctx.readinto(r, buf, 0)       # nothing to read yet: it waits
            assert not fut.done()
            with pytest.raises(BufferError):
                buf.extend(b"more")             # the engine holds it
            os.write(w, b"12345678")
            assert await asyncio.wait_for(fut, 10) == 8
            assert buf == b"12345678"
            buf.extend(b"!")                    # the caller's again

            # A write to a full pipe keeps its data alive with no other reference.
            filled = 0
            try:
                while True:
                    filled += os.write(w, b"f" * 65536)
            except BlockingIOError:
                pass
            payload = bytearray(os.urandom(100000))
            want = bytes(payload)
            fut = ctx.write(w, payload, 0)
            del payload
            gc.collect()
            got = bytearray()
            while len(got) < filled + len(want):
                try:
                    got += os.read(r, 1 << 16)
                except BlockingIOError:
                    await asyncio.sleep(0.001)
            assert await asyncio.wait_for(fut, 10) == len(want)
            assert bytes(got[filled:]) == want
    finally:
        os.close(r)
        os.close(w)


async def test_cancelling_a_future_cancels_its_request():
    r, w = nonblocking_pipe()
    try:
        async with fsaio.AsyncContext() as ctx:
            buf = bytearray(8)
            fut = ctx.readinto(r, buf, 0)
            assert not fut.done()
            fut.cancel()
            # The engine takes the waiting read back: its ECANCELED event
            # frees the slot and the buffer.
            await until(lambda: ctx.stats()["cancelled"] == 1, "the request's cancellation")
            await until(lambda: ctx._inflight == 0, "the cancelled request's event")
            buf.extend(b"resizable again")
            # A task cancelled while it awaits a read: the same.
            async def reader():
                return await ctx.read(r, 8, 0)
            task = asyncio.create_task(reader())
            await until(lambda: ctx._inflight == 1, "the task's read")
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            await until(lambda: ctx._inflight == 0, "the task's cancelled read")
            assert ctx.stats()["cancelled"] == 2
            os.write(w, b"later")
            assert await asyncio.wait_for(ctx.read(r, 8, 0), 10) == b"later"
    finally:
        os.close(r)
        os.close(w)


async def test_aclose_cancels_what_waits_and_awaits_what_runs(datafile, on_disk):
    r, w = nonblocking_pipe()
    try:
        datafile.cold()
        ctx = fsaio.AsyncContext()
        waiting = ctx.read(r, 8, 0)             # waits for readiness: cancellable
        reads = [ctx.read(datafile.fd, 4096, off) for off in range(0, 4 << 20, 1 << 20)]
        await asyncio.wait_for(ctx.aclose(), 10)
        assert ctx.closed
        with pytest.raises(OSError) as e:
            await waiting
        assert e.value.errno == errno.ECANCELED
        # Each read either finished with its data or was taken back.
        for off, fut in zip(range(0, 4 << 20, 1 << 20), reads):
            assert fut.done()
            if fut.exception() is None:
                assert fut.result() == datafile.data[off:off + 4096]
            else:
                assert fut.exception().errno == errno.ECANCELED
        await ctx.aclose()
        with pytest.raises(ValueError):
            ctx.read(datafile.fd, 10, 0)
    finally:
        os.close(r)
        os.close(w)


async def test_one_loop_only(datafile):
    ctx = fsaio.AsyncContext()
    try:
        await ctx.read(datafile.fd, 10, 0)

        def elsewhere():
            return asyncio.run(ctx.__aenter__())
        with pytest.raises(RuntimeError):
            await asyncio.get_running_loop().run_in_executor(None, elsewhere)
    finally:
        await ctx.aclose()

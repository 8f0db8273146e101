# SPDX-License-Identifier: MIT
"""AsyncContext: the asyncio API.

Each call returns an asyncio.Future. A read is submitted at once: a cache
hit completes inside fsaio_submit, in the calling thread, its future is
done when the call returns, and awaiting it does not even go back to the
event loop. A miss is carried by the engine (its io_uring ring or worker
threads); the context's eventfd, readable exactly while events wait, is
watched by the loop (loop.add_reader), and each wake-up reaps every
waiting event in one fsaio_getevents call. No thread of Python's is used,
and no executor.

Once a read of an fd has missed, the fd's reads are gathered instead: each
is prepared in the call and the loop submits all of them at the end of its
turn in one fsaio_submit (loop.call_soon), so that the engine sends the
misses to its ring, and the block layer to the disk, together rather than
one system call and one device notification each. A batch in which every
read of the fd hit the page cache puts the fd back to reads submitted at
once.

The eventfd is made, and watched, when the first request is left in
flight: a program whose reads all hit never has one, and its reads cost
no eventfd write and read each.

A context belongs to the event loop it is first used in.
"""
from __future__ import annotations

import asyncio
import ctypes
import functools
import threading
from typing import Any, Optional

from . import _engine, _lib
from ._engine import FDATASYNC, FSYNC, READ, READINTO, WRITE, Engine, error

_get_running_loop = asyncio.get_running_loop
_get_ident = threading.get_ident
# Where a request's fd is, in the requests' array seen as int32 words.
_FD_STRIDE = ctypes.sizeof(_lib.Req) // 4
_FD_WORD = _lib.Req.fd.offset // 4


class AsyncContext(Engine):
    """A libfsaio context for asyncio.

    ``async with fsaio.AsyncContext() as ctx: data = await ctx.read(fd, 4096, 0)``

    queue_depth is how many requests may be in flight at once (more wait
    their turn, in order), workers the most worker threads (0: the
    engine's default, FSAIO_WORKERS or 32), backend who carries a read
    miss: "auto" (None), "threads" or "uring".

    read, readinto, write and fsync return an asyncio.Future (awaitable,
    and accepted by asyncio.gather), done at once on a cache hit. Errors
    are OSError with the request's errno. Cancelling a future asks the
    engine to cancel its request; its buffer stays the engine's until the
    request's event either way.
    """

    def __init__(self, queue_depth: int = 256, workers: int = 0,
                 backend: Optional[str] = None) -> None:
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._thread = 0                    # the thread the loop runs in
        self._efd = -1
        self._idle: Optional[asyncio.Future] = None
        self._missing: set[int] = set()     # fds whose reads are gathered
        super().__init__(queue_depth, workers, backend)
        self._fd_words = memoryview(self._reqs).cast("B").cast("i")

    # -- the loop and the eventfd ----------------------------------------

    def _bind(self) -> asyncio.AbstractEventLoop:
        """The running loop, which must be the context's (the first one it
        was used in). Requests check only the thread, as asking asyncio
        for the running loop costs more than a cached read."""
        loop = _get_running_loop()
        if self._loop is None:
            self._loop = loop
            self._thread = _get_ident()
        elif loop is not self._loop:
            raise RuntimeError("an fsaio.AsyncContext is used from the event loop it started in")
        return loop

    def _watch(self) -> None:
        """Make the eventfd and have the loop reap when it is readable."""
        efd = _lib.fast.fsaio_event_fd(self._ctx)
        if efd < 0:
            raise error(efd)
        self._loop.add_reader(efd, self._on_readable)
        self._efd = efd

    def _unwatch(self) -> None:
        if self._efd >= 0:
            if not self._loop.is_closed():
                self._loop.remove_reader(self._efd)
            self._efd = -1

    def _on_readable(self) -> None:
        if self._ctx is not None:
            self._reap()

    # -- requests --------------------------------------------------------

    def _deliver(self, fut: asyncio.Future, value: Any, exc: Optional[BaseException]) -> None:
        if self._idle is not None and not self._inflight and not self._idle.done():
            self._idle.set_result(None)     # aclose() waits for this
        if fut.done():
            return                          # cancelled by whoever awaited it
        try:
            if exc is None:
                fut.set_result(value)
            else:
                fut.set_exception(exc)
        except RuntimeError:
            pass                            # its loop is closed: nobody can await it

    def _abandoned(self, fut: asyncio.Future) -> bool:
        return fut.done()

    def _abandon(self, slot: int, fut: asyncio.Future) -> None:
        """A future's done-callback: if it was cancelled while its request
        is in flight, ask the engine to cancel the request."""
        rec = self._records[slot]
        if fut.cancelled() and self._ctx is not None and rec is not None and rec[1] is fut:
            _lib.fast.fsaio_cancel(self._ctx, self._req_addr[slot])

    def _request(self, kind: int, fd: int, n: int, offset: int, buf: Any) -> asyncio.Future:
        loop = self._loop
        if loop is None or self._thread != _get_ident():
            loop = self._bind()
        fut = loop.create_future()
        if kind <= READINTO and fd in self._missing:
            slot = self._start(kind, fd, n, offset, buf, fut, defer=True)
            if slot >= 0 and len(self._deferred) == 1:
                loop.call_soon(self._flush_reads)
        else:
            slot = self._start(kind, fd, n, offset, buf, fut)
            if slot >= 0 and kind <= READINTO and not fut.done():
                self._missing.add(fd)       # it missed: gather the next ones
            if self._inflight and self._efd < 0:
                self._watch()
        if slot >= 0 and not fut.done():
            fut.add_done_callback(functools.partial(self._abandon, slot))
        return fut

    def _flush_reads(self) -> None:
        """The end of the loop's turn: submit the gathered reads in one
        call. An fd all of whose reads completed in it is read at once
        again."""
        slots = self._deferred
        if self._ctx is None or not slots:
            return
        fds = [self._fd_words[s * _FD_STRIDE + _FD_WORD] for s in slots]
        futs = [self._records[s][1] for s in slots]
        self._flush()
        hit: dict[int, bool] = {}
        for fd, fut in zip(fds, futs):
            hit[fd] = hit.get(fd, True) and fut.done() and not fut.cancelled()
        self._missing.difference_update(fd for fd, all_hit in hit.items() if all_hit)
        if self._inflight and self._efd < 0:
            self._watch()

    def read(self, fd: int, n: int, offset: int = 0) -> "asyncio.Future[bytes]":
        """Read up to n bytes of fd at offset, as os.pread: fewer at the
        end of the file."""
        if n < 0:
            raise ValueError("negative read size")
        return self._request(READ, fd, n, offset, None)

    def readinto(self, fd: int, buf: Any, offset: int = 0) -> "asyncio.Future[int]":
        """Read into buf (any writable, contiguous buffer) from fd at
        offset: the number of bytes read. buf must not be resized until
        the future is done."""
        return self._request(READINTO, fd, 0, offset, _engine._writable(buf))

    def write(self, fd: int, data: Any, offset: int = 0) -> "asyncio.Future[int]":
        """Write data (bytes or any contiguous buffer) to fd at offset:
        the number of bytes written (all of them on a regular file)."""
        return self._request(WRITE, fd, 0, offset, _engine._readable(data))

    def fsync(self, fd: int, datasync: bool = False) -> "asyncio.Future[None]":
        """Flush fd to its device as fsync(2), or fdatasync(2) with datasync."""
        return self._request(FDATASYNC if datasync else FSYNC, fd, 0, 0, None)

    # -- closing ---------------------------------------------------------

    async def aclose(self) -> None:
        """Close without blocking the loop: requests the engine can still
        take back (queued for a worker, waiting for readiness) complete
        with ECANCELED, the others are awaited and deliver their results,
        then the context is destroyed. Calling it again does nothing."""
        if self._ctx is None:
            return
        self._bind()
        self._cancel_all()
        self._reap()
        if self._inflight:
            if self._efd < 0:
                self._watch()
            self._idle = self._loop.create_future()
            await self._idle
            self._idle = None
        self._unwatch()
        self._destroy()

    def close(self) -> None:
        """Close, blocking until the requests that cannot be cancelled
        have finished (aclose() awaits them instead)."""
        if self._ctx is None:
            return
        self._unwatch()
        self._drain()

    async def __aenter__(self) -> "AsyncContext":
        self._bind()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __del__(self) -> None:
        try:
            if self._ctx is not None and self._loop is not None:
                self._unwatch()
        except Exception:
            pass
        super().__del__()

# SPDX-License-Identifier: MIT
"""Context: the blocking API, for scripts.

Each call submits its requests and waits for their events in
fsaio_getevents, with the GIL released; a cache hit has completed inside
fsaio_submit and waits for nothing. read_many() submits many reads in one
call and keeps them in flight at once, which is where the engine's batch
and its io_uring ring pay off over a loop of os.pread.
"""
from __future__ import annotations

from typing import Any, Iterable, Optional

from . import _engine
from ._engine import FDATASYNC, FSYNC, READ, READINTO, WRITE, Engine


class _Batch:
    """The results of one call's requests, filled in as their events come."""
    __slots__ = ("values", "errors", "left")

    def __init__(self, n: int) -> None:
        self.values: list[Any] = [None] * n
        self.errors: list[Optional[BaseException]] = [None] * n
        self.left = n


class Context(Engine):
    """A libfsaio context used by blocking calls.

    ``with fsaio.Context() as ctx: data = ctx.read(fd, 4096, 0)``

    queue_depth is how many requests may be in flight at once (more wait
    their turn), workers the most worker threads (0: the engine's default,
    FSAIO_WORKERS or 32), backend who carries a read miss: "auto" (None),
    "threads" or "uring". Use a context from one thread at a time.
    """

    def _deliver(self, target: Any, value: Any, exc: Optional[BaseException]) -> None:
        batch, i = target
        batch.values[i] = value
        batch.errors[i] = exc
        batch.left -= 1

    def _run(self, batch: _Batch) -> list[Any]:
        while batch.left:
            self._wait()
        for exc in batch.errors:
            if exc is not None:
                raise exc
        return batch.values

    def _one(self, kind: int, fd: int, n: int, offset: int, buf: Any) -> Any:
        batch = _Batch(1)
        self._start(kind, fd, n, offset, buf, (batch, 0))
        return self._run(batch)[0]

    def read(self, fd: int, n: int, offset: int = 0) -> bytes:
        """Read up to n bytes of fd at offset, as os.pread: fewer at the
        end of the file. Raises OSError with the request's errno."""
        if n < 0:
            raise ValueError("negative read size")
        return self._one(READ, fd, n, offset, None)

    def readinto(self, fd: int, buf: Any, offset: int = 0) -> int:
        """Read into buf (any writable, contiguous buffer) from fd at
        offset: the number of bytes read."""
        return self._one(READINTO, fd, 0, offset, _engine._writable(buf))

    def write(self, fd: int, data: Any, offset: int = 0) -> int:
        """Write data (bytes or any contiguous buffer) to fd at offset:
        the number of bytes written (all of them on a regular file)."""
        return self._one(WRITE, fd, 0, offset, _engine._readable(data))

    def fsync(self, fd: int, datasync: bool = False) -> None:
        """Flush fd to its device as fsync(2), or fdatasync(2) with datasync."""
        self._one(FDATASYNC if datasync else FSYNC, fd, 0, 0, None)

    def read_many(self, requests: Iterable[tuple[int, int, int]]) -> list[bytes]:
        """Read every (fd, n, offset) of requests with all of them in
        flight together (up to queue_depth at a time): their data, in the
        order given. Raises the first request's error, once all are done."""
        reqs = list(requests)
        if any(n < 0 for _, n, _ in reqs):
            raise ValueError("negative read size")
        batch = _Batch(len(reqs))
        for i, (fd, n, offset) in enumerate(reqs):
            self._start(READ, fd, n, offset, None, (batch, i), defer=True)
        self._flush()                       # one fsaio_submit for them all
        return self._run(batch)

    def close(self) -> None:
        """Let the requests still in flight finish or be cancelled (those
        the engine can still take back complete with ECANCELED), then
        destroy the context. Calling it again does nothing."""
        self._drain()

    def __enter__(self) -> "Context":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

# SPDX-License-Identifier: MIT
"""fsaio: asynchronous buffered-file I/O for Python, on libfsaio.

libfsaio tries each read in the calling thread without blocking first
(preadv2 with RWF_NOWAIT): what the page cache holds completes inside the
submit call, and what would block goes to the engine's io_uring ring or
worker threads.

    import asyncio, os, fsaio

    async def main():
        fd = os.open("data", os.O_RDONLY)
        async with fsaio.AsyncContext() as ctx:
            head, tail = await asyncio.gather(ctx.read(fd, 4096, 0),
                                              ctx.read(fd, 4096, 1 << 20))

    with fsaio.Context() as ctx:            # blocking, for scripts
        data = ctx.read(fd, 4096, 0)

Errors are OSError with the request's errno. The package loads
libfsaio.so.0 and libfsaio-ffi.so.0 by soname, or from the directories
of FSAIO_LIBRARY_PATH when it is set.
"""
from __future__ import annotations

from . import _lib
from ._async import AsyncContext
from ._sync import Context

__all__ = ["AsyncContext", "Context", "library_version", "library_path"]
__version__ = "0.2.0"


def library_version() -> str:
    """The loaded libfsaio's version, "MAJOR.MINOR.PATCH"."""
    return _lib.lib.fsaio_version().decode()


def library_path() -> str:
    """What libfsaio was loaded from: a path, or the soname the dynamic
    loader looked up."""
    return _lib.lib._name

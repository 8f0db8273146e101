# SPDX-License-Identifier: MIT
"""The part both contexts share: one libfsaio context, its request slots,
submitting and reaping.

What it owns: the C context, an array of queue_depth requests (struct
fsaio_req) that are never moved nor freed while the context lives, the
pointer arrays fsaio_submit reads them through, an event array to reap
into, and one record per slot of what the request in it holds.

Its rule: a slot is taken when a request is prepared and given back when
its event is reaped (or it fails before reaching the engine), never
earlier. The record keeps every buffer the engine may write or read (the
caller's readinto buffer, the write's data, the slot's own read buffer)
referenced, and exported through the buffer protocol, until then: a
bytearray cannot be resized nor freed under the engine. close() delivers
or cancels every request before fsaio_ctx_destroy, and the arrays go only
after it, so nothing is touched once it returns.

A request is submitted at once (_start), so that a cached read completes
inside that fsaio_submit call, or prepared and deferred (_start with
defer) to be submitted with the others in one call (_flush): libfsaio then
attempts the cached ones in one system call and hands the misses to its
io_uring ring in one more, where the block layer sends them to the disk
together. Requests beyond queue_depth wait in a backlog, in order, and are
submitted in batches as slots come back.

One thread at a time: a context is driven by the thread that uses it
(the event loop's, for AsyncContext). Subclasses say how a result reaches
its caller (_deliver) and whether anyone still waits for it (_abandoned).
"""
from __future__ import annotations

import collections
import ctypes
import errno
import os
from ctypes import addressof, byref, c_char, sizeof
from typing import Any, Optional

from . import _lib

# The kinds of request, and so what a completion returns.
READ, READINTO, WRITE, FSYNC, FDATASYNC = range(5)

# Reads up to this size use the slot's own buffer, kept for the next read;
# larger ones get a buffer of their own for the time of the request.
SLOT_BUFFER_MAX = 64 * 1024

_REQ_SIZE = sizeof(_lib.Req)
_PTR_SIZE = sizeof(ctypes.c_void_p)

_fast = _lib.fast
_ffi = _lib.ffi
_submit = _fast.fsaio_submit
_getevents = _fast.fsaio_getevents
_prep_pread = _ffi.fsaio_prep_pread
_prep_pwrite = _ffi.fsaio_prep_pwrite
_prep_fsync = _ffi.fsaio_prep_fsync
_prep_fdatasync = _ffi.fsaio_prep_fdatasync


def error(res: int) -> OSError:
    """A negative res as the OSError (subclass) of its errno."""
    return OSError(-res, os.strerror(-res))


def _writable(buf: Any) -> tuple[Any, int, int]:
    """A writable buffer's exported view, address and size."""
    view = memoryview(buf)
    if view.readonly:
        raise TypeError("readinto needs a writable buffer, not a read-only one")
    n = view.nbytes
    arr = (c_char * n).from_buffer(view)
    return arr, addressof(arr), n


def _readable(data: Any) -> tuple[Any, Any, int]:
    """What stands for a write's data: the object to keep, what the prep
    helper takes as its address, and its size in bytes."""
    if type(data) is bytes:
        return data, data, len(data)        # ctypes passes a pointer into it
    view = memoryview(data)
    if view.readonly:                       # not bytes, so copied once to bytes
        b = view.tobytes()
        return b, b, len(b)
    arr = (c_char * view.nbytes).from_buffer(view)
    return arr, addressof(arr), view.nbytes


class Engine:
    """One libfsaio context and its slots (see the module's docstring)."""

    def __init__(self, queue_depth: int = 256, workers: int = 0,
                 backend: Optional[str] = None) -> None:
        self._ctx: Optional[int] = None
        if not isinstance(queue_depth, int) or not 1 <= queue_depth <= 65536:
            raise ValueError(f"queue_depth must be an int from 1 to 65536, not {queue_depth!r}")
        if not isinstance(workers, int) or not 0 <= workers <= 1024:
            raise ValueError(f"workers must be an int from 0 (the default) to 1024, not {workers!r}")
        if backend is not None and backend not in _lib.BACKENDS:
            raise ValueError(f"backend must be one of {', '.join(_lib.BACKENDS)} or None, "
                             f"not {backend!r}")
        params = _lib.Params(queue_depth=queue_depth, workers=workers,
                             miss_backend=_lib.BACKENDS[backend] if backend else 0)
        ctxp = ctypes.c_void_p()
        ret = _lib.lib.fsaio_ctx_create(byref(params), byref(ctxp))
        if ret < 0:
            raise error(ret)
        self._ctx = ctxp.value
        self._depth = queue_depth
        self._reqs = (_lib.Req * queue_depth)()
        self._req0 = addressof(self._reqs)
        # Each slot's request and its entry in the pointer array submit takes.
        self._req_addr = [self._req0 + i * _REQ_SIZE for i in range(queue_depth)]
        self._ptrs = (ctypes.c_void_p * queue_depth)(*self._req_addr)
        ptr0 = addressof(self._ptrs)
        self._ptr_addr = [ptr0 + i * _PTR_SIZE for i in range(queue_depth)]
        # A batch's pointers, filled for each call of several requests.
        self._batch = (ctypes.c_void_p * queue_depth)()
        self._batch0 = addressof(self._batch)
        self._events = (_lib.Event * queue_depth)()
        self._ev0 = addressof(self._events)
        # The events as int64 words: user_data, req, res, res2 each.
        self._words = memoryview(self._events).cast("B").cast("q")
        self._zero = _lib.Timespec(0, 0)
        self._zero_addr = addressof(self._zero)
        self._free = list(range(queue_depth - 1, -1, -1))
        # Per slot: (kind, target, keep) while a request is in it, else None.
        self._records: list[Optional[tuple[int, Any, Any]]] = [None] * queue_depth
        # Per slot: its read buffer (a c_char array), its address and a view.
        self._rbuf: list[Any] = [None] * queue_depth
        self._raddr = [0] * queue_depth
        self._rview: list[Optional[memoryview]] = [None] * queue_depth
        self._inflight = 0                  # requests the engine holds
        self._deferred: list[int] = []      # slots prepared, to submit together
        self._backlog: collections.deque = collections.deque()

    # -- submitting ------------------------------------------------------

    def _read_buffer(self, slot: int, n: int) -> int:
        """The slot's own read buffer, grown to hold n bytes: its address."""
        buf = self._rbuf[slot]
        if buf is None or len(buf) < n:
            size = max(4096, (n + 4095) & ~4095)
            buf = (c_char * size)()
            self._rbuf[slot] = buf
            self._raddr[slot] = addressof(buf)
            self._rview[slot] = memoryview(buf).cast("B")
        return self._raddr[slot]

    def _prepare(self, slot: int, kind: int, fd: int, n: int, offset: int,
                 buf: Any, target: Any) -> None:
        """Fill the request in slot, and its record."""
        req = self._req_addr[slot]
        keep = None
        if kind == READ:
            if n <= SLOT_BUFFER_MAX:
                rbuf = self._rbuf[slot]
                addr = self._raddr[slot] if rbuf is not None and len(rbuf) >= n \
                    else self._read_buffer(slot, n)
            else:
                keep = (c_char * n)()
                addr = addressof(keep)
            _prep_pread(req, fd, addr, n, offset)
        elif kind == READINTO:
            keep, addr, n = buf
            _prep_pread(req, fd, addr, n, offset)
        elif kind == WRITE:
            keep, addr, n = buf
            _prep_pwrite(req, fd, addr, n, offset)
        elif kind == FSYNC:
            _prep_fsync(req, fd)
        else:
            _prep_fdatasync(req, fd)
        self._records[slot] = (kind, target, keep)

    def _start(self, kind: int, fd: int, n: int, offset: int, buf: Any, target: Any,
               defer: bool = False) -> int:
        """Submit a request and reap what is there (a cache hit is,
        already); or, with defer, prepare it for the next _flush. When
        every slot is taken it waits in the backlog. The slot it took, or
        -1 (the backlog, or refused: target has its error)."""
        if self._ctx is None:
            raise ValueError("I/O on a closed fsaio context")
        if self._backlog or not self._free:
            self._backlog.append((kind, fd, n, offset, buf, target))
            return -1
        slot = self._free.pop()
        self._prepare(slot, kind, fd, n, offset, buf, target)
        if defer:
            self._deferred.append(slot)
            return slot
        ret = _submit(self._ctx, self._ptr_addr[slot], 1)
        if ret != 1:
            self._finish(slot, ret if ret < 0 else -errno.EAGAIN)
            return -1
        self._inflight += 1
        self._reap()
        return slot

    def _submit_slots(self, slots: list[int]) -> None:
        """Submit the prepared requests of slots, in order, in as few
        fsaio_submit calls as they take: one, unless the engine refuses
        one of them, which then fails with its error."""
        batch, addr = self._batch, self._req_addr
        for i, slot in enumerate(slots):
            batch[i] = addr[slot]
        i, k = 0, len(slots)
        while i < k:
            ret = _submit(self._ctx, self._batch0 + i * _PTR_SIZE, k - i)
            if ret > 0:
                self._inflight += ret
                i += ret
            else:
                self._finish(slots[i], ret if ret < 0 else -errno.EAGAIN)
                i += 1

    def _flush(self) -> None:
        """Submit the deferred requests together, and reap."""
        slots, self._deferred = self._deferred, []
        if self._ctx is None:
            return
        live = []
        for slot in slots:
            if self._abandoned(self._records[slot][1]):
                self._records[slot] = None  # never reached the engine
                self._free.append(slot)
            else:
                live.append(slot)
        if live:
            self._submit_slots(live)
        self._reap()

    def _submit_backlog(self) -> None:
        """Move what the backlog holds into the free slots, and submit it."""
        backlog, free, slots = self._backlog, self._free, []
        while backlog and free:
            kind, fd, n, offset, buf, target = backlog.popleft()
            if self._abandoned(target):
                continue
            slot = free.pop()
            self._prepare(slot, kind, fd, n, offset, buf, target)
            slots.append(slot)
        if slots:
            self._submit_slots(slots)

    # -- reaping ---------------------------------------------------------

    def _finish(self, slot: int, res: int) -> None:
        """Give slot back and its result to whoever waits for it."""
        kind, target, keep = self._records[slot]
        self._records[slot] = None
        if res < 0:
            value, exc = None, error(res)
        elif kind == READ:
            view = self._rview[slot] if keep is None else memoryview(keep).cast("B")
            value, exc = view[:res].tobytes(), None
        elif kind >= FSYNC:
            value, exc = None, None
        else:
            value, exc = res, None
        # The record is gone: the buffer is the caller's again.
        self._free.append(slot)
        self._deliver(target, value, exc)

    def _take(self, min_nr: int, timeout: Optional[int], dll: Any) -> int:
        """One fsaio_getevents into the event array, each event finished:
        how many, or -errno."""
        n = dll.fsaio_getevents(self._ctx, min_nr, self._depth, self._ev0, timeout)
        if n > 0:
            self._inflight -= n
            words, req0, finish = self._words, self._req0, self._finish
            for i in range(0, 4 * n, 4):
                finish((words[i + 1] - req0) // _REQ_SIZE, words[i + 2])
        return n

    def _reap(self) -> None:
        """Finish every event that is there, without waiting, and submit
        from the backlog into the slots that came back. (_take's loop
        again, written out: this runs after every submit.)"""
        depth = self._depth
        while True:
            if self._inflight:
                n = _getevents(self._ctx, 0, depth, self._ev0, self._zero_addr)
                if n > 0:
                    self._inflight -= n
                    words, req0, finish = self._words, self._req0, self._finish
                    for i in range(0, 4 * n, 4):
                        finish((words[i + 1] - req0) // _REQ_SIZE, words[i + 2])
                    if n == depth:
                        continue            # the array was full: more may wait
            if not (self._backlog and self._free):
                return
            self._submit_backlog()

    def _wait(self) -> None:
        """Block (GIL released) until at least one event is there, and
        finish it with the others. A signal ends the wait early (-EINTR):
        its Python handler runs when this returns."""
        n = self._take(1, None, _lib.lib)
        if n < 0 and n != -errno.EINTR:
            raise error(n)
        self._reap()

    # -- what subclasses say ---------------------------------------------

    def _deliver(self, target: Any, value: Any, exc: Optional[BaseException]) -> None:
        raise NotImplementedError

    def _abandoned(self, target: Any) -> bool:
        """Whether nobody waits for target's result any more."""
        return False

    # -- the rest of the API ---------------------------------------------

    @property
    def closed(self) -> bool:
        """Whether close() has been called."""
        return self._ctx is None

    @property
    def queue_depth(self) -> int:
        """How many requests may be in flight at once."""
        return self._depth

    def stats(self) -> dict[str, int]:
        """The context's counters (struct fsaio_stats; see fsaio_get_stats(3))."""
        self._check_open()
        st = _lib.Stats()
        ret = _lib.lib.fsaio_get_stats(self._ctx, byref(st))
        if ret < 0:
            raise error(ret)
        return {name: getattr(st, name) for name in _lib.STATS_FIELDS}

    def fadvise(self, fd: int, advice: int) -> None:
        """Say how fd will be read: os.POSIX_FADV_NORMAL, _RANDOM or
        _SEQUENTIAL (see fsaio_fadvise(3)); the kernel is told as well."""
        self._check_open()
        ret = _lib.lib.fsaio_fadvise(self._ctx, fd, advice)
        if ret < 0:
            raise error(ret)

    def _check_open(self) -> None:
        if self._ctx is None:
            raise ValueError("I/O on a closed fsaio context")

    def _cancel_all(self) -> None:
        """Ask the engine to cancel every request in flight; those it can
        still take back (queued for a worker, waiting for readiness) come
        with -ECANCELED, the others finish. What never reached the engine
        (deferred, in the backlog) fails with ECANCELED at once."""
        deferred, self._deferred = self._deferred, []
        for slot in deferred:
            self._finish(slot, -errno.ECANCELED)
        while self._backlog:
            target = self._backlog.popleft()[5]
            self._deliver(target, None, error(-errno.ECANCELED))
        cancel = _fast.fsaio_cancel
        for slot, rec in enumerate(self._records):
            if rec is not None:
                cancel(self._ctx, self._req_addr[slot])

    def _destroy(self) -> None:
        ctx, self._ctx = self._ctx, None
        if ctx is not None:
            _lib.lib.fsaio_ctx_destroy(ctx)

    def _drain(self) -> None:
        """Cancel what can be, wait for the rest and destroy the context:
        every request has had its event when this returns."""
        if self._ctx is None:
            return
        try:
            self._cancel_all()
            while self._inflight:
                self._wait()
        finally:
            # Even so, destroy waits for what still runs: no buffer is
            # touched once it returns.
            self._destroy()

    def __del__(self) -> None:
        # The request and buffer arrays must outlive the C context.
        try:
            if self._ctx is not None:
                self._drain()
        except Exception:
            pass

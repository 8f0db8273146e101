# SPDX-License-Identifier: MIT
"""The C side: finding libfsaio.so.0 and libfsaio-ffi.so.0, and their types.

The structs mirror include/fsaio.h field by field (the tests compare them
with the header). The prep helpers are called in libfsaio-ffi, never
reimplemented here, so a request is filled exactly as a C caller's is.

Two handles are kept on libfsaio: ``lib`` (ctypes.CDLL) releases the GIL
around the call, for the calls that may wait (fsaio_getevents with a
timeout, fsaio_ctx_destroy); ``fast`` (ctypes.PyDLL) keeps it, for the
calls that never wait (prep, submit, a zero-timeout reap, cancel), where
letting the GIL go and taking it back would cost more than the call.
"""
from __future__ import annotations

import ctypes
import os
from ctypes import (POINTER, CFUNCTYPE, Structure, c_char_p, c_int, c_int32,
                    c_int64, c_size_t, c_uint, c_uint16, c_uint32, c_uint64, c_void_p)

SONAME = "libfsaio.so.0"
FFI_SONAME = "libfsaio-ffi.so.0"
ENV_PATH = "FSAIO_LIBRARY_PATH"

# enum fsaio_backend
BACKENDS = {"auto": 0, "threads": 1, "uring": 2}


class Req(Structure):
    """struct fsaio_req: 120 bytes, the caller's from its event on."""
    _fields_ = [
        ("user_data", c_void_p),
        ("buf", c_void_p),
        ("len", c_uint64),
        ("offset", c_int64),
        ("fd", c_int32),
        ("opcode", c_uint16),
        ("flags", c_uint16),
        ("rw_flags", c_int32),
        ("ioprio", c_uint16),
        ("reserved", c_uint16),
        ("next_", c_void_p),
        ("prev_", c_void_p),
        ("ctx_", c_void_p),
        ("done_", c_uint64),
        ("state_", c_uint32),
        ("method_", c_uint32),
        ("total_", c_uint64),
        ("run_fd_", c_uint64),
        ("hints_", c_uint64),
        ("exec_", c_uint64),
    ]


class Event(Structure):
    """struct fsaio_event: the kernel's struct io_event layout."""
    _fields_ = [
        ("user_data", c_void_p),
        ("req", c_void_p),
        ("res", c_int64),
        ("res2", c_int64),
    ]


COMPLETE = CFUNCTYPE(None, c_void_p, POINTER(Event))


class Params(Structure):
    """struct fsaio_params; zero means the engine's default."""
    _fields_ = [
        ("queue_depth", c_uint32),
        ("workers", c_uint32),
        ("flags", c_uint32),
        ("miss_backend", c_uint32),
        ("complete", COMPLETE),
        ("complete_arg", c_void_p),
        ("reserved", c_uint64 * 6),
    ]


# struct fsaio_stats, in the header's order: every counter a uint64_t.
STATS_FIELDS = (
    "requests", "completed_inline", "partial_inline", "queued", "retries",
    "bytes_inline", "bytes_worker", "pool_queue_len", "pool_threads",
    "probe_calls", "probe_cold", "cancelled", "readahead_calls",
    "prefetched_bytes", "stream_hits", "uring_submissions", "bytes_uring",
    "reaper_sleeps", "reaper_wakeups", "straight_to_ring",
    "ring_reaped_caller", "ring_reaped_thread", "blocking_inline",
    "batch_calls", "batch_requests", "batch_refused", "pool_collected",
)


class Stats(Structure):
    _fields_ = [(name, c_uint64) for name in STATS_FIELDS] + [("reserved", c_uint64 * 5)]


class Timespec(Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


def _candidates(soname: str) -> list[str]:
    """Where to load soname from: the directories of FSAIO_LIBRARY_PATH
    when it is set (and nowhere else), else the soname itself, which the
    dynamic loader looks up as for any program (LD_LIBRARY_PATH, the
    ld.so cache, the system's directories)."""
    dirs = os.environ.get(ENV_PATH)
    if not dirs:
        return [soname]
    return [os.path.abspath(os.path.join(d, soname)) for d in dirs.split(os.pathsep) if d]


def _load(soname: str, mode: type) -> ctypes.CDLL:
    tried = []
    for path in _candidates(soname):
        if os.sep in path and not os.path.exists(path):
            tried.append(f"{path}: no such file")
            continue
        try:
            return mode(path)
        except OSError as e:
            tried.append(str(e))
    raise ImportError(f"fsaio: cannot load {soname} ({'; '.join(tried)}); install libfsaio0, "
                      f"or set {ENV_PATH} to the directories that hold it "
                      f"(in a build tree: build/lib{os.pathsep}build/lib/ffi)")


def _declare(dll: ctypes.CDLL, name: str, restype, argtypes) -> None:
    fn = getattr(dll, name)
    fn.restype = restype
    fn.argtypes = argtypes


def _bind_lib(lib: ctypes.CDLL) -> None:
    try:
        _declare(lib, "fsaio_version", c_char_p, [])
        _declare(lib, "fsaio_version_check", c_int, [c_int, c_int])
    except AttributeError:
        raise ImportError(f"fsaio: {lib._name} is older than 0.2, which this package needs") from None
    _declare(lib, "fsaio_ctx_create", c_int, [POINTER(Params), POINTER(c_void_p)])
    _declare(lib, "fsaio_ctx_destroy", c_int, [c_void_p])
    _declare(lib, "fsaio_submit", c_int, [c_void_p, c_void_p, c_uint])
    _declare(lib, "fsaio_getevents", c_int, [c_void_p, c_uint, c_uint, c_void_p, c_void_p])
    _declare(lib, "fsaio_cancel", c_int, [c_void_p, c_void_p])
    _declare(lib, "fsaio_event_fd", c_int, [c_void_p])
    _declare(lib, "fsaio_get_stats", c_int, [c_void_p, POINTER(Stats)])
    _declare(lib, "fsaio_fadvise", c_int, [c_void_p, c_int, c_int])


def _bind_ffi(ffi: ctypes.CDLL) -> None:
    # Buffers go as addresses (int) or bytes objects, both taken by c_void_p.
    for name in ("fsaio_prep_pread", "fsaio_prep_pwrite"):
        _declare(ffi, name, None, [c_void_p, c_int, c_void_p, c_size_t, c_int64])
    for name in ("fsaio_prep_fsync", "fsaio_prep_fdatasync"):
        _declare(ffi, name, None, [c_void_p, c_int])


lib = _load(SONAME, ctypes.CDLL)
fast = _load(SONAME, ctypes.PyDLL)
ffi = _load(FFI_SONAME, ctypes.PyDLL)
_bind_lib(lib)
_bind_lib(fast)
_bind_ffi(ffi)
# The API this package calls is 0.2's (fsaio_version came with it).
if not lib.fsaio_version_check(0, 2):
    raise ImportError(f"fsaio: {lib._name} is version {lib.fsaio_version().decode()}, "
                      "0.2 or later needed")

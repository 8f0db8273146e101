#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""asyncio_reads: random 4k reads from asyncio, hot and cold, through the
fsaio package, aiofiles and loop.run_in_executor(None, os.pread, ...).

    asyncio_reads.py [--build DIR] [--dir DIR] [--size 256m] [--reps 5]
                     [--runtime 1.0] [--ramp 0.2] [--depth 32]
                     [--methods fsaio,aiofiles,executor] [--aa fsaio]
                     [--cache hot,cold] [--keep]

Each method runs the same loop: DEPTH coroutines, each awaiting one 4 KiB
read at a time at offsets taken in turn from one random permutation of the
file's blocks. Every read is checked (its length, and the block's first 8
bytes, which hold its offset). A pass is --ramp seconds of that loop,
unmeasured, then --runtime seconds measured: reads completed, wall time,
and CPU time and context switches of the whole process (getrusage, so
every thread counts: the executor's, libfsaio's, io_uring's io-wq).

Cold: before every cold pass the file is written back and dropped from the
page cache (fsync, posix_fadvise(POSIX_FADV_DONTNEED)), and the pass reads
each block at most once, so nothing it brought in is read again. Hot:
before every hot pass the file is read whole. Every fd (each aiofiles file
too) gets POSIX_FADV_RANDOM, as fio gives random jobs, so that the kernel's
readahead does not drag megabytes in on a miss.

The methods run one after the other within a repetition, in reverse order
on odd ones; the --aa method runs twice per repetition (an A/A pair, whose
spread says how far two runs of the same thing differ here). Figures are
medians over the repetitions. Each pass has an event loop of its own
(asyncio.run), so the executor's threads are started and joined inside it.

The file (asyncio-reads.dat in --dir, the current folder by default) is made
if absent and removed at the end, unless --keep or it was there before.
"""
from __future__ import annotations

import argparse
import asyncio
import ctypes
import importlib.util
import os
import random
import resource
import statistics
import struct
import sys
import time
from typing import Optional

BS = 4096
FILE_NAME = "asyncio-reads.dat"
TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Targets the fsaio package is measured against: hot, its reads/s over
# aiofiles' and its CPU per read over aiofiles'; cold, its reads/s.
HOT_SPEED, HOT_CPU, COLD_SPEED = 5.0, 0.3, 2.0


def size_arg(text: str) -> int:
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    try:
        if text[-1:].lower() in units:
            return int(float(text[:-1]) * units[text[-1].lower()])
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text}: not a size (e.g. 256m, 1g)") from None


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description="Random 4k reads from asyncio: fsaio, aiofiles, "
                                            "run_in_executor; hot and cold.")
    p.add_argument("--build", help="a libfsaio build directory to load the libraries from "
                                   "(sets FSAIO_LIBRARY_PATH to DIR/lib:DIR/lib/ffi)")
    p.add_argument("--dir", default=".", help="where the file goes (not tmpfs); default: here")
    p.add_argument("--size", type=size_arg, default=256 << 20, help="file size (default 256m)")
    p.add_argument("--reps", type=int, default=5, help="repetitions (default 5)")
    p.add_argument("--runtime", type=float, default=1.0, help="measured seconds a pass (default 1)")
    p.add_argument("--ramp", type=float, default=0.2, help="unmeasured seconds first (default 0.2)")
    p.add_argument("--depth", type=int, default=32, help="coroutines reading at once (default 32)")
    p.add_argument("--methods", default="fsaio,aiofiles,executor")
    p.add_argument("--aa", default="fsaio", help="the method run twice a repetition ('' for none)")
    p.add_argument("--cache", default="hot,cold")
    p.add_argument("--keep", action="store_true", help="keep the file at the end")
    a = p.parse_args()
    a.methods = [m for m in a.methods.split(",") if m]
    a.cache = [c for c in a.cache.split(",") if c]
    for m in a.methods:
        if m not in METHODS:
            p.error(f"--methods: {m}: not one of {', '.join(METHODS)}")
    for c in a.cache:
        if c not in ("hot", "cold"):
            p.error(f"--cache: {c}: not hot or cold")
    if a.aa and a.aa not in a.methods:
        p.error(f"--aa: {a.aa} is not among --methods")
    if a.size < BS * a.depth * 4 or a.reps < 1 or a.depth < 1 or a.runtime <= 0 or a.ramp < 0:
        p.error("--size, --reps, --depth, --runtime or --ramp out of range")
    return a


# -- the file -----------------------------------------------------------

def fs_type(path: str) -> str:
    path = os.path.realpath(path)
    best, kind = "", ""
    with open("/proc/self/mounts") as f:
        for line in f:
            mnt, typ = line.split()[1:3]
            if (path == mnt or path.startswith(mnt.rstrip("/") + "/")) and len(mnt) >= len(best):
                best, kind = mnt, typ
    return kind


def make_file(path: str, size: int) -> None:
    """Random bytes, each 4 KiB block starting with its offset (8 bytes)."""
    rng = random.Random(7)
    chunk = 1 << 20
    with open(path, "wb") as f:
        for start in range(0, size, chunk):
            n = min(chunk, size - start)
            buf = bytearray(rng.randbytes(n))
            for off in range(0, n - 7, BS):
                struct.pack_into("<q", buf, off, start + off)
            f.write(buf)
        f.flush()
        os.fsync(f.fileno())


class Cachestat(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint64) for n in
                ("cache", "dirty", "writeback", "evicted", "recently_evicted")]


class CachestatRange(ctypes.Structure):
    _fields_ = [("off", ctypes.c_uint64), ("len", ctypes.c_uint64)]


_libc = ctypes.CDLL(None, use_errno=True)
SYS_CACHESTAT = 451                     # x86-64 and the common table


def cached_share(path: str) -> Optional[float]:
    """The share of path's pages in the page cache (cachestat(2)), or None
    where the kernel has no cachestat."""
    fd = os.open(path, os.O_RDONLY)
    try:
        cs, rng = Cachestat(), CachestatRange(0, 0)
        if _libc.syscall(SYS_CACHESTAT, fd, ctypes.byref(rng), ctypes.byref(cs), 0) != 0:
            return None
        pages = (os.fstat(fd).st_size + 4095) // 4096
        return cs.cache / pages if pages else 1.0
    finally:
        os.close(fd)


def make_cold(path: str) -> Optional[float]:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    return cached_share(path)


def make_hot(path: str) -> Optional[float]:
    if cached_share(path) != 1.0:
        with open(path, "rb", buffering=0) as f:
            while f.read(1 << 20):
                pass
    return cached_share(path)


# -- the loop every method runs --------------------------------------------

class Offsets:
    """Offsets handed to the coroutines in turn: one random permutation of
    the blocks; cold passes end when it is used up, hot ones go round."""

    def __init__(self, nblocks: int, seed: int, once: bool) -> None:
        perm = list(range(nblocks))
        random.Random(seed).shuffle(perm)
        self.offsets = [b * BS for b in perm]
        self.pos = 0
        self.once = once

    def next(self) -> int:
        if self.pos == len(self.offsets):
            if self.once:
                return -1
            self.pos = 0
        off = self.offsets[self.pos]
        self.pos += 1
        return off


def check(data: bytes, off: int) -> None:
    if len(data) != BS or int.from_bytes(data[:8], "little") != off:
        raise SystemExit(f"asyncio_reads: wrong data at offset {off} ({len(data)} bytes)")


# Each method below opens what it reads through, then hands `phases` its
# worker: a coroutine that awaits one read at a time until the offsets run
# out or the clock passes `until`, which it reads every 16 reads (a cached
# read through fsaio never yields to the loop, so no other task could stop
# it), and returns its count.

async def fsaio_method(path: str, depth: int, phases):
    import fsaio
    fd = os.open(path, os.O_RDONLY)
    try:
        async with fsaio.AsyncContext(queue_depth=depth) as ctx:
            ctx.fadvise(fd, os.POSIX_FADV_RANDOM)
            read = ctx.read

            async def worker(offs: Offsets, until: float) -> int:
                n = 0
                while (off := offs.next()) >= 0:
                    check(await read(fd, BS, off), off)
                    n += 1
                    if not n & 15 and time.perf_counter() >= until:
                        break
                return n
            return await phases(worker)
    finally:
        os.close(fd)


async def aiofiles_method(path: str, depth: int, phases):
    import aiofiles
    files = [await aiofiles.open(path, "rb") for _ in range(depth)]
    try:
        for f in files:
            os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_RANDOM)
        free = list(files)

        async def worker(offs: Offsets, until: float) -> int:
            f = free.pop()                  # one file object per coroutine
            n = 0
            try:
                while (off := offs.next()) >= 0:
                    await f.seek(off)
                    check(await f.read(BS), off)
                    n += 1
                    if not n & 15 and time.perf_counter() >= until:
                        break
            finally:
                free.append(f)
            return n
        return await phases(worker)
    finally:
        for f in files:
            await f.close()


async def executor_method(path: str, depth: int, phases):
    fd = os.open(path, os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
    loop = asyncio.get_running_loop()
    pread = os.pread
    try:
        async def worker(offs: Offsets, until: float) -> int:
            n = 0
            while (off := offs.next()) >= 0:
                check(await loop.run_in_executor(None, pread, fd, BS, off), off)
                n += 1
                if not n & 15 and time.perf_counter() >= until:
                    break
            return n
        return await phases(worker)
    finally:
        os.close(fd)


METHODS = {"fsaio": fsaio_method, "aiofiles": aiofiles_method, "executor": executor_method}
NEEDS = {"fsaio": "fsaio", "aiofiles": "aiofiles"}     # the module a method imports


def available(name: str) -> Optional[str]:
    """None if the method can run here, else why not."""
    try:
        if name in NEEDS:
            __import__(NEEDS[name])
    except ImportError as e:
        return str(e)
    return None


def one_pass(method: str, path: str, offs: Offsets, a: argparse.Namespace) -> dict:
    """A pass of one method: ramp, then the measured window."""

    async def phases(worker) -> dict:
        depth = a.depth
        if a.ramp > 0:
            until = time.perf_counter() + a.ramp
            await asyncio.gather(*(worker(offs, until) for _ in range(depth)))
        r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
        until = t0 + a.runtime
        counts = await asyncio.gather(*(worker(offs, until) for _ in range(depth)))
        t1, r1 = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
        n = sum(counts)
        cpu = (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime)
        csw = (r1.ru_nvcsw + r1.ru_nivcsw) - (r0.ru_nvcsw + r0.ru_nivcsw)
        return {"reads": n, "secs": t1 - t0, "rate": n / (t1 - t0),
                "cpu_us": cpu / n * 1e6 if n else float("nan"), "csw": csw / n if n else float("nan")}

    return asyncio.run(METHODS[method](path, a.depth, phases))


# -- report ----------------------------------------------------------------

def k(x: float) -> str:
    return f"{x / 1000:.1f}k" if x >= 1000 else f"{x:.0f}"


def main() -> int:
    a = parse()
    if a.build:
        b = os.path.abspath(a.build)
        os.environ["FSAIO_LIBRARY_PATH"] = f"{b}/lib{os.pathsep}{b}/lib/ffi"
    if importlib.util.find_spec("fsaio") is None:     # not installed: the tree's
        sys.path.insert(0, os.path.join(TOP, "bindings", "python"))
    skipped = {m: why for m in a.methods if (why := available(m))}
    for m, why in skipped.items():
        print(f"asyncio_reads: {m}: not run ({why})", file=sys.stderr)
    methods = [m for m in a.methods if m not in skipped]
    if not methods:
        return 1
    aa = a.aa if a.aa in methods else ""
    labels = methods + ([aa + " (A/A)"] if aa else [])

    if fs_type(a.dir) in ("tmpfs", "ramfs"):
        print(f"asyncio_reads: {a.dir} is on {fs_type(a.dir)}: no page is ever cold there",
              file=sys.stderr)
        return 2
    path = os.path.join(a.dir, FILE_NAME)
    existed = os.path.exists(path) and os.path.getsize(path) >= a.size
    try:
        if not existed:
            make_file(path, a.size)
        size = os.path.getsize(path)
        nblocks = size // BS
        load0 = os.getloadavg()
        threads = min(32, (os.cpu_count() or 1) + 4)
        lib = ""
        if "fsaio" in methods:
            import fsaio
            lib = f"libfsaio {fsaio.library_version()} ({fsaio.library_path()}), "
        print(f"asyncio_reads: {size >> 20} MiB file {path}, random {BS // 1024}k reads, "
              f"{a.depth} coroutines, POSIX_FADV_RANDOM, {a.reps} reps x {a.runtime:g} s "
              f"(+{a.ramp:g} s ramp); {lib}Python {sys.version.split()[0]}, "
              f"default executor {threads} threads; load {load0[0]:.2f}")
        results: dict = {(c, lab): [] for c in a.cache for lab in labels}
        warn = []
        for rep in range(a.reps):
            order = labels if rep % 2 == 0 else labels[::-1]
            for cache in a.cache:
                for lab in order:
                    method = lab.split(" ")[0]
                    if cache == "cold":
                        share = make_cold(path)
                        if share is not None and share > 0.01:
                            warn.append(f"rep {rep} {lab}: {share:.1%} of the file cached "
                                        "at the start of a cold pass")
                    else:
                        share = make_hot(path)
                        if share is not None and share < 0.99:
                            warn.append(f"rep {rep} {lab}: only {share:.1%} of the file "
                                        "cached at the start of a hot pass")
                    # The same offsets for every method of a repetition.
                    offs = Offsets(nblocks, seed=2 * rep + (cache == "cold"), once=cache == "cold")
                    results[(cache, lab)].append(one_pass(method, path, offs, a))
        load1 = os.getloadavg()
    finally:
        if not existed and not a.keep and os.path.exists(path):
            os.unlink(path)

    med = {key: {f: statistics.median(r[f] for r in runs) for f in ("rate", "cpu_us", "csw")}
           for key, runs in results.items()}
    print(f"{'cache':<6} {'method':<14} {'reads/s':>9} {'CPU us/read':>12} {'csw/read':>9} "
          f"{'reps (reads/s)':>s}")
    for cache in a.cache:
        for lab in labels:
            m = med[(cache, lab)]
            reps = " ".join(k(r["rate"]) for r in results[(cache, lab)])
            print(f"{cache:<6} {lab:<14} {k(m['rate']):>9} {m['cpu_us']:>12.2f} {m['csw']:>9.3f} {reps}")
    for cache in a.cache:
        line = []
        if "fsaio" in methods:
            f = med[(cache, "fsaio")]
            for other in ("aiofiles", "executor"):
                if other in methods:
                    o = med[(cache, other)]
                    line.append(f"fsaio / {other} {f['rate'] / o['rate']:.2f}x reads/s "
                                f"at {f['cpu_us'] / o['cpu_us']:.2f}x CPU/read")
        if aa:
            pairs = [x["rate"] / y["rate"] for x, y in
                     zip(results[(cache, aa)], results[(cache, aa + " (A/A)")])]
            ratio = med[(cache, aa)]["rate"] / med[(cache, aa + " (A/A)")]["rate"]
            line.append(f"A/A {aa} {ratio:.2f}x (reps {min(pairs):.2f}-{max(pairs):.2f})")
        print(f"{cache}: " + "; ".join(line))
    if "fsaio" in methods and "aiofiles" in methods:
        for cache in a.cache:
            f, o = med[(cache, "fsaio")], med[(cache, "aiofiles")]
            speed, cpu = f["rate"] / o["rate"], f["cpu_us"] / o["cpu_us"]
            if cache == "hot":
                met = speed >= HOT_SPEED and cpu <= HOT_CPU
                want = f">= {HOT_SPEED:g}x aiofiles' reads/s at <= {HOT_CPU:g}x its CPU/read"
                got = f"{speed:.2f}x at {cpu:.2f}x"
            else:
                met = speed >= COLD_SPEED
                want = f">= {COLD_SPEED:g}x aiofiles' reads/s"
                got = f"{speed:.2f}x"
            print(f"target {cache}: {want}: {got}, {'met' if met else 'not met'}")
    for w in warn:
        print(f"warning: {w}")
    print(f"load {load0[0]:.2f} at the start, {load1[0]:.2f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Read a file in 64 KiB chunks, every chunk in flight at once: size and SHA-256."""
import asyncio
import hashlib
import os
import sys

import fsaio

CHUNK = 64 * 1024


async def main(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    size = os.fstat(fd).st_size
    async with fsaio.AsyncContext(queue_depth=64) as ctx:
        # A cached chunk is read inside ctx.read(); a cold one when the disk answers.
        chunks = await asyncio.gather(*(ctx.read(fd, CHUNK, off) for off in range(0, size, CHUNK)))
    os.close(fd)
    print(f"{path}: {size} bytes, sha256 {hashlib.sha256(b''.join(chunks)).hexdigest()}")


asyncio.run(main(sys.argv[1]))

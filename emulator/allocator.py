"""The broker process's memory behaviour made JVM-like. A JVM pre-touches its heap and reuses it, and Netty pools its
buffers, so in steady state a broker faults in no new anonymous pages: under a memory cgroup limit only the thread
that needs a new page-cache page (the put thread writing a fresh commitlog page) lands in reclaim. A Python process
keeps allocating and freeing: pymalloc unmaps empty arenas, glibc trims its heap top and serves large buffers (a
256 KiB socket read) from fresh mmaps, so any thread can fault and stall in reclaim.

`exec_jvm_like(argv)` re-executes the broker program once (same pid, same cgroups) with glibc's allocator tuned to
keep what it got: one arena (allocations happen under the GIL anyway), no trimming of the heap top, no mmap for
blocks below 32 MiB (socket reads of 256 KiB, HA batches), a top pad that grows the heap in 16 MiB steps. Python's
small-object allocator stays (`PYTHONMALLOC=malloc` would also keep its arenas, but cost 40 % of the send rate);
measured, its arenas are not unmapped and mapped again in steady state. Variables already set in the environment are kept. `pretouch_heap()` then touches the heap's first
`PRETOUCH_BYTES` and frees them (AlwaysPreTouch): later allocations reuse pages that are already there.
`benchmarks/emulator_page_faults.py` measures faults per second by mapping, with and without."""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

MARKER = "RMQ_EMULATOR_ALLOCATOR"
"""Set in the re-executed process (and inherited): the allocator environment is in place."""
DISABLE = "RMQ_EMULATOR_PYTHON_ALLOCATOR"
"""Set to 1 to keep Python's own allocator (for measurements)."""
MMAP_THRESHOLD = 32 << 20  # glibc's largest allowed value (HEAP_MAX_SIZE / 2 on 64-bit)
TRIM_THRESHOLD = 1 << 40
TOP_PAD = 16 << 20
PRETOUCH_BYTES = 16 << 20
PRETOUCH_BLOCK = 256 << 10
ALLOCATOR_ENV = {
    "MALLOC_ARENA_MAX": "1",
    "MALLOC_TRIM_THRESHOLD_": str(TRIM_THRESHOLD),
    "MALLOC_MMAP_THRESHOLD_": str(MMAP_THRESHOLD),
    "MALLOC_TOP_PAD_": str(TOP_PAD),
}


def allocator_env(environ: dict[str, str]) -> dict[str, str]:
    """`environ` with the allocator settings added where not already set, and the marker."""
    env = dict(environ)
    for key, value in ALLOCATOR_ENV.items():
        env.setdefault(key, value)
    env[MARKER] = "1"
    return env


def exec_jvm_like(module: str, argv: list[str]) -> None:
    """Re-execute `python -m <module> <argv>` with the allocator environment, unless that is done already (or
    disabled); returns only when nothing is to be done."""
    if os.environ.get(MARKER) == "1" or os.environ.get(DISABLE) == "1":
        return
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, "-m", module, *argv], allocator_env(dict(os.environ)))


def pretouch_heap(size: int = PRETOUCH_BYTES) -> int:
    """In the re-executed process: allocate `size` bytes from glibc's heap in blocks, write every page, free them.
    With trimming off the pages stay with the process. Returns the bytes touched (0 when not re-executed)."""
    if os.environ.get(MARKER) != "1":
        return 0
    libc = ctypes.CDLL(ctypes.util.find_library("c") or None)
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    blocks = []
    for _ in range(size // PRETOUCH_BLOCK):
        ptr = libc.malloc(PRETOUCH_BLOCK)
        if not ptr:
            break
        ctypes.memset(ptr, 0, PRETOUCH_BLOCK)
        blocks.append(ptr)
    for ptr in reversed(blocks):
        libc.free(ptr)
    return len(blocks) * PRETOUCH_BLOCK

"""Swap files: which swap areas are active, creating one (allocate, mkswap, swapon) and removing it (swapoff, rm)."""
from __future__ import annotations

import os

from faults.system.mounts import unescape_octal
from faults.system.tools import run_tool


def active_swaps() -> list[dict]:
    """Rows of /proc/swaps: path, type, size_bytes, used_bytes."""
    with open("/proc/swaps", encoding="utf-8") as f:
        rows = f.read().splitlines()[1:]
    out = []
    for row in rows:
        parts = row.split()
        if len(parts) >= 4:
            out.append({"path": unescape_octal(parts[0]), "type": parts[1], "size_bytes": int(parts[2]) * 1024,
                        "used_bytes": int(parts[3]) * 1024})
    return out


def is_active(path: str) -> bool:
    real = os.path.realpath(path)
    return any(s["path"] == real for s in active_swaps())


def create_swap_file(path: str, size_bytes: int) -> None:
    """Allocate `size_bytes` (no holes: swapon refuses sparse files), mode 600, mkswap, swapon."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.posix_fallocate(fd, 0, size_bytes)
    finally:
        os.close(fd)
    run_tool(["mkswap", path])
    run_tool(["swapon", path])


def remove_swap_file(path: str) -> str:
    """swapoff (brings swapped pages back to RAM) then delete. Idempotent."""
    done = []
    if is_active(path):
        run_tool(["swapoff", path], timeout_s=600)
        done.append("swapoff")
    if os.path.exists(path):
        os.unlink(path)
        done.append("removed")
    return ", ".join(done) or "already gone"

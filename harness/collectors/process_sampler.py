"""Per-node process figures with psutil: CPU %, RSS, swap, and storage read/write bytes per second, summed over the
node's main processes and all their descendants (an Apache broker is `sh mqbroker` -> `sh runbroker.sh` -> `java`)."""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import psutil

from faults.system.procs import blocked, swap_bytes_of_status


class ProcessSampler:
    """Figures of one node's process tree since the previous `sample()`."""

    def __init__(self, pids: Callable[[], list[int]]) -> None:
        self.pids = pids
        self._procs: dict[tuple[int, float], psutil.Process] = {}
        self._io: dict[tuple[int, float], tuple[int, int]] = {}
        self._last_t: float | None = None

    def _tree(self) -> list[psutil.Process]:
        out: dict[tuple[int, float], psutil.Process] = {}
        for pid in self.pids():
            try:
                root = psutil.Process(pid)
                for p in [root, *root.children(recursive=True)]:
                    key = (p.pid, p.create_time())
                    out[key] = self._procs.get(key, p)
            except psutil.Error:
                continue
        self._procs = out
        return list(out.values())

    def sample(self) -> dict[str, Any]:
        """`cpu_percent, rss_bytes, swap_bytes, read_bytes_per_s, write_bytes_per_s`; None when no process lives."""
        now = time.monotonic()
        procs = self._tree()
        if not procs:
            self._last_t = now
            return {"cpu_percent": None, "rss_bytes": None, "swap_bytes": None,
                    "read_bytes_per_s": None, "write_bytes_per_s": None}
        cpu = 0.0
        rss = swap = 0
        read_d = write_d = 0
        io_now: dict[tuple[int, float], tuple[int, int]] = {}
        for key, p in self._procs.items():
            try:
                with p.oneshot():
                    cpu += p.cpu_percent(None)
                    if blocked(p.pid):  # smaps would wait for its address-space lock: RSS and VmSwap from statm/status
                        rss += p.memory_info().rss
                        swap += swap_bytes_of_status(p.pid)
                    else:
                        mem = p.memory_full_info()
                        rss += mem.rss
                        swap += getattr(mem, "swap", 0)
                    io = p.io_counters()
            except psutil.Error:
                continue
            io_now[key] = (io.read_bytes, io.write_bytes)
            if key in self._io:
                read_d += max(0, io.read_bytes - self._io[key][0])
                write_d += max(0, io.write_bytes - self._io[key][1])
        dt = (now - self._last_t) if self._last_t is not None else None
        self._io, self._last_t = io_now, now
        return {"cpu_percent": cpu, "rss_bytes": rss, "swap_bytes": swap,
                "read_bytes_per_s": read_d / dt if dt else None,
                "write_bytes_per_s": write_d / dt if dt else None}

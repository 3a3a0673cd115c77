"""The machine's memory as `/proc/meminfo` reports it."""
from __future__ import annotations


def mem_total() -> int:
    """MemTotal in bytes."""
    with open("/proc/meminfo", encoding="ascii") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    raise OSError("no MemTotal in /proc/meminfo")

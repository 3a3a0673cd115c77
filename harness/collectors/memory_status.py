"""The brokers' memory as the kernel accounts it, taken with their thread dumps: for each broker process (the JVM,
or the emulator's broker), a stamped header and the `Vm*` lines of `/proc/<pid>/status`, appended to
`logs/<node>/memory-status.log` while the run goes on, as an operator runs `date; grep ^Vm /proc/<pid>/status`
during an incident. `VmSwap` is how much of the process is in swap now: the proof that a broker was swapping, which
neither RocketMQ's logs nor, on the emulator, a GC log give (`rmq-chaos diagnose`: `process_swapped`).

The text is read where the process runs: on the ssh backend the host's agent reads it (op `node_memory_status`).
"""
from __future__ import annotations

import datetime
from pathlib import Path

FILE = "memory-status.log"
STAMP_FORMAT = "%Y-%m-%d %H:%M:%S,%f"
"""The brokers' own log stamp (`2026-11-27 10:42:53,123`, local time), so a snapshot sorts among their lines."""


def status_text(pids: list[int], label: str) -> str:
    """One stamped block per process: `<time> /proc/<pid>/status (<name>, <label>)` and its `Vm*` lines; a process
    that ended in between gives none."""
    out = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as f:
                lines = f.read().splitlines()
        except OSError:
            continue
        name = next((line.split(None, 1)[1] for line in lines if line.startswith("Name:")), "?")
        stamp = datetime.datetime.now().strftime(STAMP_FORMAT)[:-3]
        out.append(f"{stamp} /proc/{pid}/status ({name}, {label})\n")
        out.extend(f"{line}\n" for line in lines if line.startswith("Vm"))
        out.append("\n")
    return "".join(out)


def append(logs_dir: Path, node: str, text: str) -> None:
    """Add a snapshot to the node's file in the run directory (written at once: a crash keeps what was taken)."""
    if not text:
        return
    dest = logs_dir / node
    dest.mkdir(parents=True, exist_ok=True)
    with open(dest / FILE, "a", encoding="utf-8") as f:
        f.write(text)

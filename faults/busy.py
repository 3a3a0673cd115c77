"""Unmounting a store that is still busy: a node process that was just killed may still hold it for a while (a
multi-threaded process whose main thread is already a zombie keeps its files and mappings until its last thread has
exited; a process blocked on the store exits late). `umount_when_free` retries the unmount for a bounded time,
polled, and meanwhile ends the holders that provably belong to the run (their `RMQ_CHAOS_TAG` is one of the run's
journal ids, or their pid and start time were recorded by it); anyone else's process is never touched, only named.
When the time is up the error says which processes hold the mount and why they were left."""
from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterable
from dataclasses import dataclass

from faults.errors import ToolError, UndoError
from faults.system import mounts
from faults.system.procs import ProcId, read_stat, tag_of

BUSY_TIMEOUT_S = 30.0
"""How long an unmount waits for the store's holders to be gone."""
RETRY_S = 0.1
SCAN_S = 1.0
"""Holders are looked up at most this often (a scan reads every process's open files)."""


@dataclass(frozen=True)
class Holder:
    """A process holding a mount: pid, command name, state letter, and whether the run owns it (and by what)."""

    pid: int
    start: int
    name: str
    state: str
    ours: str | None

    def describe(self) -> str:
        why = f"of this run ({self.ours})" if self.ours else "not of this run: left alone"
        return f"pid {self.pid} ({self.name}, state {self.state}, {why})"


def holders(mount: str, own_tags: Iterable[str] = (), own_procs: Iterable[ProcId] = ()) -> list[Holder]:
    """Processes with an open file, a mapping, a cwd or a root under `mount` (threads included: a zombie main
    thread's files are read through its live threads)."""
    prefix = os.path.realpath(mount).rstrip("/") + "/"
    tags, procs = set(own_tags), {p.pid: p for p in own_procs}
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        pid = int(name)
        if _holds(pid, prefix):
            st = read_stat(pid)
            if st is None:
                continue
            tag = tag_of(pid)
            ours = (f"tag {tag}" if tag in tags else
                    "recorded pid" if pid in procs and procs[pid].start == st[2] else None)
            found.append(Holder(pid, st[2], _comm(pid), st[0], ours))
    return found


def _holds(pid: int, prefix: str) -> bool:
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    for tid in tids[:1] if len(tids) == 1 else tids:
        base = f"/proc/{pid}/task/{tid}"
        links = [f"{base}/cwd", f"{base}/root"]
        try:
            links += [f"{base}/fd/{fd}" for fd in os.listdir(f"{base}/fd")]
        except OSError:
            pass
        for link in links:
            try:
                if (os.readlink(link) + "/").startswith(prefix):
                    return True
            except OSError:
                continue
        try:
            with open(f"{base}/maps", encoding="utf-8", errors="replace") as f:
                if any(prefix in line for line in f):
                    return True
        except OSError:
            pass
    return False


def _comm(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm", encoding="utf-8", errors="replace") as f:
            return f.read().strip()
    except OSError:
        return "?"


def umount_when_free(mount: str, own_tags: Iterable[str] = (), own_procs: Iterable[ProcId] = (),
                     timeout_s: float = BUSY_TIMEOUT_S) -> str:
    """Unmount `mount`; while it is busy, SIGKILL the holders the run owns and retry until `timeout_s`. Returns
    what happened; raises `UndoError` naming every holder (or none visible) when it is still busy."""
    tags, procs = set(own_tags), list(own_procs)
    start = time.monotonic()
    ended: set[int] = set()
    last: list[Holder] = []
    next_scan = start
    while True:
        try:
            mounts.umount(mount)
        except ToolError as err:
            if "busy" not in str(err):
                raise
            now = time.monotonic()
            if now - start >= timeout_s:
                who = "; ".join(h.describe() for h in last) or \
                    "no process holds a file in it (a reference the kernel has not dropped yet)"
                raise UndoError(f"umount {mount}: still busy after {timeout_s:g}s; held by: {who}") from None
            if now >= next_scan:
                last = holders(mount, tags, procs)
                for h in last:
                    if h.ours and h.pid not in ended and _kill(h):
                        ended.add(h.pid)
                next_scan = now + SCAN_S
            time.sleep(RETRY_S)
            continue
        waited = time.monotonic() - start
        if waited < RETRY_S:
            return "unmounted"
        note = f"; ended {len(ended)} process(es) of the run holding it" if ended else ""
        return f"unmounted after waiting {waited:.1f}s for its holders to be gone{note}"


def _kill(h: Holder) -> bool:
    """SIGKILL the holder if its pid still names the same process (no pid reuse since the scan)."""
    st = read_stat(h.pid)
    if st is None or st[2] != h.start:
        return False
    try:
        os.kill(h.pid, signal.SIGKILL)
        os.kill(h.pid, signal.SIGCONT)
    except ProcessLookupError:
        return False
    return True

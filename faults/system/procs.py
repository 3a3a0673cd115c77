"""Processes by identity: a pid together with its start time (so pid reuse is recognised), their state, signals,
the `RMQ_CHAOS_TAG` environment mark our spawned processes carry, and their swap figures."""
from __future__ import annotations

import os
import signal
import threading
import time
from dataclasses import dataclass
from functools import lru_cache

import psutil

TAG_ENV = "RMQ_CHAOS_TAG"
"""Environment variable that marks every process we spawn (inherited by its children); value: a journal entry id."""
SIGKILL_BIT = 1 << (signal.SIGKILL - 1)
POLL_S = 0.01
BLOCKED_READ_S = 1.0
"""How long `tag_of` waits for the environment of a process with a thread in D state."""


@lru_cache(maxsize=1)
def boot_id() -> str:
    with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
        return f.read().strip()


def read_stat(pid: int) -> tuple[str, int, int] | None:
    """(state letter, ppid, start time in clock ticks since boot) of a pid, or None when it does not exist."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    fields = raw[raw.rindex(b")") + 2:].split()
    return fields[0].decode(), int(fields[1]), int(fields[19])


def is_dying(pid: int) -> bool:
    """True when a SIGKILL is pending: the process is on its way out (the kernel also marks SIGKILL pending when
    any fatal signal is delivered), though one blocked in D state, e.g. on a frozen filesystem, may take long."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith(("ShdPnd:", "SigPnd:")) and int(line.split()[1], 16) & SIGKILL_BIT:
                    return True
    except (FileNotFoundError, ProcessLookupError):
        return True
    return False


@dataclass(frozen=True)
class ProcId:
    """One process: pid and start time (ticks since boot). JSON form: `[pid, start]`."""

    pid: int
    start: int

    @classmethod
    def of(cls, pid: int) -> ProcId | None:
        st = read_stat(pid)
        return cls(pid, st[2]) if st else None

    def state(self) -> str | None:
        """The state letter (R, S, D, T, t, Z, ...) or None when this process is gone (or the pid was reused)."""
        st = read_stat(self.pid)
        if st is None or st[2] != self.start:
            return None
        return st[0]

    def exists(self) -> bool:
        """Present and not a zombie (a zombie has released everything but its pid)."""
        s = self.state()
        return s is not None and s not in ("Z", "X")

    def alive(self) -> bool:
        """Present, not a zombie and not dying with a pending SIGKILL."""
        return self.exists() and not is_dying(self.pid)

    def signal(self, sig: int) -> bool:
        """Send `sig` if this is still the same process; True when sent."""
        if not self.exists():
            return False
        try:
            os.kill(self.pid, sig)
            return True
        except ProcessLookupError:
            return False

    def to_json(self) -> list[int]:
        return [self.pid, self.start]

    @classmethod
    def from_json(cls, data: list[int]) -> ProcId:
        return cls(int(data[0]), int(data[1]))


def proc_ids(pids: list[int]) -> list[ProcId]:
    return [p for p in (ProcId.of(pid) for pid in pids) if p is not None]


def with_descendants(pids: list[int]) -> list[ProcId]:
    """The processes and all their descendants (psutil), as identities."""
    seen: dict[int, ProcId] = {}
    for pid in pids:
        try:
            procs = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
        except psutil.NoSuchProcess:
            continue
        for p in procs:
            pid_ = ProcId.of(p.pid)
            if pid_ is not None:
                seen[p.pid] = pid_
    return list(seen.values())


def _blocked(pid: int) -> bool:
    """Whether a thread of the process is in uninterruptible sleep (D). Reading a process's `cmdline`, `environ` or
    `smaps` takes its address-space lock; a thread blocked in D state (a broker's on its frozen store) while that lock
    is held or wanted holds the reader for as long as it stays blocked: seen as a run hung in a `disk_freeze` window
    on a controller-mode slave (kernel stack `__access_remote_vm` under `proc_pid_cmdline_read`), and as a restart
    that waited 20 minutes in the scan for its tag while another run's store was frozen."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat", "rb") as f:
                if f.read().rpartition(b")")[2].split()[:1] == [b"D"]:
                    return True
        except OSError:
            continue
    return False


def _read_bounded(path: str, timeout_s: float) -> bytes | None:
    """The file's bytes, or None when the read did not finish within `timeout_s` (the reading thread is left to
    finish on its own: a daemon, blocked in the kernel until the lock it waits for is released)."""
    box: list[bytes | None] = [None]

    def read() -> None:
        try:
            with open(path, "rb") as f:
                box[0] = f.read()
        except OSError:
            pass

    t = threading.Thread(target=read, name="environ-read", daemon=True)
    t.start()
    t.join(timeout_s)
    return box[0]


def read_proc(pid: int, name: str) -> bytes | None:
    """`/proc/<pid>/<name>` for a file whose read takes the process's address-space lock (`cmdline`, `environ`,
    `smaps_rollup`): read directly, or with a bound when a thread of the process is in D state (`_blocked`); None
    when it is gone or the bounded read did not finish."""
    path = f"/proc/{pid}/{name}"
    if _blocked(pid):
        return _read_bounded(path, BLOCKED_READ_S)
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def cmdline_of(pid: int) -> list[str] | None:
    """The process's command line (`read_proc`), None when it cannot be read now."""
    raw = read_proc(pid, "cmdline")
    return None if raw is None else [a.decode(errors="replace") for a in raw.split(b"\0") if a]


def blocked(pid: int) -> bool:
    """Whether a thread of the process is in D state (then reading its address-space files may wait as long)."""
    return _blocked(pid)


def tag_of(pid: int) -> str | None:
    """The `RMQ_CHAOS_TAG` value in a process's environment, or None (also when a thread of it is blocked in D
    state and its environment cannot be read within a second: see `_blocked`)."""
    env = read_proc(pid, "environ")
    if env is None:
        return None
    key = TAG_ENV.encode() + b"="
    for item in env.split(b"\0"):
        if item.startswith(key):
            return item[len(key):].decode(errors="replace")
    return None


def tagged(tags: set[str] | str) -> list[ProcId]:
    """Live processes whose `RMQ_CHAOS_TAG` is one of `tags`."""
    wanted = {tags} if isinstance(tags, str) else set(tags)
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) != os.getpid():
            t = tag_of(int(name))
            if t is not None and t in wanted:
                p = ProcId.of(int(name))
                if p is not None and p.exists():
                    found.append(p)
    return found


def wait_gone(procs: list[ProcId], timeout_s: float, *, dying_is_gone: bool = True) -> list[ProcId]:
    """Poll until every process is gone (zombies count as gone; with `dying_is_gone`, so do processes with a fatal
    signal pending, such as one blocked in D state on a frozen filesystem); return those still there."""
    deadline = time.monotonic() + timeout_s
    while True:
        left = [p for p in procs if (p.alive() if dying_is_gone else p.exists())]
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(POLL_S)


def terminate(procs: list[ProcId], timeout_s: float = 5.0) -> list[ProcId]:
    """SIGTERM (+ SIGCONT so stopped ones see it), wait, then SIGKILL; returns processes that are dying but not
    yet gone (blocked in D state) -- an empty list when all are gone."""
    for p in procs:
        p.signal(signal.SIGTERM)
        p.signal(signal.SIGCONT)
    left = wait_gone(procs, timeout_s, dying_is_gone=False)
    for p in left:
        p.signal(signal.SIGKILL)
        p.signal(signal.SIGCONT)
    return wait_gone(left, 2.0, dying_is_gone=False)


def swap_bytes_of_status(pid: int) -> int:
    """`VmSwap` of /proc/<pid>/status in bytes (0 when gone): read without the address-space lock smaps takes."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            return next((int(line.split()[1]) * 1024 for line in f if line.startswith("VmSwap:")), 0)
    except (OSError, ValueError):
        return 0


def swap_bytes(pid: int) -> dict[str, int]:
    """`VmSwap` (private anonymous memory swapped out) and smaps `Swap` (includes swapped shared memory) in bytes."""
    out = {"vm_swap": 0, "smaps_swap": 0, "vm_rss": 0}
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmSwap:"):
                    out["vm_swap"] = int(line.split()[1]) * 1024
                elif line.startswith("VmRSS:"):
                    out["vm_rss"] = int(line.split()[1]) * 1024
        with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as f:
            for line in f:
                if line.startswith("Swap:"):
                    out["smaps_swap"] = int(line.split()[1]) * 1024
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        pass
    return out


def wchan(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/wchan", encoding="ascii") as f:
            return f.read().strip()
    except OSError:
        return ""

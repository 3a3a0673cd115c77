"""Cgroups of ours: v1 controllers mounted at /sys/fs/cgroup/<controller> or the v2 unified tree, our groups under
`<controller root>/rmq-chaos/<run>/<node>`, their knobs, their members, spawning into them, and removal."""
from __future__ import annotations

import errno
import os
import signal
import time
from collections.abc import Iterable
from dataclasses import dataclass

from faults.errors import FaultUnavailable, ToolError
from faults.system.procs import ProcId

OUR_DIR = "rmq-chaos"
"""Every cgroup we create lives below `<controller root>/rmq-chaos/`."""
NODE_CONTROLLERS = ("memory", "blkio", "freezer", "cpu")
"""The controllers a node's groups are made in (`harness.resources.cgroups`)."""
V2_NAMES = {"blkio": "io", "freezer": "freezer", "memory": "memory", "cpu": "cpu", "io": "io"}
REMOVE_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Hierarchy:
    version: int
    root: str


def _cgroup_mounts() -> list[tuple[str, str, set[str]]]:
    out = []
    with open("/proc/self/mounts", encoding="utf-8") as f:
        for line in f:
            src, target, fstype, opts = line.split()[:4]
            if fstype in ("cgroup", "cgroup2"):
                out.append((fstype, target, set(opts.split(","))))
    return out


def hierarchy(controller: str) -> Hierarchy | None:
    """Where `controller` is: a v1 hierarchy of its own, else the v2 tree if the controller is enabled there."""
    mounts = _cgroup_mounts()
    for fstype, target, opts in mounts:
        if fstype == "cgroup" and controller in opts:
            return Hierarchy(1, target)
    name = V2_NAMES.get(controller, controller)
    for fstype, target, _ in mounts:
        if fstype == "cgroup2":
            try:
                with open(os.path.join(target, "cgroup.controllers"), encoding="ascii") as f:
                    available = f.read().split()
            except OSError:
                continue
            if name in available or controller == "freezer":  # v2 freezing is cgroup.freeze, always present
                return Hierarchy(2, target)
    return None


def require(controller: str) -> Hierarchy:
    h = hierarchy(controller)
    if h is None:
        raise FaultUnavailable(f"cgroup controller {controller!r} is not mounted (neither v1 nor v2) on this machine")
    return h


def node_path(controller: str, run_id: str, node: str) -> str:
    h = require(controller)
    return os.path.join(h.root, OUR_DIR, run_id, node)


def run_dirs(run_id: str, controllers: Iterable[str]) -> list[str]:
    """The existing `<root>/rmq-chaos/<run_id>` directories of `controllers` (those mounted on this machine)."""
    found = []
    for controller in controllers:
        h = hierarchy(controller)
        if h is not None and os.path.isdir(path := os.path.join(h.root, OUR_DIR, run_id)):
            found.append(path)
    return found


def root_of(path: str) -> tuple[Hierarchy, str] | None:
    """The hierarchy holding `path` and the path relative to its root."""
    real = os.path.realpath(path)
    best = None
    for fstype, target, _ in _cgroup_mounts():
        if (real + "/").startswith(target.rstrip("/") + "/") and (best is None or len(target) > len(best[1])):
            best = (2 if fstype == "cgroup2" else 1, target)
    if best is None:
        return None
    return Hierarchy(*best), os.path.relpath(real, best[1])


def is_ours(path: str) -> bool:
    """True for an existing cgroup below `<root>/rmq-chaos/`."""
    found = root_of(path)
    return bool(found) and found[1].split("/")[0] == OUR_DIR and found[1] != OUR_DIR and os.path.isdir(path)


def version_of(path: str) -> int:
    found = root_of(path)
    if not found:
        raise FaultUnavailable(f"{path} is not in a mounted cgroup hierarchy")
    return found[0].version


def create(path: str) -> None:
    """mkdir -p, retried when a concurrent cleanup removes a parent in between."""
    for _ in range(5):
        try:
            os.makedirs(path, exist_ok=True)
            return
        except FileNotFoundError:
            time.sleep(0.01)
    os.makedirs(path, exist_ok=True)


def read(path: str, knob: str) -> str:
    with open(os.path.join(path, knob), encoding="ascii") as f:
        return f.read().strip()


def write(path: str, knob: str, value: str | int) -> None:
    """Write one value to a knob; errors name the file and value."""
    try:
        with open(os.path.join(path, knob), "w", encoding="ascii") as f:
            f.write(str(value))
    except OSError as e:
        raise ToolError(f"write {value!r} to {os.path.join(path, knob)}: {os.strerror(e.errno or errno.EIO)}") from e


def members(path: str) -> list[int]:
    try:
        return [int(x) for x in read(path, "cgroup.procs").split()]
    except FileNotFoundError:
        return []


def join_argv(dirs: list[str], argv: list[str]) -> list[str]:
    """An argv that first moves itself into each cgroup dir, then execs `argv` (so nothing runs outside them)."""
    script = ('n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1/cgroup.procs" || exit 126; shift; n=$((n-1)); done; '
              'exec "$@"')
    return ["/bin/sh", "-c", script, "sh", str(len(dirs)), *dirs, *argv]


def thaw(path: str) -> None:
    """Undo a cgroup freeze (v1 freezer.state or v2 cgroup.freeze) if this group has one."""
    if os.path.exists(os.path.join(path, "freezer.state")):
        write(path, "freezer.state", "THAWED")
    elif os.path.exists(os.path.join(path, "cgroup.freeze")):
        write(path, "cgroup.freeze", "0")


def remove(path: str) -> str:
    """Thaw, kill the members (they are ours: the group is below rmq-chaos/), rmdir, then rmdir empty parents up to
    and including `rmq-chaos`. Idempotent."""
    if not os.path.isdir(path):
        return "already gone"
    if not is_ours(path):
        if not os.path.isdir(path):
            return "already gone"  # removed meanwhile (is_ours looks at an existing directory only)
        raise ToolError(f"refusing to remove cgroup {path}: not below {OUR_DIR}/")
    try:
        children = sorted((d for d in os.listdir(path) if os.path.isdir(os.path.join(path, d))), reverse=True)
    except FileNotFoundError:
        return "already gone"
    for child in children:
        remove(os.path.join(path, child))
    thaw(path)
    deadline = time.monotonic() + REMOVE_TIMEOUT_S
    killed = 0
    while True:
        pids = members(path)
        if not pids:
            break
        for pid in pids:
            p = ProcId.of(pid)
            if p:
                killed += p.signal(signal.SIGKILL)
                p.signal(signal.SIGCONT)
        if time.monotonic() > deadline:
            raise ToolError(f"cgroup {path} still has members {pids} after SIGKILL")
        time.sleep(0.02)
    # EBUSY while the last members finish exiting (the kernel releases the group after them; on a busy machine
    # that took more than 2 s): retried until the same bound as the members' end
    deadline = time.monotonic() + REMOVE_TIMEOUT_S
    while True:
        try:
            os.rmdir(path)
            break
        except FileNotFoundError:
            break
        except OSError as e:
            if e.errno != errno.EBUSY:
                raise ToolError(f"rmdir {path}: {os.strerror(e.errno or errno.EIO)}") from e
            if time.monotonic() > deadline:
                raise ToolError(f"rmdir {path}: still busy after {REMOVE_TIMEOUT_S:g} s (members: "
                                f"{members(path) or 'none'})") from e
            time.sleep(0.02)
    _prune_parents(path)
    return f"removed (killed {killed})" if killed else "removed"


def _prune_parents(path: str) -> None:
    parent = os.path.dirname(path)
    found = root_of(parent)
    while found and found[1] != "." and found[1].split("/")[0] == OUR_DIR:
        try:
            os.rmdir(parent)
        except OSError:
            return
        parent = os.path.dirname(parent)
        found = root_of(parent)


def memory_files(path: str) -> dict[str, str]:
    """Knob names for the memory limit, its 'no limit' value and the usage, by cgroup version."""
    if version_of(path) == 1:
        return {"limit": "memory.limit_in_bytes", "unlimited": "-1", "usage": "memory.usage_in_bytes",
                "anon_stat": "total_rss"}
    return {"limit": "memory.max", "unlimited": "max", "usage": "memory.current", "anon_stat": "anon"}


def memory_stat(path: str) -> dict[str, int]:
    return {k: int(v) for k, v in (line.split() for line in read(path, "memory.stat").splitlines())}

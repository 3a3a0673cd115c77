"""Checks that a fault acts only on what the harness itself made: a node with a run id, cgroups below rmq-chaos/,
a store mount that an open journal entry created (never `/`), processes inside our cgroups or carrying our tag."""
from __future__ import annotations

import os

from faults.errors import FaultRefused, FaultUnavailable
from faults.journal import Journal
from faults.system import cgroupfs, mounts
from faults.system.procs import ProcId, tag_of
from faults.target import NodeTarget

STORE_KIND = "resource:loop_store"


def check_node(kind: str, target: NodeTarget, containers: bool = False) -> None:
    """Refuse targets without a run id, and container targets unless the fault acts on them (`containers`)."""
    if target.container and not containers:
        raise FaultUnavailable(f"{kind}: target {target.name} is a container ({target.container}); this fault "
                               f"has no Docker variant")
    if not target.run_id:
        raise FaultRefused(f"{kind}: target {target.name} has no run_id: not a node the harness manages")


def check_cgroup(kind: str, target: NodeTarget, controller: str) -> str:
    """The target's cgroup dir for `controller`, which must exist below rmq-chaos/."""
    path = target.cgroups.get(controller)
    if not path:
        raise FaultRefused(f"{kind}: node {target.name} has no {controller!r} cgroup "
                           f"(cgroups: {', '.join(target.cgroups) or 'none'})")
    if not cgroupfs.is_ours(path):
        raise FaultRefused(f"{kind}: cgroup {path} of node {target.name} is not one of ours "
                           f"(ours are below <controller>/{cgroupfs.OUR_DIR}/)")
    return path


def store_entry(journal: Journal, mount: str):
    real = os.path.realpath(mount)
    for e in journal.open_entries():
        if e.kind == STORE_KIND and os.path.realpath(e.data.get("mount", "")) == real:
            return e
    return None


def check_store(kind: str, target: NodeTarget, journal: Journal) -> mounts.Mount:
    """The node's store mount: not `/`, mounted, created by us (open journal entry), from a loop device of its image."""
    if not target.store_mount:
        raise FaultRefused(f"{kind}: node {target.name} has no store mount")
    real = os.path.realpath(target.store_mount)
    if real == "/":
        raise FaultRefused(f"{kind}: refusing the root filesystem")
    m = mounts.mount_at(real)
    if m is None:
        raise FaultRefused(f"{kind}: {real} (store of {target.name}) is not a mount point")
    entry = store_entry(journal, real)
    if entry is None:
        raise FaultRefused(f"{kind}: mount {real} was not created by the harness (no open journal entry in "
                           f"{journal.path}); refusing to touch it")
    backing = mounts.loop_backing_file(m.source) or ""
    if backing.removesuffix(" (deleted)") != os.path.realpath(entry.data.get("image", "")):
        raise FaultRefused(f"{kind}: {real} is mounted from {m.source}, not from the harness's image "
                           f"{entry.data.get('image')}")
    return m


def managed_tags(journal: Journal) -> set[str]:
    return {e.id for e in journal.open_entries() if e.kind.startswith("resource:")}


def check_pids(kind: str, target: NodeTarget, journal: Journal, procs: list[ProcId]) -> None:
    """Every process must be in one of our cgroups or carry the tag of an open resource entry of ours."""
    if not procs:
        raise FaultRefused(f"{kind}: node {target.name} has no running process")
    tags = None
    for p in procs:
        if _in_our_cgroup(p.pid):
            continue
        tags = managed_tags(journal) if tags is None else tags
        if tag_of(p.pid) in tags:
            continue
        raise FaultRefused(f"{kind}: pid {p.pid} of node {target.name} is neither in a cgroup below "
                           f"{cgroupfs.OUR_DIR}/ nor started by the harness; refusing to signal it")


def _in_our_cgroup(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cgroup", encoding="utf-8") as f:
            return any(line.rstrip("\n").split(":", 2)[2].startswith(f"/{cgroupfs.OUR_DIR}/") for line in f)
    except OSError:
        return False


def proc_ids_of(target: NodeTarget) -> list[ProcId]:
    """The node's main processes and their descendants, by identity."""
    from faults.system.procs import with_descendants

    return with_descendants(target.pids())


def check_relay(kind: str, target: NodeTarget, journal: Journal, control: str) -> None:
    """The relay behind `control` must be a process the harness started (an open resource:process entry)."""
    for e in journal.open_entries():
        argv = e.data.get("argv") or []
        if e.kind == "resource:process" and "faults.relay" in argv and control in argv:
            return
    raise FaultRefused(f"{kind}: HA relay {control} of node {target.name} was not started by the harness "
                       f"(no open journal entry in {journal.path})")

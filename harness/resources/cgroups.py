"""A node's cgroups: one group per controller at `<controller root>/rmq-chaos/<run>/<node>` (cgroup v1 here; the v2
tree where a controller lives there). Journaled: a dead run's groups are emptied and removed by cleanup."""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from faults.errors import FaultRefused
from faults.journal import Journal
from faults.system import cgroupfs
from faults.system.tools import require_root
from faults.undo import run_ops, undo_entry

KIND = "resource:cgroups"
DEFAULT_CONTROLLERS = cgroupfs.NODE_CONTROLLERS
NAME_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")


@dataclass
class NodeCgroups:
    run_id: str
    node: str
    paths: dict[str, str]
    entry_id: str
    journal: Journal = field(repr=False)

    @classmethod
    def create(cls, journal: Journal, run_id: str, node: str,
               controllers: tuple[str, ...] = DEFAULT_CONTROLLERS) -> NodeCgroups:
        """Create the node's group in each controller; `paths` maps controller -> dir (v2: the same dir for all)."""
        require_root("node cgroups")
        for what, value in (("run id", run_id), ("node name", node)):
            if not value or not set(value) <= NAME_CHARS or value.startswith("."):
                raise FaultRefused(f"cgroups: {what} {value!r} must be letters, digits, '-', '_' or '.'")
        paths = {c: cgroupfs.node_path(c, run_id, node) for c in controllers}
        dirs = sorted(set(paths.values()))
        entry = journal.begin(KIND, undo=[{"op": "cgroup_remove", "path": d} for d in dirs], run_id=run_id,
                              target=node, data={"paths": paths})
        try:
            for d in dirs:
                cgroupfs.create(d)
                if os.path.exists(os.path.join(os.path.dirname(d), "cgroup.subtree_control")):
                    _enable_v2(d, controllers)
        except BaseException:
            run_ops([{"op": "cgroup_remove", "path": d} for d in dirs])
            journal.done(entry, "rolled back")
            raise
        return cls(run_id, node, paths, entry, journal)

    @property
    def dirs(self) -> list[str]:
        return sorted(set(self.paths.values()))

    def set_memory_limit(self, limit_bytes: int | None) -> None:
        """Memory limit of the node (None: no limit)."""
        path = self.paths["memory"]
        files = cgroupfs.memory_files(path)
        cgroupfs.write(path, files["limit"], files["unlimited"] if limit_bytes is None else limit_bytes)

    def members(self) -> list[int]:
        return sorted({pid for d in self.dirs for pid in cgroupfs.members(d)})

    def destroy(self) -> list[dict]:
        """Kill remaining members, remove the groups and the empty run dirs above them. Idempotent."""
        return undo_entry(self.journal, self.entry_id) or []


def _enable_v2(path: str, controllers: tuple[str, ...]) -> None:
    """cgroup v2: enable the controllers on every level from the root's child down to the node's parent."""
    found = cgroupfs.root_of(path)
    if not found or found[0].version != 2:
        return
    root = found[0].root
    names = {cgroupfs.V2_NAMES.get(c, c) for c in controllers} - {"freezer"}
    parts = found[1].split("/")
    for level in [root] + [os.path.join(root, *parts[:i + 1]) for i in range(len(parts) - 1)]:
        for name in names:
            try:
                cgroupfs.write(level, "cgroup.subtree_control", f"+{name}")
            except Exception:  # noqa: BLE001 -- a controller not available in v2 stays off; the fault says so
                pass

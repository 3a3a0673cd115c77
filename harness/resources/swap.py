"""A swap file of ours (allocate, mkswap, swapon), journaled so a dead run's swap is switched off and deleted."""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from faults.errors import FaultRefused
from faults.journal import Journal
from faults.system import swapfiles
from faults.system.tools import require_root
from faults.undo import run_ops, undo_entry

KIND = "resource:swap_file"
MIN_SIZE = 40 << 10


@dataclass
class SwapFile:
    path: str
    size_bytes: int
    entry_id: str
    journal: Journal = field(repr=False)

    @classmethod
    def create(cls, journal: Journal, path: str, size_bytes: int, *, run_id: str = "") -> SwapFile:
        require_root("a swap file")
        path = os.path.realpath(path)
        if size_bytes < MIN_SIZE:
            raise FaultRefused(f"swap file {path}: size {size_bytes} B is below {MIN_SIZE} B")
        if os.path.exists(path):
            raise FaultRefused(f"swap file {path} already exists; refusing to overwrite it")
        undo = [{"op": "swapoff", "path": path}]
        entry = journal.begin(KIND, undo=undo, run_id=run_id, data={"path": path, "size_bytes": size_bytes})
        try:
            swapfiles.create_swap_file(path, size_bytes)
        except BaseException:
            run_ops(undo)
            journal.done(entry, "rolled back")
            raise
        return cls(path, size_bytes, entry, journal)

    def destroy(self) -> list[dict]:
        return undo_entry(self.journal, self.entry_id) or []

"""A node's store: an ext4 filesystem in an image file, on its own loop device, mounted with `errors=remount-ro`
(so an ext4 error turns it read-only as a failing disk does). Journaled: a dead run's store is unmounted, detached
and deleted by `rmq-chaos cleanup`."""
from __future__ import annotations

import os
from dataclasses import dataclass

from faults.errors import FaultRefused
from faults.journal import Journal
from faults.system import mounts
from faults.system.tools import require_root
from faults.undo import run_ops, undo_entry

KIND = "resource:loop_store"
DEFAULT_OPTIONS = "errors=remount-ro"
MIN_SIZE = 16 << 20


@dataclass
class LoopStore:
    image: str
    mount: str
    device: str
    size_bytes: int
    options: str
    entry_id: str
    journal: Journal

    @classmethod
    def create(cls, journal: Journal, image: str, mount: str, size_bytes: int, *, run_id: str = "", node: str = "",
               options: str = DEFAULT_OPTIONS, label: str = "rmq-store") -> LoopStore:
        """Make the image (sparse), mkfs.ext4, attach a loop device, mount it at `mount` (created if missing)."""
        require_root("a loop-mounted store")
        image, mount = os.path.realpath(image), os.path.realpath(mount)
        if size_bytes < MIN_SIZE:
            raise FaultRefused(f"loop store {image}: size {size_bytes} B is below {MIN_SIZE} B")
        if os.path.exists(image):
            raise FaultRefused(f"loop store {image}: the image file already exists; refusing to overwrite it")
        if mounts.mount_at(mount) is not None:
            raise FaultRefused(f"loop store: {mount} is already a mount point")
        if "errors=remount-ro" not in options.split(","):
            options = f"{options},errors=remount-ro" if options else "errors=remount-ro"
        made_dir = not os.path.exists(mount)
        undo = [{"op": "umount", "mount": mount, "image": image}, {"op": "loop_detach", "image": image},
                {"op": "rm", "path": image}]
        if made_dir:
            undo.append({"op": "rmdir", "path": mount})
        entry = journal.begin(KIND, undo=undo, run_id=run_id, target=node,
                              data={"image": image, "mount": mount, "options": options, "size_bytes": size_bytes})
        try:
            with open(image, "xb") as f:
                f.truncate(size_bytes)
            mounts.mkfs_ext4(image, label)
            device = mounts.loop_attach(image)
            os.makedirs(mount, exist_ok=True)
            mounts.mount(device, mount, "ext4", options)
        except BaseException:
            run_ops(undo)
            journal.done(entry, "rolled back")
            raise
        journal.update(entry, data={"device": device})
        return cls(image, mount, device, size_bytes, options, entry, journal)

    def destroy(self) -> list[dict]:
        """Unmount, detach, delete the image (and the mount point if we made it). Idempotent."""
        return undo_entry(self.journal, self.entry_id) or []

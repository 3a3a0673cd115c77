"""`StoreFault`: the base of the faults on a broker's own store (`disk_freeze`, `disk_throttle`, `readonly_fs`).
They need root, act on the master or the slave (a container node too: its store is a loop mount on this host), and
touch only a store the harness made (`guard.check_store`: mounted from the node's image, with an open journal
entry); each claims the store unless it says otherwise."""
from __future__ import annotations

import os
from typing import ClassVar

from faults import guard
from faults.base import Fault
from faults.system import mounts


class StoreFault(Fault):
    """A fault on `target.store_mount`; `check` leaves the store's mount in `self.store`."""

    target_roles: ClassVar[tuple[str, ...]] = ("master", "slave")
    CONTAINER_TARGETS: ClassVar[bool] = True
    NEEDS_ROOT: ClassVar[bool] = True
    store: mounts.Mount

    def check(self) -> None:
        super().check()
        self.store = guard.check_store(self.kind, self.target, self.journal)

    @property
    def mount(self) -> str:
        """The store's mount point, links resolved."""
        return os.path.realpath(self.target.store_mount or "")

    def claims(self) -> list[str]:
        return [f"store:{self.mount}"]

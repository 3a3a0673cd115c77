"""Who holds which role in a controller-mode cluster, asked at the moment it matters: the controller's SyncStateSet
of the broker set names the master (`masterAddress`); a slave is any other broker whose process is alive. A fault on
`master` or `slave` acts on the node that holds the role when it is applied (`resolve`); when no node holds it then,
`RoleNotHeld` says so in one line (the run fails, everything it made is taken away). With three standalone
controllers, `controller-leader` is the controller that leads their DLedger group then (`controller_nodes` maps each
controller's address to its node)."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from faults.errors import FaultRefused
from harness.scenario.controller_keys import CONTROLLER_LEADER
from remoting.client import RemotingClient
from remoting.controller_admin import ControllerAdmin
from remoting.controller_bodies import ReplicasInfo
from remoting.errors import RemotingError

ROLE_TARGETS = ("master", "slave")
ASK_TIMEOUT_MS = 1000


class RoleNotHeld(FaultRefused):
    """A fault targets a role that no node holds at that moment."""


@dataclass
class ControllerRoles:
    """The roles of the brokers `broker_addrs` (node -> address) of broker set `broker_name`, from `controllers`."""

    controllers: list[str]
    broker_name: str
    broker_addrs: Mapping[str, str]
    alive: Callable[[str], bool]
    controller_nodes: Mapping[str, str] = field(default_factory=dict)
    admin: ControllerAdmin = field(default_factory=lambda: ControllerAdmin(RemotingClient()))

    def sync_state(self) -> ReplicasInfo | None:
        """The broker set's entry of the controller leader's replicas table (None: no controller answers)."""
        for addr in self.controllers:
            try:
                info = self.admin.get_sync_state_data(addr, [self.broker_name], ASK_TIMEOUT_MS)
            except (RemotingError, OSError):
                continue
            return info.get(self.broker_name)
        return None

    def node_of(self, addr: str | None) -> str | None:
        return next((n for n, a in self.broker_addrs.items() if a == addr), None)

    def master(self) -> str | None:
        """The node the controller names master, if its process is alive."""
        info = self.sync_state()
        node = self.node_of(info.master_address) if info else None
        return node if node is not None and self.alive(node) else None

    def controller_leader(self) -> str | None:
        """The standalone controller whose DLedger group names it leader now, if its process is alive."""
        for addr, node in self.controller_nodes.items():
            if not self.alive(node):
                continue
            try:
                meta = self.admin.get_controller_metadata(addr, ASK_TIMEOUT_MS)
            except (RemotingError, OSError):
                continue
            leader = self.controller_nodes.get(meta.leader_address or "")
            if leader is not None and self.alive(leader):
                return leader
        return None

    def resolve(self, target: str) -> str:
        """The node a fault on `target` acts on now (`master`/`slave`/`controller-leader` resolved, any other name
        as it is)."""
        if target == CONTROLLER_LEADER:
            leader = self.controller_leader()
            if leader is None:
                alive = [n for n in self.controller_nodes.values() if self.alive(n)]
                raise RoleNotHeld(f"fault target {target!r}: no controller is the DLedger group's leader now "
                                  f"(controllers alive: {', '.join(alive) or 'none'}); allowed: a role a node holds "
                                  "when the fault is applied")
            return leader
        if target not in ROLE_TARGETS:
            return target
        master = self.master()
        if target == "master":
            holders = [master] if master else []
        else:
            holders = [n for n in self.broker_addrs if n != master and self.alive(n)]
        if not holders:
            alive = [n for n in self.broker_addrs if self.alive(n)]
            raise RoleNotHeld(f"fault target {target!r}: no node holds the {target} role now (controller's master: "
                              f"{master or 'none'}; brokers alive: {', '.join(alive) or 'none'}); allowed: a role a "
                              "node holds when the fault is applied")
        return holders[0]

    def close(self) -> None:
        self.admin.client.shutdown()

"""What a backend does the same way in master_slave mode (`cluster.mode: master_slave`, the default), wherever its
nodes run: each broker group's master and slave hold the roles the topology gives them for good (`brokerId` 0 and
1, `SYNC_MASTER` / `SLAVE`), so a fault's target names one node from the start, the read-back reads every member
under its role, and readiness is the topic's route naming every master, a probe SEND_OK and every slave caught up.

The backend holds one of these (`ClusterBackend.mode`) or a `ControllerMode` (harness/backends/controller_mode.py);
the two answer the same calls, so no backend has a class per mode. The mode reads the backend's `topology`,
`scenario`, `nodes`, `broker_addrs`, `namesrv_addr`, `rd` and `run_id`."""
from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from harness import brokerclient
from harness.backends.brokerconf import HOST, BrokerLayout, broker_properties, namesrv_properties
from harness.readback import ReadbackSource, read_back
from harness.topology import Member

READY_PROBE_TOPIC = "RMQ_CHAOS_READY"
Steps = Iterable[tuple[str, Callable[[], Any]]]


class MasterSlaveMode:
    name = "master_slave"
    start_one_by_one = False
    """A backend may start every node at once (compose's `up --wait`): readiness waits for each slave's catch-up."""

    def __init__(self, backend: Any) -> None:
        self.b = backend

    # --- placing: the conf of each node ---------------------------------------------------------------------------

    def dledger_nodes(self) -> tuple[str, ...]:
        """The nodes that need a DLedger port of their own (none: no controller)."""
        return ()

    def place_controllers(self, peer_ports: tuple[int, ...], hosts: tuple[str, ...] = ()) -> None:
        """Nothing to place: master_slave mode has no controller."""

    def namesrv_props(self, port: int, node_dir: Path) -> dict[str, Any]:
        return namesrv_properties(self.b.scenario.cluster, port)

    def controller_props(self, index: int, node_dir: Path) -> dict[str, Any]:
        raise AssertionError("master_slave mode has no controller")

    def broker_props(self, member: Member, listen: int, ha: int, store_root: Path, host: str | None = None,
                     ha_master: str | None = None) -> dict[str, Any]:
        """broker.conf of `member` on `host` (its slave's `haMasterAddress` when the HA relay sits on its path)."""
        layout = BrokerLayout(member.node, listen, ha, store_root, self.b.namesrv_addr,
                              ha_master if member.role == "slave" else None, host=host or HOST, group=member.group,
                              role=member.role)
        return broker_properties(self.b.scenario.cluster, layout)

    def nodes_made(self) -> None:
        """Nothing to ask: the roles are the topology's."""

    # --- starting and readiness ---------------------------------------------------------------------------------

    def start_in_order(self, start: Callable[[str], None], start_waiting: Callable[[str], None]) -> None:
        """Every node in the topology's order, each waited for but a slave (it needs its master up; readiness then
        waits for its catch-up)."""
        slaves = {m.node for m in self.b.topology.members if m.role == "slave"}
        for n in self.b.node_order:
            (start if n in slaves else start_waiting)(n)

    def masters(self) -> list[str]:
        return [m.node for m in self.b.topology.members if m.role == "master"]

    def check_ready(self, say: Callable[[str], None]) -> None:
        """The topic's route naming every group's master, a probe SEND_OK, every slave caught up with its master
        (also the proof that a cluster kept from an earlier run is healthy again: harness/cluster_reuse.py)."""
        b = self.b
        t = b.scenario.topic
        deadline = time.monotonic() + b.scenario.cluster.ready_timeout
        slaves = [m.node for m in b.topology.members if m.role == "slave"]
        say(f"cluster: waiting for the route of {t.name}, "
            + ("the slave's HA connection and its catch-up" if len(slaves) == 1 else
               f"the HA connections of {len(slaves)} slaves and their catch-up"))
        for master in self.masters():
            brokerclient.wait_route(b.namesrv_addr, t.name, b.broker_addrs[master], deadline)
        brokerclient.wait_probe_send_ok(b.namesrv_addr, READY_PROBE_TOPIC, deadline)
        for n in slaves:
            b.nodes[n].wait_caught_up(max(0.1, deadline - time.monotonic()))

    def start_samplers(self) -> None:
        """Nothing samples roles that never move."""

    def stop_samplers(self) -> None:
        """Nothing to stop."""

    def note(self) -> str:
        return ""

    # --- during the run -----------------------------------------------------------------------------------------

    def role_addrs(self) -> list[str]:
        """The brokers' addresses, the masters first (the consumers' admin calls: who lists a group's consumers,
        who answers GET_CONSUME_STATS)."""
        members = sorted(self.b.topology.members, key=lambda m: m.role != "master")
        return [self.b.broker_addrs[m.node] for m in members]

    def group_addrs(self) -> list[list[str]]:
        """Per broker group, its brokers' addresses, the master first: a consumer group's stats and consumers are
        asked of each group's brokers (a broker answers for its own queues)."""
        return [[self.b.broker_addrs[m.node] for m in sorted(g.members, key=lambda m: m.role != "master")]
                for g in self.b.topology.groups]

    def resolve_target(self, target: str) -> str:
        """The node a fault's target names (`broker-b/master` -> `broker-b-master`; a bare role with one group)."""
        return self.b.topology.static_node(target)

    def read_back(self, timeout_s: float) -> dict[str, int]:
        b = self.b
        sources = [ReadbackSource(m.role, m.group, b.broker_addrs[m.node]) for m in b.topology.members]
        return read_back(b.run_id, b.scenario.topic.name, b.scenario.topic.queues, sources,
                         brokerclient.read_queue, b.rd.layout.readback, timeout_s)

    # --- down ---------------------------------------------------------------------------------------------------

    def first_steps(self) -> Steps:
        """What goes before the backend's own teardown (nothing here)."""
        return ()

    def last_steps(self) -> Steps:
        """What goes after it (nothing here)."""
        return ()

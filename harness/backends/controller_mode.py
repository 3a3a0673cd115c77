"""What a backend does the same way in controller mode (RocketMQ 5.x, `cluster.mode: controller`), wherever its nodes
run (processes here, containers, processes on hosts): one controller group (embedded in the name server or three
standalone controllers) serves every broker set of the topology; each set's first broker is started alone until
the controller names it master, then the others; a `ControllerRoles` per set answers who holds which role now; a
`RoleSampler` per set writes each change of its roles to `events.jsonl` (with `group` when there are several sets).

Ready = the topic on every broker, its route naming every set's master, a probe SEND_OK and every slave in its set's
SyncStateSet. A fault on `master` / `slave` (`broker-b/master` with several sets) acts on the node holding the role
when it is applied (`resolve_target`); the read-back reads each set's live master and first live slave, each under
the role it holds then. The backend holds one of these as its `mode` (or a `MasterSlaveMode`, the same calls); it
reads the backend's `topology`, `scenario`, `nodes`, `broker_addrs`, `broker_nodes`, `namesrv_addr`, `rd`, `run_id`."""
from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness import brokerclient
from harness.backends import controller_conf as conf
from harness.backends.broker_checks import poll_until
from harness.backends.controller_roles import ControllerRoles
from harness.backends.errors import ClusterError
from harness.backends.master_slave_mode import READY_PROBE_TOPIC, Steps
from harness.collectors.roles import RoleSampler
from harness.readback import ReadbackSource, read_back
from harness.scenario.controller_keys import CONTROLLER_LEADER
from harness.topology import Member


class ControllerMode:
    name = "controller"
    start_one_by_one = True
    """The nodes start in `start_in_order`'s order: each set's first broker alone until the controller elects it."""

    def __init__(self, backend: Any) -> None:
        self.b = backend
        self.controller_nodes: tuple[str, ...] = backend.topology.controllers
        """`controller-0..2` (standalone); none when the controller is embedded in the name server."""
        self.ctl = conf.ControllerLayout(())
        self.roles: dict[str, ControllerRoles] = {}
        """Each broker set's roles, by its name."""
        self.samplers: list[RoleSampler] = []

    # --- placing: the conf of each node ---------------------------------------------------------------------------

    def dledger_nodes(self) -> tuple[str, ...]:
        """The nodes that need a DLedger port: the standalone controllers, or the name server with the embedded
        one."""
        return self.controller_nodes or ("namesrv",)

    def place_controllers(self, peer_ports: tuple[int, ...], hosts: tuple[str, ...] = ()) -> None:
        """The controllers' DLedger ports (in `dledger_nodes` order) and, across hosts, their hosts' addresses."""
        if self.b.use_relay():
            raise ClusterError("the HA relay (fault ha_link, cluster.ha_relay) is not placed in controller mode")
        self.ctl = conf.ControllerLayout(peer_ports, hosts=hosts)

    def namesrv_props(self, port: int, node_dir: Path) -> dict[str, Any]:
        return conf.namesrv_properties(self.b.scenario.cluster, port, self.ctl, node_dir)

    def controller_props(self, index: int, node_dir: Path) -> dict[str, Any]:
        return conf.controller_properties(self.b.scenario.cluster, index, self.ctl, node_dir)

    def broker_props(self, member: Member, listen: int, ha: int, store_root: Path, host: str | None = None,
                     ha_master: str | None = None) -> dict[str, Any]:
        return conf.broker_properties(self.b.scenario.cluster, listen, ha, store_root, self.b.namesrv_addr,
                                      self.ctl, member.group, host=host)

    def nodes_made(self) -> None:
        """A `ControllerRoles` per broker set, asking the controllers' DLedger ports."""
        b = self.b
        controller_nodes = dict(zip(self.ctl.addrs, self.controller_nodes, strict=False))  # none when embedded
        for g in b.topology.groups:
            self.roles[g.name] = ControllerRoles(self.ctl.addrs, g.name,
                                                 {m.node: b.broker_addrs[m.node] for m in g.members},
                                                 lambda n: bool(b.nodes[n].pids()), controller_nodes)

    # --- starting and readiness ---------------------------------------------------------------------------------

    def start_in_order(self, start: Callable[[str], None], start_waiting: Callable[[str], None]) -> None:
        """The name server (`start_waiting`: started and ready), the controllers (`start`: their group elects its
        leader once a majority is up), then each set's first broker until the controller names it master, then the
        set's others."""
        start_waiting("namesrv")
        for n in self.controller_nodes:
            start(n)
        for g in self.b.topology.groups:
            first = g.members[0].node
            start_waiting(first)
            deadline = time.monotonic() + self.b.scenario.cluster.ready_timeout
            poll_until(lambda g=g, first=first: self.roles[g.name].master() == first, deadline,
                       f"the controller did not elect {first} master", ClusterError)
            for m in g.members[1:]:
                start_waiting(m.node)

    def check_ready(self, say: Callable[[str], None]) -> None:
        """Each set's route, a probe SEND_OK, every set's SyncStateSet holding all its brokers (also the proof that a
        cluster kept from an earlier run is healthy again: harness/cluster_reuse.py)."""
        b = self.b
        t, c = b.scenario.topic, b.scenario.cluster
        deadline = time.monotonic() + c.ready_timeout
        say(f"cluster: waiting for the route of {t.name} and every slave in the SyncStateSet")
        for g in b.topology.groups:
            master = self.roles[g.name].master() or g.members[0].node
            brokerclient.wait_route(b.namesrv_addr, t.name, b.broker_addrs[master], deadline)
        brokerclient.wait_probe_send_ok(b.namesrv_addr, READY_PROBE_TOPIC, deadline)
        for g in b.topology.groups:
            roles, want = self.roles[g.name], len(g.members)
            poll_until(lambda r=roles, w=want: len((r.sync_state() or _NO_SET).in_sync_replicas) == w, deadline,
                       f"the SyncStateSet of {g.name} did not reach all {want} brokers", ClusterError)

    def start_samplers(self) -> None:
        """A role sampler per set, writing to the run's events (each writes the roles it finds first)."""
        b = self.b
        for g in b.topology.groups:
            sampler = RoleSampler(self.roles[g.name], b.namesrv_addr, b.scenario.topic.name, b.rd.event,
                                  None if b.topology.single else g.name)
            sampler.start()
            self.samplers.append(sampler)

    def stop_samplers(self) -> None:
        for sampler in self.samplers:
            sampler.stop()
        self.samplers.clear()

    def note(self) -> str:
        masters = ", ".join(g.members[0].node for g in self.b.topology.groups)
        return (f", controller {'in the name server' if not self.controller_nodes else 'x3'}, "
                f"master{'s' if len(self.b.topology.groups) > 1 else ''} {masters}")

    # --- during the run -----------------------------------------------------------------------------------------

    def role_addrs(self) -> list[str]:
        """Each set's master now (while the controller names a live one) first, then the other brokers in node
        order."""
        masters = [m for m in (r.master() for r in self.roles.values()) if m]
        order = masters + [n for n in self.b.broker_nodes if n not in masters]
        return [self.b.broker_addrs[n] for n in order]

    def group_addrs(self) -> list[list[str]]:
        """Per broker set, the master the controller names now (while it is alive) first, then its other brokers."""
        out = []
        for g in self.b.topology.groups:
            master = self.roles[g.name].master() if g.name in self.roles else None
            order = ([master] if master else []) + [m.node for m in g.members if m.node != master]
            out.append([self.b.broker_addrs[n] for n in order])
        return out

    def resolve_target(self, target: str) -> str:
        """The node a fault on `target` acts on now: `controller-leader`, a set's `master` / `slave` (the role's
        holder then) or one of its members (`broker-b/broker-1` -> `broker-b-1`); other targets as they are."""
        if target == CONTROLLER_LEADER:
            return next(iter(self.roles.values())).resolve(target)
        group, local = self.b.topology.split(target)
        if group is None:
            return target
        member = group.member(local)
        return member.node if member is not None else self.roles[group.name].resolve(local)

    def read_back(self, timeout_s: float) -> dict[str, int]:
        """Each set's live master and first live slave, each under the role it holds now (`master` / `slave`: the
        analysis's read-back nodes; with two slaves the second is not read, `readback_start` names who is)."""
        b = self.b
        sources = []
        for g in b.topology.groups:
            master = self.roles[g.name].master()
            live = [m.node for m in g.members if m.node != master and b.nodes[m.node].pids()]
            read = {"master": master, "slave": live[0] if live else None}
            b.rd.event("roles", master=master, at="readback", read=read,
                       **({} if b.topology.single else {"group": g.name}))
            sources += [ReadbackSource(role, g.name, b.broker_addrs[n]) for role, n in read.items() if n]
        return read_back(b.run_id, b.scenario.topic.name, b.scenario.topic.queues, sources,
                         brokerclient.read_queue, b.rd.layout.readback, timeout_s)

    # --- down ---------------------------------------------------------------------------------------------------

    def first_steps(self) -> Steps:
        """The role samplers, before the backend stops anything."""
        for sampler in list(self.samplers):
            yield f"role sampler of {sampler.roles.broker_name}", sampler.stop

    def last_steps(self) -> Steps:
        """The controller clients, after the backend's own steps."""
        for name, roles in self.roles.items():
            yield f"controller client of {name}", roles.close


class _NoSet:
    in_sync_replicas: tuple = ()


_NO_SET = _NoSet()

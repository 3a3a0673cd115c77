"""What a backend does the same way in controller mode (RocketMQ 5.x, `cluster.mode: controller`), wherever its nodes
run (`LocalControllerBackend` on this machine, the ssh backend on hosts): one controller group (embedded in the name
server or three standalone controllers) serves every broker set of the topology; each set's first broker is started
alone until the controller names it master, then the others; a `ControllerRoles` per set answers who holds which
role now; a `RoleSampler` per set writes each change of its roles to `events.jsonl` (with `group` when there are
several sets).

Ready = the topic on every broker, its route naming every set's master, a probe SEND_OK and every slave in its set's
SyncStateSet. A fault on `master` / `slave` (`broker-b/master` with several sets) acts on the node holding the role
when it is applied (`resolve_target`); the read-back reads each set's live master and first live slave, each under
the role it holds then. A backend mixes this in and provides `nodes`, `broker_addrs`, `topology`, `scenario`, `rd`."""
from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from harness import brokerclient
from harness.backends.base import READY_PROBE_TOPIC, ClusterError
from harness.backends.broker_checks import poll_until
from harness.backends.controller_roles import ControllerRoles
from harness.collectors.roles import RoleSampler
from harness.readback import ReadbackSource, read_back
from harness.scenario.controller_keys import CONTROLLER_LEADER


class ControllerMode:
    """Mixed into a `ClusterBackend` whose cluster is in controller mode."""

    nodes: dict[str, Any]
    broker_addrs: dict[str, str]
    topology: Any
    scenario: Any
    rd: Any
    namesrv_addr: str
    run_id: str
    broker_nodes: tuple[str, ...]

    def init_controller_mode(self) -> None:
        self.controller_nodes: tuple[str, ...] = self.topology.controllers
        self.roles: dict[str, ControllerRoles] = {}
        """Each broker set's roles, by its name."""
        self.samplers: list[RoleSampler] = []

    def make_roles(self, controller_addrs: list[str]) -> None:
        """A `ControllerRoles` per broker set, asking `controller_addrs` (the controllers' DLedger ports)."""
        controller_nodes = dict(zip(controller_addrs, self.controller_nodes, strict=False))  # none when embedded
        for g in self.topology.groups:
            self.roles[g.name] = ControllerRoles(controller_addrs, g.name,
                                                 {m.node: self.broker_addrs[m.node] for m in g.members},
                                                 lambda n: bool(self.nodes[n].pids()), controller_nodes)

    def start_in_order(self, start: Callable[[str], None], start_waiting: Callable[[str], None]) -> None:
        """The name server (`start_waiting`: started and ready), the controllers (`start`: their group elects its
        leader once a majority is up), then each set's first broker until the controller names it master, then the
        set's others."""
        start_waiting("namesrv")
        for n in self.controller_nodes:
            start(n)
        for g in self.topology.groups:
            first = g.members[0].node
            start_waiting(first)
            deadline = time.monotonic() + self.scenario.cluster.ready_timeout
            poll_until(lambda g=g, first=first: self.roles[g.name].master() == first, deadline,
                       f"the controller did not elect {first} master", ClusterError)
            for m in g.members[1:]:
                start_waiting(m.node)

    def wait_topic_ready(self, say: Callable[[str], None]) -> None:
        t, c = self.scenario.topic, self.scenario.cluster
        for n in self.broker_nodes:
            brokerclient.create_topic(self.broker_addrs[n], t.name, t.queues)
        deadline = time.monotonic() + c.ready_timeout
        say(f"cluster: waiting for the route of {t.name} and every slave in the SyncStateSet")
        for g in self.topology.groups:
            brokerclient.wait_route(self.namesrv_addr, t.name, self.broker_addrs[g.members[0].node], deadline)
        brokerclient.wait_probe_send_ok(self.namesrv_addr, READY_PROBE_TOPIC, deadline)
        for g in self.topology.groups:
            roles, want = self.roles[g.name], len(g.members)
            poll_until(lambda r=roles, w=want: len((r.sync_state() or _NO_SET).in_sync_replicas) == w, deadline,
                       f"the SyncStateSet of {g.name} did not reach all {want} brokers", ClusterError)
        for g in self.topology.groups:
            sampler = RoleSampler(self.roles[g.name], self.namesrv_addr, t.name, self.rd.event,
                                  None if self.topology.single else g.name)
            sampler.start()
            self.samplers.append(sampler)

    def controller_note(self) -> str:
        masters = ", ".join(g.members[0].node for g in self.topology.groups)
        return (f", controller {'in the name server' if not self.controller_nodes else 'x3'}, "
                f"master{'s' if len(self.topology.groups) > 1 else ''} {masters}")

    def role_addrs(self) -> list[str]:
        """Each set's master now (while the controller names a live one) first, then the other brokers in node
        order."""
        masters = [m for m in (r.master() for r in self.roles.values()) if m]
        order = masters + [n for n in self.broker_nodes if n not in masters]
        return [self.broker_addrs[n] for n in order]

    def group_addrs(self) -> list[list[str]]:
        """Per broker set, the master the controller names now (while it is alive) first, then its other brokers."""
        out = []
        for g in self.topology.groups:
            master = self.roles[g.name].master() if g.name in self.roles else None
            order = ([master] if master else []) + [m.node for m in g.members if m.node != master]
            out.append([self.broker_addrs[n] for n in order])
        return out

    def resolve_target(self, target: str) -> str:
        """The node a fault on `target` acts on now: `controller-leader`, a set's `master` / `slave` (the role's
        holder then) or one of its members (`broker-b/broker-1` -> `broker-b-1`); other targets as they are."""
        if target == CONTROLLER_LEADER:
            return next(iter(self.roles.values())).resolve(target)
        group, local = self.topology.split(target)
        if group is None:
            return target
        member = group.member(local)
        return member.node if member is not None else self.roles[group.name].resolve(local)

    def read_back(self, timeout_s: float) -> dict[str, int]:
        """Each set's live master and first live slave, each under the role it holds now (`master` / `slave`: the
        analysis's read-back nodes; with two slaves the second is not read, `readback_start` names who is)."""
        sources = []
        for g in self.topology.groups:
            master = self.roles[g.name].master()
            live = [m.node for m in g.members if m.node != master and self.nodes[m.node].pids()]
            read = {"master": master, "slave": live[0] if live else None}
            self.rd.event("roles", master=master, at="readback", read=read,
                          **({} if self.topology.single else {"group": g.name}))
            sources += [ReadbackSource(role, g.name, self.broker_addrs[n]) for role, n in read.items() if n]
        return read_back(self.run_id, self.scenario.topic.name, self.scenario.topic.queues, sources,
                         brokerclient.read_queue, self.rd.layout.readback, timeout_s)

    def ready_note(self) -> str:
        """The controller's note before the backend's own (mixed in before the backend: `super()` is the backend)."""
        return self.controller_note() + super().ready_note()  # type: ignore[misc]

    def teardown_steps(self) -> Iterable[tuple[str, Callable[[], Any]]]:
        """The role samplers first, then the backend's own steps, the controller clients last."""
        yield from self.sampler_steps()
        yield from super().teardown_steps()  # type: ignore[misc]
        yield from self.roles_steps()

    def sampler_steps(self) -> Iterable[tuple[str, Callable[[], Any]]]:
        for sampler in self.samplers:
            yield f"role sampler of {sampler.roles.broker_name}", sampler.stop

    def roles_steps(self) -> Iterable[tuple[str, Callable[[], Any]]]:
        for name, roles in self.roles.items():
            yield f"controller client of {name}", roles.close


class _NoSet:
    in_sync_replicas: tuple = ()


_NO_SET = _NoSet()

"""The local backend in controller mode (RocketMQ 5.x, `cluster.mode: controller`): the name server (the controller
embedded in it, or three standalone controllers `controller-0..2`) and the brokers of each broker set of the topology
(`broker-0`, `broker-1` with one set; `broker-a-0`, `broker-a-1`, `broker-b-0`, ... with several; one controller
group serves every set), each a process in its own cgroups with its own loop-mounted store, as `LocalBackend` makes
them. The controller elects each set's master: its first broker is started first and the others once the controller
named it master, so every run starts from the same roles.

Ready = every node up, the topic on every broker, its route naming every set's master, a probe SEND_OK and every
slave in its set's SyncStateSet. A fault on `master` / `slave` (`broker-b/master` with several sets) acts on the node
holding that role when it is applied (`resolve_target`, `harness.backends.controller_roles`); a `RoleSampler` per set
writes each change of its roles to `events.jsonl`; the read-back reads each set's live master and its first live
slave, each under the role it holds then."""
from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from harness import brokerclient
from harness.backends import controller_conf as conf
from harness.backends.base import READY_PROBE_TOPIC, ClusterBackend, ClusterError
from harness.backends.broker_checks import poll_until
from harness.backends.controller_roles import ControllerRoles
from harness.backends.hosted_node import HostedNode, NodeSpec
from harness.backends.ports import HOST, PortPicker
from harness.backends.programs import Program
from harness.collectors.roles import RoleSampler
from harness.readback import ReadbackSource, read_back
from harness.rundir import RunDir
from harness.scenario import Scenario
from harness.scenario.controller_keys import CONTROLLER_LEADER


class LocalControllerBackend(ClusterBackend):
    name = "local"

    def __init__(self, scenario: Scenario, rd: RunDir, journal: Any, state_dir: Path) -> None:
        super().__init__(scenario, rd, journal, state_dir,
                         Program.choose(scenario.cluster.program, scenario.cluster.version))
        self.controller_nodes = self.topology.controllers
        self.cgroups: dict[str, Any] = {}
        self.roles: dict[str, ControllerRoles] = {}
        """Each broker set's roles, by its name."""
        self.samplers: list[RoleSampler] = []

    def start_nodes(self, say: Callable[[str], None]) -> None:
        from harness.resources.cgroups import NodeCgroups

        c = self.scenario.cluster
        if self.use_relay():
            raise ClusterError("the HA relay (fault ha_link, cluster.ha_relay) is not placed in controller mode")
        picker = PortPicker()
        ns_port = picker.one()
        self.namesrv_addr = f"{HOST}:{ns_port}"
        ctl = conf.ControllerLayout(tuple(picker.one() for _ in (self.controller_nodes or ("namesrv",))))
        for n in self.node_order:
            self.cgroups[n] = NodeCgroups.create(self.journal, self.run_id, n)
        self.make_stores()
        specs = [self._spec("namesrv", "namesrv", conf.namesrv_properties(c, ns_port, ctl, self.work / "namesrv"),
                            self.namesrv_addr)]
        for i, n in enumerate(self.controller_nodes):
            specs.append(self._spec(n, "controller", conf.controller_properties(c, i, ctl, self.work / n),
                                    ctl.addrs[i]))
        for m in self.topology.members:
            listen, ha = picker.broker()
            props = conf.broker_properties(c, listen, ha, Path(self.stores[m.node].mount), self.namesrv_addr, ctl,
                                           m.group)
            self.broker_addrs[m.node] = f"{HOST}:{listen}"
            specs.append(self._spec(m.node, "broker", props, self.broker_addrs[m.node]))
        for spec in specs:
            hosted = HostedNode.create(self.journal, spec, self.program, cgroups=self.cgroups[spec.name],
                                       store=self.stores.get(spec.name))
            self.nodes[spec.name] = hosted.node
            self.log_sources[spec.name] = hosted.log_sources
            self.targets[spec.name] = hosted.target()
        controller_nodes = dict(zip(ctl.addrs, self.controller_nodes, strict=False))  # none when embedded
        for g in self.topology.groups:
            self.roles[g.name] = ControllerRoles(ctl.addrs, g.name, {m.node: self.broker_addrs[m.node]
                                                                     for m in g.members},
                                                 lambda n: bool(self.nodes[n].pids()), controller_nodes)
        self._start("namesrv", say)
        for n in self.controller_nodes:  # a DLedger group elects its leader once a majority is up
            say(f"cluster: starting {n} ({self.nodes[n].addr})")
            self.nodes[n].start()
        for g in self.topology.groups:
            first = g.members[0].node
            self._start(first, say)
            deadline = time.monotonic() + c.ready_timeout
            poll_until(lambda g=g, first=first: self.roles[g.name].master() == first, deadline,
                       f"the controller did not elect {first} master", ClusterError)
            for m in g.members[1:]:
                self._start(m.node, say)

    def _start(self, n: str, say: Callable[[str], None]) -> None:
        say(f"cluster: starting {n} ({self.nodes[n].addr})")
        self.nodes[n].start()
        self.nodes[n].wait_ready(self.scenario.cluster.ready_timeout)

    def _spec(self, name: str, role: str, props: dict[str, Any], addr: str) -> NodeSpec:
        c = self.scenario.cluster
        return NodeSpec(name=name, role=role, run_id=self.run_id, node_dir=str(self.work / name), addr=addr,
                        props=props, version=c.version, heap=c.heap, namesrv_addr=self.namesrv_addr)

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

    def ready_note(self) -> str:
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
            roles = self.roles[g.name]
            master = roles.master()
            live = [m.node for m in g.members if m.node != master and self.nodes[m.node].pids()]
            read = {"master": master, "slave": live[0] if live else None}
            self.rd.event("roles", master=master, at="readback", read=read,
                          **({} if self.topology.single else {"group": g.name}))
            sources += [ReadbackSource(role, g.name, self.broker_addrs[n]) for role, n in read.items() if n]
        return read_back(self.run_id, self.scenario.topic.name, self.scenario.topic.queues, sources,
                         brokerclient.read_queue, self.rd.layout.readback, timeout_s)

    def teardown_steps(self) -> Iterable[tuple[str, Callable[[], Any]]]:
        """The samplers, every process (brokers first, the name server last), the stores, the cgroups."""
        for sampler in self.samplers:
            yield f"role sampler of {sampler.roles.broker_name}", sampler.stop
        for n in reversed(self.node_order):
            if n in self.nodes:
                yield f"stop {n}", self.nodes[n].stop
        for name, roles in self.roles.items():
            yield f"controller client of {name}", roles.close
        yield from self.stores_and_relay_steps()
        for n, cg in self.cgroups.items():
            yield f"cgroups of {n}", cg.destroy


class _NoSet:
    in_sync_replicas: tuple = ()


_NO_SET = _NoSet()

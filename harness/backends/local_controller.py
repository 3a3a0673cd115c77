"""The local backend in controller mode (RocketMQ 5.x, `cluster.mode: controller`): the name server (the controller
embedded in it, or three standalone controllers `controller-0..2`) and the brokers `broker-0`, `broker-1`
(`broker-2` with `cluster.slaves: 2`) of one broker set, each a process in its own cgroups with its own
loop-mounted store, as `LocalBackend` makes them. The controller elects the master: `broker-0` is started first and
the others once the controller named it master, so every run starts from the same roles.

Ready = every node up, the topic on every broker, its route naming the master, a probe SEND_OK and every slave in
the SyncStateSet. A fault on `master` / `slave` acts on the node holding that role when it is applied
(`resolve_target`, `harness.backends.controller_roles`); a `RoleSampler` writes each change of the roles to
`events.jsonl`; the read-back reads the live master and the first live slave, each under the role it holds then."""
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


class LocalControllerBackend(ClusterBackend):
    name = "local"

    def __init__(self, scenario: Scenario, rd: RunDir, journal: Any, state_dir: Path) -> None:
        super().__init__(scenario, rd, journal, state_dir,
                         Program.choose(scenario.cluster.program, scenario.cluster.version))
        c = scenario.cluster
        self.controller_nodes = tuple(f"controller-{i}" for i in range(0 if c.controllers == "embedded" else 3))
        self.broker_nodes = tuple(f"broker-{i}" for i in range(1 + c.slaves))
        self.node_order = ("namesrv", *self.controller_nodes, *self.broker_nodes)
        self.cgroups: dict[str, Any] = {}
        self.roles: ControllerRoles | None = None
        self.sampler: RoleSampler | None = None

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
        for n in self.broker_nodes:
            listen, ha = picker.broker()
            props = conf.broker_properties(c, listen, ha, Path(self.stores[n].mount), self.namesrv_addr, ctl)
            self.broker_addrs[n] = f"{HOST}:{listen}"
            specs.append(self._spec(n, "broker", props, self.broker_addrs[n]))
        for spec in specs:
            hosted = HostedNode.create(self.journal, spec, self.program, cgroups=self.cgroups[spec.name],
                                       store=self.stores.get(spec.name))
            self.nodes[spec.name] = hosted.node
            self.log_sources[spec.name] = hosted.log_sources
            self.targets[spec.name] = hosted.target()
        self.roles = ControllerRoles(ctl.addrs, c.broker_name, dict(self.broker_addrs),
                                     lambda n: bool(self.nodes[n].pids()),
                                     dict(zip(ctl.addrs, self.controller_nodes, strict=False)))  # none when embedded
        self._start("namesrv", say)
        for n in self.controller_nodes:  # a DLedger group elects its leader once a majority is up
            say(f"cluster: starting {n} ({self.nodes[n].addr})")
            self.nodes[n].start()
        self._start(self.broker_nodes[0], say)
        deadline = time.monotonic() + c.ready_timeout
        poll_until(lambda: self.roles.master() == self.broker_nodes[0], deadline,
                   f"the controller did not elect {self.broker_nodes[0]} master", ClusterError)
        for n in self.broker_nodes[1:]:
            self._start(n, say)

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
        assert self.roles is not None
        brokerclient.wait_route(self.namesrv_addr, t.name, self.broker_addrs[self.broker_nodes[0]], deadline)
        brokerclient.wait_probe_send_ok(self.namesrv_addr, READY_PROBE_TOPIC, deadline)
        want = len(self.broker_nodes)
        poll_until(lambda: len((self.roles.sync_state() or _NO_SET).in_sync_replicas) == want, deadline,
                   f"the SyncStateSet did not reach all {want} brokers", ClusterError)
        self.sampler = RoleSampler(self.roles, self.namesrv_addr, t.name, self.rd.event)
        self.sampler.start()

    def ready_note(self) -> str:
        return f", controller {'in the name server' if not self.controller_nodes else 'x3'}, master {self.broker_nodes[0]}"

    def role_addrs(self) -> list[str]:
        """The controller's master now (while it names a live one) first, then the other brokers in node order."""
        master = self.roles.master() if self.roles is not None else None
        order = ([master] if master else []) + [n for n in self.broker_nodes if n != master]
        return [self.broker_addrs[n] for n in order]

    def resolve_target(self, target: str) -> str:
        assert self.roles is not None
        return self.roles.resolve(target)

    def read_back(self, timeout_s: float) -> dict[str, int]:
        """The live master and the first live slave, each under the role it holds now (`master` / `slave`: the
        analysis's read-back nodes; with two slaves the second is not read, `readback_start` names who is)."""
        assert self.roles is not None
        c = self.scenario.cluster
        master = self.roles.master()
        live = [n for n in self.broker_nodes if n != master and self.nodes[n].pids()]
        read = {"master": master, "slave": live[0] if live else None}
        self.rd.event("roles", master=master, at="readback", read=read)
        sources = [ReadbackSource(role, c.broker_name, self.broker_addrs[n]) for role, n in read.items() if n]
        return read_back(self.run_id, self.scenario.topic.name, self.scenario.topic.queues, sources,
                         brokerclient.read_queue, self.rd.layout.readback, timeout_s)

    def teardown_steps(self) -> Iterable[tuple[str, Callable[[], Any]]]:
        """The sampler, every process (brokers first, the name server last), the stores, the cgroups."""
        if self.sampler is not None:
            yield "role sampler", self.sampler.stop
        for n in reversed(self.node_order):
            if n in self.nodes:
                yield f"stop {n}", self.nodes[n].stop
        if self.roles is not None:
            yield "controller client", self.roles.close
        yield from self.stores_and_relay_steps()
        for n, cg in self.cgroups.items():
            yield f"cgroups of {n}", cg.destroy


class _NoSet:
    in_sync_replicas: tuple = ()


_NO_SET = _NoSet()

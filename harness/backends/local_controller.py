"""The local backend in controller mode (RocketMQ 5.x, `cluster.mode: controller`): the name server (the controller
embedded in it, or three standalone controllers `controller-0..2`) and the brokers of each broker set of the topology
(`broker-0`, `broker-1` with one set; `broker-a-0`, `broker-a-1`, `broker-b-0`, ... with several), each a process in
its own cgroups with its own loop-mounted store, as `LocalBackend` makes them. How they are started, who holds which
role, readiness, the role samplers and the read-back: `harness.backends.controller_mode` (shared with the ssh
backend)."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from harness.backends import controller_conf as conf
from harness.backends.base import ClusterBackend, ClusterError
from harness.backends.controller_mode import ControllerMode
from harness.backends.hosted_node import HostedNode, NodeSpec
from harness.backends.ports import HOST, PortPicker
from harness.backends.programs import Program
from harness.rundir import RunDir
from harness.scenario import Scenario


class LocalControllerBackend(ControllerMode, ClusterBackend):
    name = "local"

    def __init__(self, scenario: Scenario, rd: RunDir, journal: Any, state_dir: Path) -> None:
        super().__init__(scenario, rd, journal, state_dir,
                         Program.choose(scenario.cluster.program, scenario.cluster.version))
        self.init_controller_mode()
        self.cgroups: dict[str, Any] = {}

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
        self.make_roles(ctl.addrs)

        def start(n: str) -> None:
            say(f"cluster: starting {n} ({self.nodes[n].addr})")
            self.nodes[n].start()

        def start_waiting(n: str) -> None:
            start(n)
            self.nodes[n].wait_ready(c.ready_timeout)

        self.start_in_order(start, start_waiting)

    def _spec(self, name: str, role: str, props: dict[str, Any], addr: str) -> NodeSpec:
        c = self.scenario.cluster
        return NodeSpec(name=name, role=role, run_id=self.run_id, node_dir=str(self.work / name), addr=addr,
                        props=props, version=c.version, heap=c.heap, namesrv_addr=self.namesrv_addr)

    def ready_note(self) -> str:
        return self.controller_note()

    def teardown_steps(self) -> Iterable[tuple[str, Callable[[], Any]]]:
        """The samplers, every process (brokers first, the name server last), the stores, the cgroups."""
        yield from self.sampler_steps()
        for n in reversed(self.node_order):
            if n in self.nodes:
                yield f"stop {n}", self.nodes[n].stop
        yield from self.roles_steps()
        yield from self.stores_and_relay_steps()
        for n, cg in self.cgroups.items():
            yield f"cgroups of {n}", cg.destroy

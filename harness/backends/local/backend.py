"""The local backend: the topology's nodes (name server, controllers, each broker group's brokers; `harness.topology`)
in either mode (confs and start order from the backend's `mode`) as processes on this machine, on free 127.0.0.1 ports, each in
its own cgroups (`<controller>/rmq-chaos/<run>/<node>`), each broker's store on its own loop-mounted ext4 image
(`errors=remount-ro`, size from the scenario), everything journaled before it is made so `rmq-chaos cleanup`
removes what a dead run left. With the `ha_link` fault (or `cluster.ha_relay: always`) the HA relay sits on the
slave's path to the master's HA port.

Readiness, cluster.json, the effective-config check and `down()`'s flow are `ClusterBackend`'s (harness/backends/
base.py); this module says how the nodes are made (`start_nodes`) and taken away (`teardown_steps`). Down means
every process, mount, loop device and cgroup it made is gone."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from harness.backends.base import ClusterBackend
from harness.backends.local.hosted_node import HostedNode, NodeSpec
from harness.backends.ports import HOST, PortPicker
from harness.backends.programs import Program
from harness.rundir import RunDir
from harness.scenario import Scenario


class LocalBackend(ClusterBackend):
    name = "local"

    def __init__(self, scenario: Scenario, rd: RunDir, journal: Any, state_dir: Path) -> None:
        super().__init__(scenario, rd, journal, state_dir,
                         Program.choose(scenario.cluster.program, scenario.cluster.version))
        self.cgroups: dict[str, Any] = {}

    def start_nodes(self, say: Callable[[str], None]) -> None:
        """The topology's nodes (`harness.topology`: the name server, the controllers, each group's brokers), each
        with the conf its mode gives it, started in the mode's order."""
        from harness.resources.cgroups import NodeCgroups

        mode = self.mode
        picker = PortPicker()
        ns_port = picker.one()
        self.namesrv_addr = f"{HOST}:{ns_port}"
        mode.place_controllers(tuple(picker.one() for _ in mode.dledger_nodes()))
        ports = {n: picker.broker() for n in self.broker_nodes}
        for n in self.node_order:
            self.cgroups[n] = NodeCgroups.create(self.journal, self.run_id, n)
        self.make_stores()
        ha_master = None
        if self.use_relay():  # ha_link: with one group in master_slave mode (the scenario refuses it otherwise)
            ha_master = self.start_relay(f"{HOST}:{ports[self.topology.static_node('master')][1]}",
                                         f"{HOST}:{picker.one()}")
        specs = [self._spec("namesrv", mode.namesrv_props(ns_port, self.work / "namesrv"), self.namesrv_addr)]
        for i, n in enumerate(self.topology.controllers):
            specs.append(self._spec(n, mode.controller_props(i, self.work / n), mode.ctl.addrs[i], role="controller"))
        for m in self.topology.members:
            listen, ha = ports[m.node]
            self.broker_addrs[m.node] = f"{HOST}:{listen}"
            master = self.topology.master_of(m.node)
            specs.append(self._spec(m.node, mode.broker_props(m, listen, ha, Path(self.stores[m.node].mount),
                                                              ha_master=ha_master),
                                    self.broker_addrs[m.node], broker_id=m.broker_id if m.broker_id >= 0 else None,
                                    role=m.role, master_addr=self.broker_addrs.get(master or "")))
        for spec in specs:
            hosted = HostedNode.create(self.journal, spec, self.program, cgroups=self.cgroups[spec.name],
                                       store=self.stores.get(spec.name))
            self.nodes[spec.name] = hosted.node
            self.log_sources[spec.name] = hosted.log_sources
            self.targets[spec.name] = hosted.target(self.relay.extras() if self.relay and spec.role != "namesrv"
                                                    else None)
        mode.nodes_made()
        self.start_in_mode_order(say)

    def _spec(self, name: str, props: dict[str, Any], addr: str, broker_id: int | None = None,
              role: str | None = None, master_addr: str | None = None) -> NodeSpec:
        c = self.scenario.cluster
        return NodeSpec(name=name, role=role or name, run_id=self.run_id, node_dir=str(self.work / name), addr=addr,
                        props=props, version=c.version, heap=c.heap, broker_id=broker_id,
                        namesrv_addr=self.namesrv_addr, master_addr=master_addr)

    def teardown_steps(self) -> Iterable[tuple[str, Callable[[], Any]]]:
        """Stop every process (slave first), then the relay and the stores, then the cgroups."""
        for n in reversed(self.node_order):
            if n in self.nodes:
                yield f"stop {n}", self.nodes[n].stop
        yield from self.stores_and_relay_steps()
        for n, cg in self.cgroups.items():
            yield f"cgroups of {n}", cg.destroy

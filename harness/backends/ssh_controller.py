"""The ssh backend in controller mode (RocketMQ 5.x, `cluster.mode: controller`): the name server (the controller
embedded in it, or three standalone controllers `controller-0..2`, each on the host `cluster.placement` or the
inventory's `controller` group names: the n-th on its n-th host, else on the name server's) and the brokers of every
broker set on their hosts (`placement_from_groups`: a set's first broker on the n-th host of `master`, the others on
the n-th of `slave`), made and driven by the hosts' agents as `SshBackend` makes any node. The controllers' DLedger
ports and every broker's `brokerIP1`/`brokerIP2` are their hosts' addresses. Start order, roles, readiness, role
samplers, targets and the read-back: `harness.backends.controller_mode`, the same as on the local backend."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.backends import controller_conf as conf
from harness.backends.controller_mode import ControllerMode
from harness.backends.hosted_node import NodeSpec
from harness.backends.ssh import SshBackend
from harness.rundir import RunDir
from harness.scenario import Scenario


class SshControllerBackend(ControllerMode, SshBackend):
    def __init__(self, scenario: Scenario, rd: RunDir, journal: Any, state_dir: Path) -> None:
        super().__init__(scenario, rd, journal, state_dir)
        self.init_controller_mode()
        self.ctl: conf.ControllerLayout | None = None

    def _specs(self, ports: dict[str, Any]) -> list[NodeSpec]:
        c = self.scenario.cluster
        ns_host = self.place["namesrv"]
        self.namesrv_addr = f"{ns_host.address}:{ports['namesrv']}"
        ctl_nodes = self.controller_nodes or ("namesrv",)
        if self.controller_nodes:
            peer_ports = tuple(ports[n] for n in self.controller_nodes)
        else:  # the embedded controller's DLedger port: one more free port on the name server's host
            got = self.agents[ns_host.name].call("ports", host=ns_host.address, single=1, brokers=0)
            peer_ports = (got["single"][0],)
        self.ctl = ctl = conf.ControllerLayout(peer_ports, hosts=tuple(self.place[n].address for n in ctl_nodes))
        specs = [self._spec("namesrv", conf.namesrv_properties(c, ports["namesrv"], ctl,
                                                               Path(self._node_dir("namesrv"))), self.namesrv_addr)]
        for i, n in enumerate(self.controller_nodes):
            specs.append(self._spec(n, conf.controller_properties(c, i, ctl, Path(self._node_dir(n))),
                                    ctl.addrs[i], role="controller"))
        for m in self.topology.members:
            host, (listen, ha) = self.place[m.node], ports[m.node]
            props = conf.broker_properties(c, listen, ha, Path(self._node_dir(m.node)) / "store", self.namesrv_addr,
                                           ctl, m.group, host=host.address)
            self.broker_addrs[m.node] = f"{host.address}:{listen}"
            specs.append(self._spec(m.node, props, self.broker_addrs[m.node], store_size=c.store_size,
                                    role="broker"))
        return specs

    def _start_all(self, say: Callable[[str], None]) -> None:
        assert self.ctl is not None
        self.make_roles(self.ctl.addrs)
        self.start_in_order(lambda n: self._start(n, say, wait=False), lambda n: self._start(n, say))

"""Where a controller-mode compose run's files are (RocketMQ 5.x, `cluster.mode: controller`): `ComposeLayout` with
the conf files of `harness.backends.controller_conf` (the name server with the embedded controller, or three
standalone controllers `controller-0..2`, and every broker of every broker set), and the second compose file
`<work>/compose.controller.yml`: each controller a service extending the checked-in file's `namesrv` with its own
command (`sh mqcontroller -c <conf>`, as the official image runs one), conf, logs and health check on its DLedger
port; each broker a service extending the checked-in `master` (harness/backends/compose/groups.py). The checked-in
`master` and `slave` are not started; their variables get the first set's first two brokers."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.backends import controller_conf as conf
from harness.backends.compose import groups as compose_groups
from harness.backends.compose.layout import CONTAINER_STORE, ComposeLayout
from harness.backends.ports import HOST
from harness.topology import Topology

CONTROLLER_FILE = "compose.controller.yml"
CONTAINER_HOME = Path("/home/rocketmq")
"""The image user's home inside a container: the controllers' `controller-store` goes there (the container's own)."""


@dataclass
class ControllerComposeLayout(ComposeLayout):
    ctl: conf.ControllerLayout = conf.ControllerLayout(())
    controllers: tuple[str, ...] = ()
    """`controller-0..2` (standalone), none when the controller is embedded in the name server"""

    @property
    def nodes(self) -> tuple[str, ...]:
        return ("namesrv", *self.controllers, *self.broker_ports)

    def addr(self, node: str) -> str:
        if node in self.controllers:
            return self.ctl.addrs[self.controllers.index(node)]
        return super().addr(node)

    def base_node(self, service: str) -> str:
        """The checked-in `master` / `slave` get the first two brokers' ports and limits (they are not started)."""
        brokers = list(self.broker_ports)
        return brokers[("master", "slave").index(service)] if service in ("master", "slave") else service

    def properties(self, cluster: Any, node: str) -> dict[str, Any]:
        if node == "namesrv":
            return conf.namesrv_properties(cluster, self.namesrv_port, self.ctl, CONTAINER_HOME)
        if node in self.controllers:
            return conf.controller_properties(cluster, self.controllers.index(node), self.ctl, CONTAINER_HOME)
        listen, ha = self.broker_ports[node]
        return conf.broker_properties(cluster, listen, ha, CONTAINER_STORE, self.namesrv_addr, self.ctl,
                                      Topology.of(cluster).member(node).group)

    def controller_service(self, base_file: Path, node: str) -> dict[str, Any]:
        mem, swap = self.limits(node)
        target = f"/home/rocketmq/rocketmq-{self.version}/conf/controller.conf"
        port = self.addr(node).rpartition(":")[2]
        return {"extends": {"file": str(base_file.resolve()), "service": "namesrv"},
                "command": ["sh", "mqcontroller", "-c", target], "mem_limit": mem, "memswap_limit": swap,
                "volumes": [compose_groups.bind_mount(self.log_dir(node), "/home/rocketmq/logs"),
                            compose_groups.bind_mount(self.conf_file(node), target)],
                "healthcheck": {"test": ["CMD", "bash", "-c", f"exec 3<>/dev/tcp/{HOST}/{port}"]}}

    def write_services(self, topology: Topology, base_file: Path) -> Path:
        """`<work>/compose.controller.yml`: the controllers and every broker of every set."""
        header = [f"# rendered by rmq-chaos for project {self.project}: controller mode, "
                  f"{len(self.controllers) or 'no'} standalone controllers, {len(topology.groups)} broker set(s)",
                  "# (harness/backends/compose/controller_layout.py)"]
        services = {n: self.controller_service(base_file, n) for n in self.controllers}
        for m in topology.members:
            services[m.node] = compose_groups.member_service(self, base_file, m, "namesrv", extends="master")
        path = self.work / CONTROLLER_FILE
        path.write_text(compose_groups.text(header, services), encoding="utf-8")
        return path


"""Where a compose run's files are and what the compose file is told: the conf files rendered from the scenario
(the local backend's properties for each member of the topology, its group and role, with the container's store path
`/home/rocketmq/store`), the data directory whose
`<node>/store` (a broker's loop mount) and `<node>/logs` are bind-mounted, and the variables of `compose/*.yml`
(ports, image, version, heap, memory limits, cgroup parent, network mode, health-check interval), also written to `compose.env` so the project can be
inspected or re-run by hand (`docker compose -p <project> -f <file> --env-file <work>/compose.env ps`).

Every container gets an explicit memory limit (the machine's RAM) and memory+swap limit (twice that): effectively
none, but a `memory_pressure` revert can restore them through the Docker API, which cannot restore "no limit"."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from faults.system.meminfo import mem_total
from harness.backends.brokerconf import BrokerLayout, broker_properties, namesrv_properties, render
from harness.backends.ports import HOST
from harness.topology import Topology

CONTAINER_STORE = Path("/home/rocketmq/store")
HEALTH_INTERVAL = "5s"
"""Docker's health checks (`up --wait`, `depends_on: service_healthy`) run a `docker exec` per container per
interval for the whole run: at the compose files' 1 s (by hand) the engine's processes (runc exec) took 0.19 CPU-s
per second on this 2-core machine with an idle cluster of three, at 5 s about a fifth of that; the cost is a slower
`up` (each node waits for its first check, about 11 s more in all)."""
IMAGE_UID = 3000
"""The official image runs as `rocketmq`, uid/gid 3000: bind-mounted directories must be its own."""
BASE_SERVICES = ("namesrv", "master", "slave")
"""The services of compose/rocketmq-*.yml: with one group they are its nodes, with several the members extend them
(harness/backends/compose/groups.py)."""
PROJECT_PREFIX = "rmq-chaos-"
PROJECT_BAD = re.compile(r"[^a-z0-9_-]+")
ENV_FILE = "compose.env"


def project_name(run_id: str) -> str:
    """A compose project name for a run (lower-case letters, digits, '_' and '-')."""
    return (PROJECT_PREFIX + PROJECT_BAD.sub("-", run_id.lower())).strip("-")[:63]


@dataclass
class ComposeLayout:
    work: Path
    project: str
    image: str
    version: str
    heap: str
    cgroup_parent: str
    namesrv_port: int
    broker_ports: dict[str, tuple[int, int]]
    """(listenPort, haListenPort) of every broker node of the topology, in its order (masters before their slaves)"""
    ha_master_address: str | None = None
    network_mode: str = "host"
    """compose `network_mode`: `container:<holder>` (the run's own namespace, harness/backends/compose/netns.py)"""
    mem_limits: dict[str, tuple[int, int]] = field(default_factory=dict)

    @property
    def data_dir(self) -> Path:
        return self.work

    @property
    def conf_dir(self) -> Path:
        return self.work / "conf"

    @property
    def namesrv_addr(self) -> str:
        return f"{HOST}:{self.namesrv_port}"

    def node_dir(self, node: str) -> Path:
        return self.work / node

    def store_dir(self, node: str) -> Path:
        return self.node_dir(node) / "store"

    def log_dir(self, node: str) -> Path:
        return self.node_dir(node) / "logs"

    def conf_file(self, node: str) -> Path:
        return self.conf_dir / f"{node}.conf"

    def addr(self, node: str) -> str:
        return self.namesrv_addr if node == "namesrv" else f"{HOST}:{self.broker_ports[node][0]}"

    def limits(self, node: str) -> tuple[int, int]:
        if node in self.mem_limits:
            return self.mem_limits[node]
        ram = mem_total() // 4096 * 4096
        return ram, 2 * ram

    @property
    def nodes(self) -> tuple[str, ...]:
        """The name server and every broker node."""
        return ("namesrv", *self.broker_ports)

    def base_node(self, service: str) -> str:
        """The node whose ports and limits the checked-in file's `service` is given: the node of that name (one
        group), else the first node of that role (`<group>-master`): the file stays valid though its `master` and
        `slave` are not started then."""
        if service == "namesrv" or service in self.broker_ports:
            return service
        return next(n for n in self.broker_ports if n.endswith(f"-{service}"))

    def properties(self, cluster: Any, node: str) -> dict[str, Any]:
        if node == "namesrv":
            return namesrv_properties(cluster, self.namesrv_port)
        listen, ha = self.broker_ports[node]
        member = Topology.of(cluster).member(node)
        return broker_properties(cluster, BrokerLayout(node, listen, ha, CONTAINER_STORE, self.namesrv_addr,
                                                       self.ha_master_address if member.role == "slave" else None,
                                                       group=member.group, role=member.role))

    def env(self) -> dict[str, str]:
        """The variables of compose/rocketmq-*.yml."""
        out = {"ROCKETMQ_IMAGE": self.image, "ROCKETMQ_VERSION": self.version, "RMQ_CGROUP_PARENT": self.cgroup_parent,
               "RMQ_DATA_DIR": str(self.data_dir), "RMQ_CONF_DIR": str(self.conf_dir),
               "RMQ_NAMESRV_PORT": str(self.namesrv_port), "HEAP_OPTS": self.heap, "JAVA_OPT_EXT": self.heap,
               "RMQ_NETWORK_MODE": self.network_mode, "RMQ_HEALTH_INTERVAL": HEALTH_INTERVAL}
        for service in ("master", "slave"):
            out[f"RMQ_{service.upper()}_PORT"] = str(self.broker_ports[self.base_node(service)][0])
        for service in BASE_SERVICES:
            mem, swap = self.limits(self.base_node(service))
            out[f"RMQ_{service.upper()}_MEM_LIMIT"] = str(mem)
            out[f"RMQ_{service.upper()}_MEMSWAP_LIMIT"] = str(swap)
        return out

    def write(self, cluster: Any) -> dict[str, Path]:
        """Conf files, node directories (owned by the image's user) and compose.env; returns the conf files."""
        self.conf_dir.mkdir(parents=True, exist_ok=True)
        confs = {}
        for node in self.nodes:
            self.log_dir(node).mkdir(parents=True, exist_ok=True)
            _own(self.log_dir(node))
            confs[node] = self.conf_file(node)
            confs[node].write_text(render(self.properties(cluster, node)), encoding="utf-8")
            _own(confs[node])
        env_file = self.work / ENV_FILE
        env_file.write_text("".join(f"{k}={v}\n" for k, v in sorted(self.env().items())), encoding="utf-8")
        return confs


def _own(path: Path) -> None:
    """Make `path` the image user's (uid 3000), as the official image needs for its bind mounts."""
    os.chown(path, IMAGE_UID, IMAGE_UID)

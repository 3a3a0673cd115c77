"""The compose backend: the topology's nodes (name server, controllers, each broker group's brokers;
`harness.topology`) as containers of `compose/rocketmq-<major>.yml`, started with `docker compose up -d --wait` (the
real v2 binary) and watched through the Docker SDK. One group runs the file's own services; several add a second file
rendered for the run whose services extend the file's `master` and `slave` (harness/backends/compose/groups.py); in
controller mode that file holds the controllers and every broker of every set (controller_layout.py), the
containers are only created by `up` and the mode starts them in its order (each set's first broker alone until the
controller names it master). No container network:
the containers join the network namespace of the run's holder container, where this process runs too
(`harness/backends/compose/netns.py`: only loopback; host networking when the process is not in one, which is
refused for a real broker's image), on free 127.0.0.1 ports the harness picks and renders into the conf files; each broker's store is a loop-mounted
ext4 of its own on the host (the local backend's `LoopStore`, `errors=remount-ro`), bind-mounted at
`/home/rocketmq/store`, so a store fault hits one broker; the containers' cgroups live under
`<controller>/rmq-chaos/<run>/` (compose `cgroup_parent`), where the faults' guards accept them; with `ha_link` the
HA relay runs on the host on the slave's path, as with the local backend.

Readiness, the read-back and the effective-config check are every backend's (`ClusterBackend`, base.py): the
route exists, a probe send got SEND_OK, the slave caught up. Metrics come from the Docker stats API, logs from the
bind-mounted log directories and `container.logs()`. Everything is journaled before it is made (cgroup parent dirs,
stores, relay, the compose project), so `rmq-chaos cleanup` removes what a dead run left; `down` removes it all."""
from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from faults.journal import Journal
from faults.system import cgroupfs
from faults.target import NodeTarget
from harness import brokerclient
from harness.backends.base import ClusterBackend
from harness.backends.compose import groups as compose_groups
from harness.backends.compose import netns as compose_netns
from harness.backends.compose.controller_layout import ControllerComposeLayout
from harness.backends.compose.image import check_setup
from harness.backends.compose.layout import IMAGE_UID, ComposeLayout, project_name
from harness.backends.compose.node import ContainerNode
from harness.backends.compose.project import ComposeProject
from harness.backends.compose.stats import ComposeMetricsCollector
from harness.backends.errors import ClusterError
from harness.backends.ports import PortPicker
from harness.backends.programs import Program
from harness.rundir import RunDir
from harness.scenario import Scenario

CGROUP_KIND = "resource:cgroup_parent"
NODE_CGROUPS = ("memory", "blkio", "freezer", "cpu")
LOG_TAIL_BYTES = 16 << 20


class ComposeBackend(ClusterBackend):
    name = "compose"

    def __init__(self, scenario: Scenario, rd: RunDir, journal: Journal, state_dir: Path) -> None:
        super().__init__(scenario, rd, journal, state_dir, Program.choose("emulator"))
        self.setup = check_setup(scenario.cluster)
        self.image = self.setup["image"]
        self.network_mode = compose_netns.network_mode()
        if self.network_mode == "host" and self.setup["program"] != "emulator":
            raise ClusterError(f"image {self.image} runs a real broker, which binds every interface: under host "
                               "networking those are the host's; run it through `rmq-chaos run` or `rmq-chaos "
                               "cluster up`, which give the run a network namespace of its own")
        self.project_name = project_name(self.run_id)
        self.cgroup_parent = f"/{cgroupfs.OUR_DIR}/{self.project_name}"
        self.layout: ComposeLayout | None = None
        self.project: ComposeProject | None = None
        self.containers: dict[str, Any] = {}
        self._cgroup_entry: str | None = None

    def start_nodes(self, say: Callable[[str], None]) -> None:
        """The layout's files, `docker compose up`, then (in controller mode, whose start waits on the controller's
        election) each container started in the mode's order."""
        self.layout = layout = self.make_layout(PortPicker())
        self.namesrv_addr = layout.namesrv_addr
        confs = layout.write(self.scenario.cluster)
        self.broker_addrs = {n: layout.addr(n) for n in self.broker_nodes}
        self.compose_up(say, confs)
        self.mode.nodes_made()
        if self.mode.start_one_by_one:
            self.start_in_mode_order(say)

    def make_layout(self, picker: PortPicker) -> ComposeLayout:
        """Ports, the cgroup parent, the stores (the image's user's), the relay; the run's `ComposeLayout` (its
        controller-mode kind, `ControllerComposeLayout`, renders the controllers' services and confs too)."""
        c = self.scenario.cluster
        ns_port = picker.one()
        self.mode.place_controllers(tuple(picker.one() for _ in self.mode.dledger_nodes()))
        ports = {n: picker.broker() for n in self.broker_nodes}
        self.prepare_host()
        args = (self.work, self.project_name, self.image, c.version, c.heap, self.cgroup_parent, ns_port, ports)
        if self.mode.dledger_nodes():
            return ControllerComposeLayout(*args, network_mode=self.network_mode, ctl=self.mode.ctl,
                                           controllers=self.topology.controllers)
        ha_master = None
        if self.use_relay():  # ha_link: with one group (the scenario refuses it with several)
            ha_master = self.start_relay(f"127.0.0.1:{ports[self.topology.static_node('master')][1]}",
                                         f"127.0.0.1:{picker.one()}")
        return ComposeLayout(*args, ha_master, network_mode=self.network_mode)

    def prepare_host(self) -> None:
        self._journal_cgroup_parent()
        self.make_stores()
        for store in self.stores.values():
            Path(store.mount).chmod(0o755)
            shutil.chown(store.mount, IMAGE_UID, IMAGE_UID)

    def extra_files(self, base: Path) -> tuple[Path, ...]:
        """The compose files after the checked-in one: the controller-mode file (the controllers and every broker
        of every set), or the groups file with several broker groups."""
        assert self.layout is not None
        if isinstance(self.layout, ControllerComposeLayout):
            return (self.layout.write_services(self.topology, base),)
        return () if self.topology.single else (compose_groups.write(self.layout, self.topology, base),)

    def compose_up(self, say: Callable[[str], None], confs: dict[str, Path]) -> None:
        """`docker compose up` of the project (its containers only created when the mode starts them one by one),
        then a node per container."""
        base = Path(self.setup["compose_file"])
        extra = self.extra_files(base)
        assert self.layout is not None
        self.project = ComposeProject(self.project_name, base, self.layout.env(), self.work / "compose.env",
                                      self.work / "compose.log", extra_files=extra,
                                      services=self.node_order if extra else ())
        self.project.config()
        say(f"cluster: docker compose up {self.project_name} ({self.image}, "
            + " + ".join(f.name for f in (base, *extra)) + ")")
        self.project.up(self.journal, self.run_id, self.scenario.cluster.ready_timeout, start=not self.mode.start_one_by_one)
        self.containers = self.project.containers()
        missing = [n for n in self.node_order if n not in self.containers]
        if missing:
            raise ClusterError(f"compose project {self.project_name} has no container for {', '.join(missing)}")
        for n in self.node_order:
            self._make_container_node(n, confs[n])

    def ready_note(self) -> str:
        return f" (containers of {self.project_name})"

    def _journal_cgroup_parent(self) -> None:
        """The `rmq-chaos/<project>` dirs runc makes in every hierarchy for the containers' cgroups: removed at
        down (and by cleanup) after the containers are gone."""
        paths = [str(Path(root) / self.cgroup_parent.lstrip("/")) for root in _cgroup_roots()]
        self._cgroup_entry = self.journal.begin(CGROUP_KIND, undo=[{"op": "cgroup_remove", "path": p} for p in paths],
                                                run_id=self.run_id, target="cluster", data={"paths": paths})

    def _make_container_node(self, name: str, conf: Path) -> None:
        assert self.layout is not None
        ct = self.containers[name]
        addr = self.layout.addr(name)
        member = self.topology.member(name) if name in self.broker_nodes else None
        master = self.topology.master_of(name)
        role = member.role if member else "controller" if name in self.topology.controllers else name
        node = ContainerNode(name=name, role=role, run_id=self.run_id, container=ct.id,
                             pidfile=str(self.work / name / "pid"), addr=addr,
                             namesrv_addr=self.namesrv_addr if member else None,
                             master_addr=self.broker_addrs[master] if master else None,
                             broker_id=member.broker_id if member and member.broker_id >= 0 else None)
        node.refresh_pid()
        self.nodes[name] = node  # type: ignore[assignment]
        self.log_sources[name] = [self.layout.log_dir(name), conf, self.work / name / "stdout.log"]
        store = self.stores.get(name)
        cgroups = {k: str(Path(h.root) / self.cgroup_parent.lstrip("/") / ct.id)
                   for k in NODE_CGROUPS if (h := cgroupfs.hierarchy(k)) is not None}
        extras: dict[str, Any] = {"conf": str(conf), "addr": addr, "project": self.project_name,
                                  "container_name": ct.name}
        if self.relay is not None and member:
            extras.update(self.relay.extras())
        ports = {"listen": node.port}
        if member:
            ports["ha"] = self.layout.broker_ports[name][1]
        self.targets[name] = NodeTarget(
            name=name, role=node.role, run_id=self.run_id, pids=node.pid_source, cgroups=cgroups,
            store_mount=store.mount if store else None, store_device=store.device if store else None,
            store_image=store.image if store else None, ports=ports, control=node, container=ct.id, extras=extras)

    def cluster_info(self) -> dict[str, Any]:
        c = self.scenario.cluster
        info = super().cluster_info()
        info.update({"program": "image", "rocketmq_home": None, "image": self.image,
                     "image_id": self.setup["image_id"], "image_labels": self.setup["labels"],
                     "image_program": self.setup["program"], "network_mode": self.network_mode,
                     "netns": _netns_info(),
                     "compose_project": self.project_name, "compose_file": self.setup["compose_file"],
                     "compose_binary": self.setup["compose_binary"], "engine": self.setup["engine"],
                     "cgroup_parent": self.cgroup_parent})
        for node in info["nodes"]:
            ct = self.containers[node["name"]]
            ct.reload()
            mem, swap = self.layout.limits(node["name"]) if self.layout else (None, None)
            node.update({"container": ct.id, "container_name": ct.name, "memory_limit": mem,
                         "memswap_limit": swap,
                         "store_size": c.store_size if node["name"] in self.broker_nodes else None})
        return info

    # --- during the run ---------------------------------------------------------------------------------------

    def start_collectors(self) -> ComposeMetricsCollector:
        nodes = self.metrics_nodes()
        containers = {n: (self.targets[n].container or "", self.targets[n].cgroups.get("blkio"))
                      for n in self.node_order}
        collector = ComposeMetricsCollector(self.run_id, self.rd.layout.metrics, nodes,
                                            brokerclient.runtime_info_quick, containers)
        collector.start()
        return collector

    def status(self) -> dict[str, str]:
        """Each node's container: name, state and health, from the Docker API."""
        from harness.backends.compose.status import container_status

        return {n: container_status(ct.id) for n, ct in self.containers.items()}

    def copy_logs(self) -> None:
        for n, ct in self.containers.items():
            try:
                data = ct.logs(stdout=True, stderr=True)[-LOG_TAIL_BYTES:]
                (self.work / n / "stdout.log").write_bytes(data)
            except Exception as err:  # noqa: BLE001 - a container that is gone has no logs; say so in the file
                (self.work / n / "stdout.log").write_text(f"container logs unavailable: {err}\n", encoding="utf-8")
        self.log_sources["compose"] = [self.work / "compose.log", self.work / "compose.env",
                                       *(self.project.extra_files if self.project else ())]
        super().copy_logs()

    # --- down -------------------------------------------------------------------------------------------------

    def teardown_steps(self) -> Iterable[tuple[str, Callable[[], Any]]]:
        """`docker compose down -v`, then the relay, the stores and the cgroup parent dirs."""
        if self.project is not None:
            yield "compose down", self.project.down
        yield from self.stores_and_relay_steps()
        if self._cgroup_entry is not None:
            yield "cgroup parent", self._remove_cgroup_parent

    def _remove_cgroup_parent(self) -> None:
        from faults.undo import run_ops

        entry = self.journal.get(self._cgroup_entry or "")
        if entry is not None and not entry.done:
            run_ops(entry.undo)
            self.journal.done(entry.id, "destroyed")


def _netns_info() -> dict[str, Any]:
    """This process's network namespace (the containers' too): its inode and interfaces, and the holder."""
    import socket

    return {"inode": os.stat("/proc/self/ns/net").st_ino, "interfaces": sorted(n for _, n in socket.if_nameindex()),
            "holder": compose_netns.holder()}


def _cgroup_roots() -> list[str]:
    """Every mounted cgroup hierarchy (v1 controllers, named ones such as name=systemd, the v2 tree): runc makes the
    parent dirs in each."""
    roots = set()
    with open("/proc/self/mounts", encoding="utf-8") as f:
        for line in f:
            parts = line.split()
            if len(parts) > 2 and parts[2] in ("cgroup", "cgroup2"):
                roots.add(parts[1])
    return sorted(roots)

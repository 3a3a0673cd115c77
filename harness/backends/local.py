"""The local backend: name server, master and slave as processes on this machine, on free 127.0.0.1 ports, each in
its own cgroups (`<controller>/rmq-chaos/<run>/<node>`), each broker's store on its own loop-mounted ext4 image
(`errors=remount-ro`, size from the scenario), everything journaled before it is made so `rmq-chaos cleanup`
removes what a dead run left. With the `ha_link` fault (or `cluster.ha_relay: always`) the HA relay sits on the
slave's path to the master's HA port.

Ready means: the route of the topic exists at the name server, a probe send to the master got SEND_OK (so the slave
is connected and acknowledging, for 4.x), and the slave's commitLogMaxOffset reached the master's. Then the
effective config of each broker is read back (GET_BROKER_CONFIG) into cluster.json and compared with the request.
Down means every process, mount, loop device and cgroup it made is gone."""
from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from faults.cluster_state import remove_cluster_state, write_cluster_state
from faults.target import NodeTarget
from harness import brokerclient
from harness.backends.brokerconf import BrokerLayout, broker_properties, namesrv_properties, render, requested
from harness.backends.localnode import STOP_TIMEOUT_S, BrokerNode
from harness.backends.ports import HOST, PortPicker
from harness.backends.programs import Program
from harness.collectors.logs import copy_node_logs
from harness.collectors.metrics import MetricsCollector, MetricsNode
from harness.readback import ReadbackSource, read_back
from harness.rundir import RunDir
from harness.scenario import BROKER_NODES, Scenario, effective_differences

WORK_DIR = "work"
READY_PROBE_TOPIC = "RMQ_CHAOS_READY"
NODE_ORDER = ("namesrv", "master", "slave")


class ClusterError(RuntimeError):
    """The cluster could not be stood up as asked (one line)."""


class LocalBackend:
    name = "local"

    def __init__(self, scenario: Scenario, rd: RunDir, journal: Any, state_dir: Path) -> None:
        self.scenario = scenario
        self.rd = rd
        self.run_id = rd.run_id
        self.cluster_id = rd.run_id
        self.journal = journal
        self.state_dir = Path(state_dir)
        self.work = self.state_dir / WORK_DIR / self.run_id
        self.program = Program.choose(scenario.cluster.program, scenario.cluster.version)
        self.nodes: dict[str, BrokerNode] = {}
        self.targets: dict[str, NodeTarget] = {}
        self.stores: dict[str, Any] = {}
        self.cgroups: dict[str, Any] = {}
        self.relay: Any = None
        self.namesrv_addr = ""
        self.broker_addrs: dict[str, str] = {}
        self.log_sources: dict[str, list[Path]] = {}
        self._state_written = False

    # --- up ---------------------------------------------------------------------------------------------------

    def up(self, say: Callable[[str], None] = print) -> None:
        from harness.resources.cgroups import NodeCgroups
        from harness.resources.loop_store import LoopStore

        c = self.scenario.cluster
        self.work.mkdir(parents=True, exist_ok=True)
        picker = PortPicker()
        ns_port = picker.one()
        self.namesrv_addr = f"{HOST}:{ns_port}"
        ports = {n: picker.broker() for n in BROKER_NODES}
        for n in NODE_ORDER:
            self.cgroups[n] = NodeCgroups.create(self.journal, self.run_id, n)
        for n in BROKER_NODES:
            node_dir = self.work / n
            node_dir.mkdir(parents=True, exist_ok=True)
            self.stores[n] = LoopStore.create(self.journal, str(node_dir / "store.img"), str(node_dir / "store"),
                                              c.store_size, run_id=self.run_id, node=n, label=f"rmq-{n}")
        ha_master = None
        if self._use_relay():
            ha_master = self._start_relay(ports["master"][1], picker.one())
        self._make_node("namesrv", "namesrv", namesrv_properties(c, ns_port), f"{HOST}:{ns_port}")
        for n in BROKER_NODES:
            listen, ha = ports[n]
            layout = BrokerLayout(n, listen, ha, Path(self.stores[n].mount), self.namesrv_addr,
                                  ha_master if n == "slave" else None)
            self._make_node(n, n, broker_properties(c, layout), layout.addr, broker_id=layout.broker_id)
            self.broker_addrs[n] = layout.addr
        for n in NODE_ORDER:
            say(f"cluster: starting {n} ({self.nodes[n].addr})")
            self.nodes[n].start()
            if n != "slave":
                self.nodes[n].wait_ready(c.ready_timeout)
        self.rd.event("cluster_up", backend=self.name, nodes={n: self.nodes[n].addr for n in NODE_ORDER})
        self.nodes["slave"].wait_ready(c.ready_timeout)
        self._wait_ready(say)
        info = self._cluster_info()
        self.rd.write_cluster(info)
        self._check_effective(info["effective_config"])
        write_cluster_state(self.state_dir, self.cluster_id, self.run_id, self.name, list(self.targets.values()))
        self._state_written = True
        self.rd.event("cluster_ready", backend=self.name, nodes={n: self.nodes[n].addr for n in NODE_ORDER})
        say(f"cluster ready: namesrv {self.namesrv_addr}, master {self.broker_addrs['master']}, "
            f"slave {self.broker_addrs['slave']}")

    def _use_relay(self) -> bool:
        mode = self.scenario.cluster.ha_relay
        return mode == "always" or (mode == "auto" and any(f.kind == "ha_link" for _, f in self.scenario.faults))

    def _start_relay(self, master_ha_port: int, relay_port: int) -> str:
        from harness.resources.relay_process import RelayProcess

        self.relay = RelayProcess.start(self.journal, f"{HOST}:{master_ha_port}", str(self.work / "relay.sock"),
                                        listen=f"{HOST}:{relay_port}", run_id=self.run_id,
                                        log_path=str(self.work / "relay.log"))
        return self.relay.listen

    def _make_node(self, name: str, role: str, props: dict[str, Any], addr: str, broker_id: int | None = None) -> None:
        node_dir = self.work / name
        node_dir.mkdir(parents=True, exist_ok=True)
        conf = node_dir / f"{name}.conf"
        conf.write_text(render(props), encoding="utf-8")
        log_dir = node_dir / "logs"
        log_dir.mkdir(exist_ok=True)
        c = self.scenario.cluster
        node = BrokerNode(journal=self.journal, name=name, argv=self.program.argv(role, conf), run_id=self.run_id,
                          pidfile=str(node_dir / "pid"), cgroups=self.cgroups[name].dirs,
                          env=self.program.env(version=c.version, heap=c.heap, node_dir=node_dir, log_dir=log_dir),
                          cwd=str(node_dir), log_path=str(node_dir / "stdout.log"),
                          ready_port=int(addr.rpartition(":")[2]), stop_timeout_s=STOP_TIMEOUT_S, role=role,
                          addr=addr, namesrv_addr=self.namesrv_addr or None,
                          master_addr=self.broker_addrs.get("master"), broker_id=broker_id)
        self.nodes[name] = node
        self.log_sources[name] = [*self.program.log_dirs(node_dir, log_dir), node_dir / "stdout.log",
                                  node_dir / f"{name}.conf"]
        store = self.stores.get(name)
        extras: dict[str, Any] = {"conf": str(conf), "addr": addr}
        if self.relay is not None and role != "namesrv":
            extras.update(self.relay.extras())
        host_port = addr.rpartition(":")[2]
        self.targets[name] = NodeTarget(
            name=name, role=role, run_id=self.run_id, pids=node.pid_source, cgroups=dict(self.cgroups[name].paths),
            store_mount=store.mount if store else None, store_device=store.device if store else None,
            store_image=store.image if store else None,
            ports={"listen": int(host_port), **({"ha": int(props["haListenPort"])} if "haListenPort" in props else {})},
            control=node, extras=extras)

    def _wait_ready(self, say: Callable[[str], None]) -> None:
        t = self.scenario.topic
        timeout = self.scenario.cluster.ready_timeout
        for n in BROKER_NODES:
            brokerclient.create_topic(self.broker_addrs[n], t.name, t.queues)
        deadline = time.monotonic() + timeout
        say(f"cluster: waiting for the route of {t.name}, the slave's HA connection and its catch-up")
        brokerclient.wait_route(self.namesrv_addr, t.name, self.broker_addrs["master"], deadline)
        brokerclient.wait_probe_send_ok(self.namesrv_addr, READY_PROBE_TOPIC, deadline)
        self.nodes["slave"].wait_caught_up(max(0.1, deadline - time.monotonic()))

    def _cluster_info(self) -> dict[str, Any]:
        c = self.scenario.cluster
        effective = {n: brokerclient.broker_config(self.broker_addrs[n]) for n in BROKER_NODES}
        return {
            "backend": self.name, "cluster_id": self.cluster_id, "program": self.program.kind,
            "rocketmq_home": str(self.program.home) if self.program.home else None, "version": c.version,
            "cluster_name": c.cluster_name, "broker_name": c.broker_name, "namesrv": self.namesrv_addr,
            "topic": self.scenario.topic.model_dump(), "ha_relay": self.relay is not None,
            "nodes": [{"name": n, "role": self.nodes[n].role, "addr": self.nodes[n].addr,
                       "pid": (self.nodes[n].pids() or [None])[0], "cgroups": self.targets[n].cgroups,
                       "store_mount": self.targets[n].store_mount, "store_device": self.targets[n].store_device,
                       "store_size": c.store_size if n in BROKER_NODES else None,
                       "conf": self.targets[n].extras["conf"]} for n in NODE_ORDER],
            "requested_config": {n: requested(c, n) for n in BROKER_NODES},
            "effective_config": effective,
        }

    def _check_effective(self, effective: dict[str, dict[str, str]]) -> None:
        allowed = set(self.scenario.cluster.allow_keys)
        problems = [f"{n}: {d}" for n in BROKER_NODES
                    for d in effective_differences(requested(self.scenario.cluster, n), effective[n], allowed)]
        if problems:
            raise ClusterError("effective broker config differs from the scenario: " + "; ".join(problems))

    # --- during the run ---------------------------------------------------------------------------------------

    def start_collectors(self) -> MetricsCollector:
        nodes = [MetricsNode(n, self.nodes[n].pid_source, self.broker_addrs.get(n)) for n in NODE_ORDER]
        collector = MetricsCollector(self.run_id, self.rd.layout.metrics, nodes, brokerclient.runtime_info_quick)
        collector.start()
        return collector

    def read_back(self, timeout_s: float) -> dict[str, int]:
        c = self.scenario.cluster
        sources = [ReadbackSource(n, c.broker_name, self.broker_addrs[n]) for n in BROKER_NODES]
        return read_back(self.run_id, self.scenario.topic.name, self.scenario.topic.queues, sources,
                         brokerclient.read_queue, self.rd.layout.readback, timeout_s)

    def copy_logs(self) -> None:
        dirs = {n: [p for p in paths if p.is_dir()] for n, paths in self.log_sources.items()}
        copy_node_logs(dirs, self.rd.layout.logs)
        for n, paths in self.log_sources.items():
            gc_logs = self.program.gc_logs(getattr(self.nodes.get(n), "started_pids", []))
            for p in [*paths, *gc_logs]:
                if p.is_file():
                    (self.rd.layout.logs / n).mkdir(parents=True, exist_ok=True)
                    (self.rd.layout.logs / n / p.name).write_bytes(p.read_bytes())
            for p in gc_logs:  # the node's own files outside its directory: moved, not left behind
                p.unlink(missing_ok=True)

    # --- down -------------------------------------------------------------------------------------------------

    def down(self) -> None:
        """Stop every process, unmount and detach every store, remove every cgroup; raise the first error after
        trying all of it."""
        errors: list[str] = []

        def attempt(what: str, fn: Callable[[], Any]) -> None:
            try:
                fn()
            except Exception as err:  # noqa: BLE001 - take everything down, report the first failure
                errors.append(f"{what}: {err}")

        for n in reversed(NODE_ORDER):
            if n in self.nodes:
                attempt(f"stop {n}", self.nodes[n].stop)
        if self.relay is not None:
            attempt("stop relay", self.relay.stop)
        brokerclient.shutdown()
        for n, store in self.stores.items():
            attempt(f"store of {n}", store.destroy)
        for n, cg in self.cgroups.items():
            attempt(f"cgroups of {n}", cg.destroy)
        if self._state_written:
            remove_cluster_state(self.state_dir, self.cluster_id)
        if not errors:
            shutil.rmtree(self.work, ignore_errors=True)
        self.rd.event("cluster_down", backend=self.name, nodes=list(self.nodes), errors=errors or None)
        if errors:
            raise ClusterError("; ".join(errors))

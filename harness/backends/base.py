"""`ClusterBackend`: what every backend does the same way, so a backend only says how its nodes are made, started
and taken away.

The seam: what the cluster *is* comes from `harness.topology` (nodes, groups, roles, controllers), what differs by
`cluster.mode` from the backend's `mode` (`MasterSlaveMode` or `ControllerMode`: each node's conf, the start order,
readiness, who holds a role, the read-back), and only *where* the nodes run from the backend (local processes,
compose containers, processes on ssh hosts). One backend class per place, none per mode.

`up()` is the one flow: `start_nodes()` (the backend's own: every node of the topology made and started in the
mode's order, the `nodes`, `targets`, `namesrv_addr` and `broker_addrs` filled in) -> `cluster_up` event -> every
node ready -> the mode's readiness (the topic on every broker, its route at the name server, a probe send SEND_OK,
every slave caught up or in its SyncStateSet) -> the effective config read back into cluster.json and compared with
the request -> the cluster state file (what `rmq-chaos fault|cluster` find) -> `cluster_ready`. `down()` runs the
mode's and the backend's `teardown_steps()` (each tried even when one before it failed), removes the state file and
the work dir, writes `cluster_down`, and raises the errors as one line. Read-back, metrics and log copying are the
same for every backend unless it says otherwise."""
from __future__ import annotations

import hashlib
import shutil
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from faults.cluster_state import remove_cluster_state, write_cluster_state
from faults.target import NodeTarget
from harness import brokerclient
from harness.backends.brokerconf import requested
from harness.backends.errors import ClusterError
from harness.backends.programs import Program
from harness.collectors.logs import copy_node_logs
from harness.collectors.metrics import MetricsCollector, MetricsNode
from harness.rundir import RunDir
from harness.scenario import Scenario, effective_differences
from harness.topology import Topology

WORK_DIR = "work"
UNIX_PATH_MAX = 100
"""AF_UNIX paths are at most 108 bytes; a relay socket in a deeper work dir goes to the temp dir instead."""


def needs_relay(scenario: Scenario) -> bool:
    """Whether the scenario's cluster has the HA relay on the slave's path (`cluster.ha_relay`; `auto`: when a fault
    is `ha_link`)."""
    mode = scenario.cluster.ha_relay
    return mode == "always" or (mode == "auto" and any(f.kind == "ha_link" for _, f in scenario.faults))


def mode_of(backend: Any) -> Any:
    """The backend's `mode`: a `ControllerMode` in controller mode, else a `MasterSlaveMode`."""
    if backend.topology.mode == "controller":
        from harness.backends.controller_mode import ControllerMode

        return ControllerMode(backend)
    from harness.backends.master_slave_mode import MasterSlaveMode

    return MasterSlaveMode(backend)


class ClusterBackend:
    """The shared part of a backend; subclasses implement `start_nodes` and `teardown_steps`."""

    name = "?"

    def __init__(self, scenario: Scenario, rd: RunDir, journal: Any, state_dir: Path, program: Program) -> None:
        self.scenario = scenario
        self.rd = rd
        self.run_id = rd.run_id
        self.cluster_id = rd.run_id
        self.journal = journal
        self.state_dir = Path(state_dir)
        self.work = self.state_dir / WORK_DIR / self.run_id
        self.program = program
        self.nodes: dict[str, Any] = {}
        self.targets: dict[str, NodeTarget] = {}
        self.stores: dict[str, Any] = {}
        self.relay: Any = None
        self.namesrv_addr = ""
        self.broker_addrs: dict[str, str] = {}
        self.log_sources: dict[str, list[Path]] = {}
        self.topology = Topology.of(scenario.cluster)
        self.node_order: tuple[str, ...] = self.topology.node_order
        self.broker_nodes: tuple[str, ...] = self.topology.broker_nodes
        self.mode = mode_of(self)
        """What differs by `cluster.mode` (confs, start order, readiness, roles, targets, read-back): a
        `MasterSlaveMode` or a `ControllerMode`, the same calls."""
        self._state_written = False
        self.up_ns: int | None = None
        """Wall time of `cluster_up`: when the nodes were started (a reused cluster's runs carry it as `started_ns`)."""

    # --- what a backend provides ------------------------------------------------------------------------------

    def start_nodes(self, say: Callable[[str], None]) -> None:
        """Make and start every node of `node_order` (in the order `mode.start_in_order` gives); fill in `nodes`,
        `targets`, `namesrv_addr`, `broker_addrs`."""
        raise NotImplementedError

    def teardown_steps(self) -> Iterable[tuple[str, Callable[[], Any]]]:
        """(what, how) for everything `start_nodes` made, in the order it is taken away."""
        raise NotImplementedError

    def ready_note(self) -> str:
        """Words appended to the "cluster ready" line."""
        return ""

    # --- up ---------------------------------------------------------------------------------------------------

    def up(self, say: Callable[[str], None] = print) -> None:
        timeout = self.scenario.cluster.ready_timeout
        self.work.mkdir(parents=True, exist_ok=True)
        self.start_nodes(say)
        self.up_ns = self.rd.event("cluster_up", backend=self.name, nodes=self.node_addrs())["wall_ns"]
        for n in self.node_order:
            self.nodes[n].wait_ready(timeout)
        t = self.scenario.topic
        for n in self.broker_nodes:
            brokerclient.create_topic(self.broker_addrs[n], t.name, t.queues)
        self.mode.check_ready(say)
        self.mode.start_samplers()
        info = self.cluster_info()
        self.rd.write_cluster(info)
        self.check_effective(info["effective_config"])
        write_cluster_state(self.state_dir, self.cluster_id, self.run_id, self.name, list(self.targets.values()))
        self._state_written = True
        self.rd.event("cluster_ready", backend=self.name, nodes=self.node_addrs())
        say(f"cluster ready: namesrv {self.namesrv_addr}, "
            + ", ".join(f"{n} {self.broker_addrs[n]}" for n in self.broker_nodes) + self.mode.note() + self.ready_note())

    def start_words(self, node: str) -> str:
        """How the "cluster: starting" line names a node (where it runs, if that is not said by its address)."""
        return f"{node} ({self.nodes[node].addr})"

    def start_in_mode_order(self, say: Callable[[str], None]) -> None:
        """Every node started in the mode's order (`mode.start_in_order`), each waited for when the order says so."""
        def start(n: str) -> None:
            say(f"cluster: starting {self.start_words(n)}")
            self.nodes[n].start()

        def start_waiting(n: str) -> None:
            start(n)
            self.nodes[n].wait_ready(self.scenario.cluster.ready_timeout)

        self.mode.start_in_order(start, start_waiting)

    # --- kept for the next run (explore's `cluster: reuse`, harness/cluster_reuse.py) ----------------------------

    def reattach(self, rd: RunDir) -> None:
        """Point the cluster at another run's directory: its events, metrics, read-back (the run's keys) and logs go
        there from now on; the nodes, their cgroups, stores and journal entries keep the cluster's id."""
        self.rd = rd
        self.run_id = rd.run_id

    def prove_healthy(self, say: Callable[[str], None]) -> dict[str, Any]:
        """Raise `ClusterError` (one line) unless every node runs and is ready, the mode's readiness holds again
        (route, probe SEND_OK, every slave caught up or in its SyncStateSet) and the effective config is still the
        one asked; returns cluster.json's content."""
        dead = [n for n in self.node_order if not self.nodes[n].pids()]
        if dead:
            raise ClusterError(f"{', '.join(dead)} not running")
        for n in self.node_order:
            self.nodes[n].wait_ready(self.scenario.cluster.ready_timeout)
        self.mode.check_ready(say)
        info = self.cluster_info()
        self.check_effective(info["effective_config"])
        return info

    def make_stores(self) -> None:
        """Each broker's store: a loop-mounted ext4 image of its own under its node dir (`errors=remount-ro`)."""
        from harness.resources.loop_store import LoopStore

        for n in self.broker_nodes:
            node_dir = self.work / n
            node_dir.mkdir(parents=True, exist_ok=True)
            self.stores[n] = LoopStore.create(self.journal, str(node_dir / "store.img"), str(node_dir / "store"),
                                              self.scenario.cluster.store_size, run_id=self.run_id, node=n,
                                              label=f"rmq-{n}")

    def role_addrs(self) -> list[str]:
        """The brokers' addresses, each group's master (now) first: the consumers' admin calls."""
        return self.mode.role_addrs()

    def group_addrs(self) -> list[list[str]]:
        """Per broker group, its brokers' addresses, the master (now) first."""
        return self.mode.group_addrs()

    def resolve_target(self, target: str) -> str:
        """The node a fault on `target` acts on when it is applied."""
        return self.mode.resolve_target(target)

    def node_addrs(self) -> dict[str, str]:
        return {n: self.nodes[n].addr for n in self.node_order if n in self.nodes}

    def use_relay(self) -> bool:
        return needs_relay(self.scenario)

    def start_relay(self, master_ha_addr: str, listen: str) -> str:
        """The HA relay on the slave's path to `master_ha_addr`, listening on `listen`; returns its address."""
        from harness.resources.relay_process import RelayProcess

        sock = self.work / "relay.sock"
        if len(str(sock)) >= UNIX_PATH_MAX:
            sock = Path(tempfile.gettempdir()) / f"rmq-chaos-{hashlib.sha1(str(sock).encode()).hexdigest()[:12]}.sock"
        self.relay = RelayProcess.start(self.journal, master_ha_addr, str(sock), listen=listen, run_id=self.run_id,
                                        log_path=str(self.work / "relay.log"))
        return self.relay.listen

    def cluster_info(self) -> dict[str, Any]:
        c = self.scenario.cluster
        effective = {n: brokerclient.broker_config(self.broker_addrs[n]) for n in self.broker_nodes}
        return {
            "backend": self.name, "cluster_id": self.cluster_id, "program": self.program.kind,
            "rocketmq_home": str(self.program.home) if self.program.home else None, "version": c.version,
            "cluster_name": c.cluster_name, "broker_name": self.topology.groups[0].name,
            "groups": [{"name": g.name, "members": [m.node for m in g.members]} for g in self.topology.groups],
            "namesrv": self.namesrv_addr, "topic": self.scenario.topic.model_dump(), "ha_relay": self.relay is not None,
            "nodes": [{"name": n, "role": self.nodes[n].role, "addr": self.nodes[n].addr,
                       "group": self.topology.member(n).group if n in self.broker_nodes else None,
                       "pid": (self.nodes[n].pids() or [None])[0], "cgroups": self.targets[n].cgroups,
                       "store_mount": self.targets[n].store_mount, "store_device": self.targets[n].store_device,
                       "store_size": c.store_size if n in self.broker_nodes else None,
                       "conf": self.targets[n].extras["conf"]} for n in self.node_order],
            "requested_config": {n: requested(c, self.topology.member(n).conf_section) for n in self.broker_nodes},
            "effective_config": effective,
        }

    def check_effective(self, effective: dict[str, dict[str, str]]) -> None:
        allowed = set(self.scenario.cluster.allow_keys)
        problems = [f"{n}: {d}" for n in self.broker_nodes
                    for d in effective_differences(requested(self.scenario.cluster,
                                                             self.topology.member(n).conf_section),
                                                   effective[n], allowed)]
        if problems:
            raise ClusterError("effective broker config differs from the scenario: " + "; ".join(problems))

    # --- during the run ---------------------------------------------------------------------------------------

    def metrics_nodes(self) -> list[MetricsNode]:
        return [MetricsNode(n, self.nodes[n].pid_source, self.broker_addrs.get(n)) for n in self.node_order]

    def start_collectors(self) -> MetricsCollector:
        collector = MetricsCollector(self.run_id, self.rd.layout.metrics, self.metrics_nodes(),
                                     brokerclient.runtime_info_quick)
        collector.start()
        return collector

    def read_back(self, timeout_s: float) -> dict[str, int]:
        """Every group's messages read back from its brokers (`mode.read_back`: who is read, under which role)."""
        return self.mode.read_back(timeout_s)

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
        """Take away everything the backend made (`teardown_steps`, then the cluster state file and the work dir);
        raise every error as one line after trying all of it."""
        errors: list[str] = []
        for what, step in [*self.mode.first_steps(), *self.teardown_steps(), *self.mode.last_steps()]:
            try:
                step()
            except Exception as err:  # noqa: BLE001 - take everything down, report the failures
                errors.append(f"{what}: {err}")
        brokerclient.shutdown()
        if self._state_written:
            remove_cluster_state(self.state_dir, self.cluster_id)
        if not errors:
            shutil.rmtree(self.work, ignore_errors=True)
        self.rd.event("cluster_down", backend=self.name, nodes=list(self.nodes), errors=errors or None)
        if errors:
            raise ClusterError("; ".join(errors))

    def stores_and_relay_steps(self) -> list[tuple[str, Callable[[], Any]]]:
        """The relay and the loop-mounted stores: taken away the same way by every backend that made them here."""
        steps: list[tuple[str, Callable[[], Any]]] = []
        if self.relay is not None:
            steps.append(("stop relay", self.relay.stop))
        steps += [(f"store of {n}", store.destroy) for n, store in self.stores.items()]
        return steps

"""The embedded cluster the emulator tests start: a name server, a master and a slave as separate processes on free
127.0.0.1 ports, each broker's store on its own loop-mounted ext4 (`errors=remount-ro`, harness.resources.LoopStore),
optionally in its own cgroups; everything is stopped, unmounted and removed by `close()`, also after a failure.
The tests drive it with the real client (`remoting`): `BrokerAdmin` for admin calls, `NameServerClient` for routes,
`Producer` for sends and `PullConsumer` to read messages back."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from waiting import poll

from faults.journal import Journal
from faults.target import NodeTarget
from harness.backends.ports import PortPicker
from harness.resources.cgroups import NodeCgroups
from harness.resources.loop_store import LoopStore
from remoting.admin import BrokerAdmin
from remoting.client import RemotingClient
from remoting.consumer import PullConsumer
from remoting.errors import MQBrokerException, RemotingError
from remoting.namesrv import NameServerClient
from remoting.producer import Producer
from remoting.route import TopicRouteData
from remoting.stored import MessageExt

STORE_SIZE = 256 << 20
READY_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0
SMALL_HEAP = "-Xms32m -Xmx32m -Xmn16m"
PORT_BASE, PORT_BLOCK, PORT_BLOCKS = 30000, 900, 3
"""Test clusters' ports: 30000-32699 in three blocks, above the harness's own nodes' range (20000-29999,
`harness.backends.ports`) and below Linux's default ephemeral range (32768-60999)."""
_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "gw0")[2:]
_LOW = PORT_BASE + (int(_WORKER) if _WORKER.isdigit() else 0) % PORT_BLOCKS * PORT_BLOCK
_PICKER = PortPicker(low=_LOW, high=_LOW + PORT_BLOCK, remember=256)
"""Remembers the ports this process handed out last (a node may not have bound its port yet)."""


def free_port_pair() -> int:
    """A port p such that p and p+1 are free on 127.0.0.1 (listen port and HA port), from this xdist worker's own
    block below the kernel's ephemeral range: a port drawn from that range (bind to 0) can be taken, between this
    check and the node's bind, as the local port of any outgoing connection on the machine (a CI run failed so:
    "Address already in use"), and another worker's cluster never draws from this block."""
    return _PICKER.block((0, 1))


@dataclass
class Node:
    name: str
    role: str
    port: int
    log_dir: Path
    conf: Path | None = None
    store: LoopStore | None = None
    cgroups: NodeCgroups | None = None
    proc: subprocess.Popen | None = None

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.port}"

    def log(self, name: str) -> str:
        path = self.log_dir / name
        return path.read_text(errors="replace") if path.exists() else ""


class EmuNodeControl:
    """`faults.target.NodeControl` for one emulator node: stop (SIGTERM), start again with the same arguments,
    readiness (answers runtime info), caught up (slave commitlog max offset equals the master's)."""

    def __init__(self, cluster: EmuCluster, role: str) -> None:
        self.cluster, self.role = cluster, role

    def stop(self) -> None:
        self.cluster.stop_node(self.role)

    def start(self) -> None:
        node = self.cluster.nodes[self.role]
        self.cluster._spawn(node, ["-m", "emulator.broker", "-c", str(node.conf)])

    def wait_ready(self, timeout_s: float) -> None:
        poll(lambda: self.cluster._answers(self.cluster.nodes[self.role]), timeout_s, f"{self.role} to answer")

    def wait_caught_up(self, timeout_s: float) -> None:
        poll(lambda: self.cluster.caught_up(), timeout_s, "the slave to catch up with the master")


@dataclass
class EmuCluster:
    workdir: Path
    version: str = "4.9.1"
    master_conf: dict[str, str] = field(default_factory=dict)
    slave_conf: dict[str, str] = field(default_factory=dict)
    cgroups: bool = False
    heap: str = SMALL_HEAP
    """HEAP_OPTS of both brokers (the JVM-like heap and eden)"""
    store_size: int = STORE_SIZE
    """bytes of each broker's loop-mounted store"""
    nodes: dict[str, Node] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.run_id = f"emu-{os.getpid()}-{int(time.time() * 1000) % 10**8}"
        self.journal = Journal(self.workdir / "state")
        self.admin = BrokerAdmin()
        self.consumer = PullConsumer("emu_test_consumer")
        self.namesrv_client: NameServerClient | None = None
        self._producers: list[Producer] = []

    # --- start ------------------------------------------------------------------------------------------------
    def start(self, wait_slave: bool = True) -> EmuCluster:
        namesrv = Node("namesrv", "namesrv", free_port_pair(), self.workdir / "logs" / "namesrv")
        self.nodes["namesrv"] = namesrv
        (self.workdir / "namesrv.conf").write_text(f"listenPort={namesrv.port}\n")
        self._spawn(namesrv, ["-m", "emulator.namesrv", "-c", str(self.workdir / "namesrv.conf")])
        self.namesrv_client = NameServerClient(RemotingClient(namesrv.addr))
        for role, extra in (("master", self.master_conf), ("slave", self.slave_conf)):
            node = self._broker_node(role, extra)
            self._spawn(node, ["-m", "emulator.broker", "-c", str(node.conf)])
            poll(lambda n=node: self._answers(n), READY_TIMEOUT_S, f"{role} to answer")
        if wait_slave:
            self.wait_slave_connected()
        return self

    def _broker_node(self, role: str, extra: dict[str, str]) -> Node:
        node = Node(role, role, free_port_pair(), self.workdir / "logs" / role)
        mount = self.workdir / f"{role}-store"
        node.store = LoopStore.create(self.journal, str(self.workdir / f"{role}.img"), str(mount), self.store_size,
                                      run_id=self.run_id, node=role)
        if self.cgroups:
            node.cgroups = NodeCgroups.create(self.journal, self.run_id, role)
        conf = {
            "brokerClusterName": "DefaultCluster", "brokerName": "broker-a",
            "brokerId": "0" if role == "master" else "1",
            "brokerRole": "SYNC_MASTER" if role == "master" else "SLAVE",
            "flushDiskType": "SYNC_FLUSH" if role == "master" else "ASYNC_FLUSH",
            "listenPort": str(node.port), "namesrvAddr": self.nodes["namesrv"].addr,
            "brokerIP1": "127.0.0.1", "brokerIP2": "127.0.0.1",
            "storePathRootDir": f"{node.store.mount}/store",
            "storePathCommitLog": f"{node.store.mount}/store/commitlog",
            "mappedFileSizeCommitLog": str(1 << 20),
            "slaveReadEnable": "true",
        }
        conf.update(extra)
        node.conf = self.workdir / f"{role}.conf"
        node.conf.write_text("".join(f"{k}={v}\n" for k, v in conf.items()))
        self.nodes[role] = node
        return node

    def _spawn(self, node: Node, args: list[str]) -> None:
        node.log_dir.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, ROCKETMQ_LOG_DIR=str(node.log_dir), RMQ_EMULATOR_BIND="127.0.0.1",
                   ROCKETMQ_VERSION=self.version, HEAP_OPTS=self.heap, PYTHONUNBUFFERED="1")
        dirs = node.cgroups.dirs if node.cgroups else []

        def enter_cgroups() -> None:
            for d in dirs:
                with open(os.path.join(d, "cgroup.procs"), "w") as f:
                    f.write(str(os.getpid()))

        out = open(node.log_dir / "stdout.log", "wb")
        node.proc = subprocess.Popen([sys.executable, *args], env=env, stdout=out, stderr=subprocess.STDOUT,
                                     cwd=str(Path(__file__).resolve().parents[2]), preexec_fn=enter_cgroups)
        out.close()

    def _answers(self, node: Node) -> bool:
        assert node.proc is not None
        if node.proc.poll() is not None:
            raise AssertionError(f"{node.name} exited {node.proc.returncode}: {node.log('stdout.log')[-2000:]}")
        try:
            self.admin.get_runtime_info(node.addr)
            return True
        except RemotingError:
            return False

    def wait_slave_connected(self, timeout_s: float = READY_TIMEOUT_S) -> None:
        poll(lambda: int(self.runtime("master").get("haSlaveAckOffset", "-1")) >= 0, timeout_s,
             "the slave's HA connection and its first offset report")

    # --- access -----------------------------------------------------------------------------------------------
    @property
    def master(self) -> Node:
        return self.nodes["master"]

    @property
    def slave(self) -> Node:
        return self.nodes["slave"]

    @property
    def namesrv_addr(self) -> str:
        return self.nodes["namesrv"].addr

    def runtime(self, role: str) -> dict[str, str]:
        return self.admin.get_runtime_info(self.nodes[role].addr)

    def create_topic(self, topic: str, queues: int) -> TopicRouteData:
        """UPDATE_AND_CREATE_TOPIC on both brokers (as the harness does, so the slave answers pulls before its
        SlaveSynchronize copies the master's topics), then the route as the name server gives it to producers."""
        for node in (self.master, self.slave):
            self.admin.create_topic(node.addr, topic, queues, queues)
        assert self.namesrv_client is not None
        return poll(lambda: self._route_with(topic, queues), READY_TIMEOUT_S, f"the route of {topic}")

    def _route_with(self, topic: str, queues: int) -> TopicRouteData | None:
        try:
            route = self.namesrv_client.get_route(topic)  # type: ignore[union-attr]
        except RemotingError:
            return None
        return route if route.queue_datas and route.queue_datas[0].write_queue_nums == queues else None

    def producer(self, group: str = "emu_test_producer", profile: str = "java-4.9.1", **overrides) -> Producer:
        """A producer of the cluster (closed by `close()`); `overrides` are the profile's settings."""
        producer = Producer(self.namesrv_addr, group, profile, **overrides)
        self._producers.append(producer)
        return producer

    def pull_all(self, role: str, topic: str, queues: int, refused: list | None = None) -> list[MessageExt]:
        """Every message of `topic` held by `role`'s broker, queue after queue (PULL_MESSAGE). With `refused` (a list),
        a queue whose pull the broker refuses (MQBrokerException, e.g. a read-only slave's consume-queue entry over
        bytes it never wrote: IndexOutOfBoundsException) is read up to there and the error appended to it."""
        addr = self.nodes[role].addr
        messages: list[MessageExt] = []
        for q in range(queues):
            try:
                for m in self.consumer.iter_queue(addr, topic, q):
                    messages.append(m)
            except MQBrokerException as e:
                if refused is None:
                    raise
                refused.append((q, e))
        return messages

    def target(self, role: str) -> NodeTarget:
        node = self.nodes[role]
        store = node.store
        return NodeTarget(name=role, role=role, run_id=self.run_id,
                          pids=lambda n=node: [n.proc.pid] if n.proc and n.proc.poll() is None else [],
                          cgroups={d.split("/sys/fs/cgroup/")[1].split("/")[0]: d
                                   for d in (node.cgroups.dirs if node.cgroups else [])},
                          store_mount=store.mount if store else None, store_device=store.device if store else None,
                          store_image=store.image if store else None, ports={"listen": node.port, "ha": node.port + 1},
                          control=EmuNodeControl(self, role))

    def caught_up(self) -> bool:
        try:
            master = int(self.runtime("master")["commitLogMaxOffset"])
            return master == int(self.runtime("slave")["commitLogMaxOffset"])
        except Exception:
            return False

    def stop_node(self, role: str) -> None:
        proc = self.nodes[role].proc
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(STOP_TIMEOUT_S)

    # --- stop -------------------------------------------------------------------------------------------------
    def close(self) -> None:
        """Stop our processes (by pid), thaw and unmount our stores, remove our cgroups. Never raises half-way."""
        errors: list[str] = []
        for node in self.nodes.values():
            if node.store is not None:
                subprocess.run(["fsfreeze", "-u", node.store.mount], capture_output=True)
        for role in reversed(list(self.nodes)):
            self.stop_node(role)
        for producer in self._producers:
            producer.close()
        self.admin.close()
        self.consumer.close()
        if self.namesrv_client is not None:
            self.namesrv_client.client.shutdown()
        for node in self.nodes.values():
            for resource in (node.cgroups, node.store):
                if resource is None:
                    continue
                try:
                    resource.destroy()
                except Exception as e:  # keep cleaning the others
                    errors.append(f"{node.name}: {e}")
        if errors:
            raise RuntimeError("; ".join(errors))

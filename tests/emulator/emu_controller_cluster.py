"""The embedded cluster in 5.x controller mode, for the controller tests: a name server with the controller embedded
(`enableControllerInNamesrv`) or a plain name server and three standalone controllers (`emulator.controller_main`),
and N brokers (`broker-0`, `broker-1`, ...) with `enableControllerMode=true`, `brokerId=-1`, the same broker name,
stores in plain directories. Built on `EmuCluster` (spawning, readiness, producers, read-back, close); roles are
found by asking the controller, never assumed. `freeze`/`thaw` stop and continue a node (SIGSTOP/SIGCONT), `kill`
sends SIGKILL, `restart` starts a node again with its configuration."""
from __future__ import annotations

import os
import signal
from dataclasses import dataclass, field
from pathlib import Path

from emu_cluster import READY_TIMEOUT_S, EmuCluster, Node, free_port_pair, poll

from remoting.client import RemotingClient
from remoting.controller_admin import ControllerAdmin
from remoting.controller_bodies import ReplicasInfo
from remoting.errors import RemotingError
from remoting.namesrv import NameServerClient

BROKER_NAME = "broker-a"
CLUSTER = "ChaosCluster"


@dataclass
class ControllerCluster(EmuCluster):
    version: str = "5.3.0"
    controllers: int = 0
    """0: embedded in the name server; 3: three standalone controllers"""
    brokers: int = 2
    broker_conf: dict[str, str] = field(default_factory=dict)
    controller_conf: dict[str, str] = field(default_factory=dict)
    frozen: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        super().__post_init__()
        self.ctrl = ControllerAdmin()
        self.peers: list[tuple[str, int]] = []

    # --- start ------------------------------------------------------------------------------------------------
    def start(self, wait_slave: bool = True) -> ControllerCluster:
        namesrv = Node("namesrv", "namesrv", free_port_pair(), self.workdir / "logs" / "namesrv")
        self.nodes["namesrv"] = namesrv
        count = self.controllers or 1
        self.peers = [(f"n{i}", free_port_pair()) for i in range(count)]
        peers = ";".join(f"{pid}-127.0.0.1:{port}" for pid, port in self.peers)
        group = {"controllerDLegerGroup": "group1", "controllerDLegerPeers": peers, **self.controller_conf}
        ns_conf = {"listenPort": str(namesrv.port)}
        if not self.controllers:
            ns_conf.update(enableControllerInNamesrv="true", controllerDLegerSelfId="n0",
                           controllerStorePath=str(self.workdir / "namesrv" / "controller-store"), **group)
        namesrv.conf = self._write_conf("namesrv", ns_conf)
        self._spawn(namesrv, ["-m", "emulator.namesrv", "-c", str(namesrv.conf)])
        for i, (pid, port) in enumerate(self.peers if self.controllers else []):
            node = Node(f"controller-{i}", "controller", port, self.workdir / "logs" / f"controller-{i}")
            node.conf = self._write_conf(node.name, {
                **group, "controllerDLegerSelfId": pid,
                "controllerStorePath": str(self.workdir / node.name / "controller-store")})
            self.nodes[node.name] = node
            self._spawn(node, ["-m", "emulator.controller_main", "-c", str(node.conf)])
        self.namesrv_client = NameServerClient(RemotingClient(namesrv.addr))
        poll(self.leader, READY_TIMEOUT_S, "a controller leader")
        for i in range(self.brokers):
            self._start_broker(i)
        poll(lambda: self.master_name(), READY_TIMEOUT_S, "a master")
        if wait_slave:
            self.wait_in_sync(self.brokers)
        return self

    def _write_conf(self, name: str, conf: dict[str, str]) -> Path:
        path = self.workdir / f"{name}.conf"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(f"{k}={v}\n" for k, v in conf.items()))
        return path

    def _start_broker(self, i: int) -> Node:
        node = Node(f"broker-{i}", "broker", free_port_pair(), self.workdir / "logs" / f"broker-{i}")
        store = self.workdir / node.name / "store"
        conf = {"brokerClusterName": CLUSTER, "brokerName": BROKER_NAME, "brokerId": "-1", "brokerRole": "SLAVE",
                "flushDiskType": "ASYNC_FLUSH", "enableControllerMode": "true",
                "controllerAddr": ";".join(self.controller_addrs), "allAckInSyncStateSet": "true",
                "namesrvAddr": self.namesrv_addr, "brokerIP1": "127.0.0.1", "listenPort": str(node.port),
                "storePathRootDir": str(store), "storePathCommitLog": str(store / "commitlog"),
                "mappedFileSizeCommitLog": str(1 << 20), "haSendHeartbeatInterval": "1000",
                "autoCreateTopicEnable": "true", "slaveReadEnable": "true", **self.broker_conf}
        node.conf = self._write_conf(node.name, conf)
        self.nodes[node.name] = node
        self._spawn(node, ["-m", "emulator.broker", "-c", str(node.conf)])
        poll(lambda: self._answers(node), READY_TIMEOUT_S, f"{node.name} to answer")
        return node

    # --- the controller's view --------------------------------------------------------------------------------
    @property
    def controller_addrs(self) -> list[str]:
        return [f"127.0.0.1:{port}" for _, port in self.peers]

    def live_controllers(self) -> list[str]:
        alive = []
        for i, addr in enumerate(self.controller_addrs):
            node = self.nodes.get(f"controller-{i}") or self.nodes["namesrv"]
            if node.proc is not None and node.proc.poll() is None and node.name not in self.frozen:
                alive.append(addr)
        return alive

    def leader(self) -> str | None:
        """The leader's address as a live controller that knows one answers (None while there is none)."""
        for addr in self.live_controllers():
            try:
                meta = self.ctrl.get_controller_metadata(addr)
            except RemotingError:
                continue
            if meta.leader_address:
                return meta.leader_address
        return None

    def sync_state(self) -> ReplicasInfo | None:
        leader = self.leader()
        if leader is None:
            return None
        try:
            return self.ctrl.get_sync_state_data(leader, [BROKER_NAME]).get(BROKER_NAME)
        except RemotingError:
            return None

    def node_at(self, addr: str | None) -> Node | None:
        return next((n for n in self.nodes.values() if n.role == "broker" and n.addr == addr), None)

    def master_name(self) -> str | None:
        info = self.sync_state()
        node = self.node_at(info.master_address if info else None)
        return node.name if node else None

    def slave_names(self) -> list[str]:
        master = self.master_name()
        return [n.name for n in self.nodes.values() if n.role == "broker" and n.name != master]

    def wait_in_sync(self, members: int, timeout_s: float = READY_TIMEOUT_S) -> ReplicasInfo:
        return poll(lambda: (i := self.sync_state()) is not None and len(i.sync_state_set) == members and i, timeout_s,
                    f"a SyncStateSet of {members}")

    def route_master(self, topic: str) -> str | None:
        """The address the name server gives for brokerId 0 of `topic`'s route."""
        try:
            route = self.namesrv_client.get_route(topic)  # type: ignore[union-attr]
        except RemotingError:
            return None
        return route.broker_datas[0].broker_addrs.get(0) if route.broker_datas else None

    # --- faults -----------------------------------------------------------------------------------------------
    def _signal(self, name: str, sig: int) -> None:
        proc = self.nodes[name].proc
        assert proc is not None and proc.poll() is None, f"{name} is not running"
        os.kill(proc.pid, sig)

    def kill(self, name: str) -> None:
        self._signal(name, signal.SIGKILL)
        self.nodes[name].proc.wait(10)  # type: ignore[union-attr]

    def freeze(self, name: str) -> None:
        """SIGSTOP, and wait until every thread of the process is stopped (the signal is delivered asynchronously)."""
        self._signal(name, signal.SIGSTOP)
        self.frozen.add(name)
        pid = self.nodes[name].proc.pid  # type: ignore[union-attr]
        poll(lambda: _all_stopped(pid), 10, f"{name} to stop", 0.005)

    def thaw(self, name: str) -> None:
        self._signal(name, signal.SIGCONT)
        self.frozen.discard(name)

    def restart(self, name: str) -> None:
        node = self.nodes[name]
        module = {"broker": "emulator.broker", "namesrv": "emulator.namesrv"}.get(node.role, "emulator.controller_main")
        self._spawn(node, ["-m", module, "-c", str(node.conf)])
        if node.role == "broker":
            poll(lambda: self._answers(node), READY_TIMEOUT_S, f"{name} to answer")

    def close(self) -> None:
        for name in list(self.frozen):
            try:
                self.thaw(name)
            except AssertionError:
                pass
        self.ctrl.close()
        super().close()


def _all_stopped(pid: int) -> bool:
    try:
        tids = os.listdir(f"/proc/{pid}/task")
        states = [Path(f"/proc/{pid}/task/{t}/stat").read_text().rsplit(")", 1)[1].split()[0] for t in tids]
    except OSError:
        return False
    return all(state in ("T", "t") for state in states)

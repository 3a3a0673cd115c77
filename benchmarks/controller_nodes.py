"""A 5.x controller-mode cluster for the failover benchmark, the real Apache RocketMQ or the emulator from the same
configuration files: a name server (controller embedded, or plain with three standalone controllers) and N brokers
`broker-0`.. of one broker set. Apache nodes are the distribution's `bin/mqnamesrv`, `bin/mqcontroller`,
`bin/mqbroker` (which exec the JVM: the pid is the JVM's) with a small heap and `user.home` per node, so logs land in
`<node>/logs/rocketmqlogs/`; emulator nodes are `python -m emulator.namesrv|controller_main|broker` with
`ROCKETMQ_LOG_DIR` set to the same place. Both log with milliseconds (Apache through a ROCKETMQ_HOME of links and a copy of its
`conf/` with the logback patterns changed, made at run time; the emulator through `RMQ_EMULATOR_LOG_MILLIS`). Every process is ours, killed by pid at the end; the JVMs' GC logs in
/dev/shm are removed with them."""
from __future__ import annotations

import glob
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from support import REPO

NS_PORT = 19876
PEER_PORTS = (19878, 19868, 19858)
BROKER_PORTS = (30911, 31911, 32911)
JAVA_HEAP = "-Xms256m -Xmx256m -Xmn128m"
BOOT_TIMEOUT_S = 120.0


@dataclass
class Node:
    name: str
    kind: str  # namesrv | controller | broker
    home: Path
    conf: Path
    proc: subprocess.Popen | None = None

    @property
    def log_dir(self) -> Path:
        return self.home / "logs" / "rocketmqlogs"

    def log(self, name: str) -> str:
        path = self.log_dir / name
        return path.read_text(errors="replace") if path.exists() else ""


@dataclass
class Cluster:
    program: str  # apache | emulator
    workdir: Path
    rocketmq_home: Path | None = None
    controllers: int = 0
    brokers: int = 2
    broker_conf: dict[str, str] = field(default_factory=dict)
    controller_conf: dict[str, str] = field(default_factory=dict)
    nodes: dict[str, Node] = field(default_factory=dict)

    @property
    def namesrv_addr(self) -> str:
        return f"127.0.0.1:{NS_PORT}"

    @property
    def controller_addrs(self) -> list[str]:
        return [f"127.0.0.1:{p}" for p in PEER_PORTS[: self.controllers or 1]]

    def broker_addr(self, name: str) -> str:
        return f"127.0.0.1:{BROKER_PORTS[int(name.split('-')[1])]}"

    def start(self) -> None:
        peers = ";".join(f"n{i}-{a}" for i, a in enumerate(self.controller_addrs))
        group = {"controllerDLegerGroup": "group1", "controllerDLegerPeers": peers, **self.controller_conf}
        ns = {"listenPort": str(NS_PORT)}
        if not self.controllers:
            ns.update(enableControllerInNamesrv="true", controllerDLegerSelfId="n0",
                      controllerStorePath=str(self.workdir / "namesrv" / "controller-store"), **group)
        self._launch("namesrv", "namesrv", ns, "The Name Server boot success")
        for i in range(self.controllers):
            self._launch(f"controller-{i}", "controller", {
                **group, "controllerDLegerSelfId": f"n{i}",
                "controllerStorePath": str(self.workdir / f"controller-{i}" / "controller-store")}, None)
        for i in range(self.controllers):
            self._wait_boot(self.nodes[f"controller-{i}"], "boot success")
        for i in range(self.brokers):
            store = self.workdir / f"broker-{i}" / "store"
            self._launch(f"broker-{i}", "broker", {
                "brokerClusterName": "ChaosCluster", "brokerName": "broker-a", "brokerId": "-1",
                "brokerRole": "SLAVE", "flushDiskType": "ASYNC_FLUSH", "enableControllerMode": "true",
                "controllerAddr": ";".join(self.controller_addrs), "allAckInSyncStateSet": "true",
                "namesrvAddr": self.namesrv_addr, "brokerIP1": "127.0.0.1", "autoCreateTopicEnable": "true",
                "listenPort": str(BROKER_PORTS[i]), "haListenPort": str(BROKER_PORTS[i] + 1),
                "storePathRootDir": str(store), "storePathCommitLog": str(store / "commitlog"),
                **self.broker_conf}, None)
        for i in range(self.brokers):
            self._wait_boot(self.nodes[f"broker-{i}"], "boot success")

    def _launch(self, name: str, kind: str, conf: dict[str, str], wait_for: str | None) -> Node:
        home = self.workdir / name
        home.mkdir(parents=True, exist_ok=True)
        path = home / f"{kind}.conf"
        path.write_text("".join(f"{k}={v}\n" for k, v in conf.items()))
        node = Node(name, kind, home, path)
        node.log_dir.mkdir(parents=True, exist_ok=True)
        self.nodes[name] = node
        self.spawn(node)
        if wait_for:
            self._wait_boot(node, wait_for)
        return node

    def spawn(self, node: Node) -> None:
        if self.program == "apache":
            script = {"namesrv": "mqnamesrv", "controller": "mqcontroller", "broker": "mqbroker"}[node.kind]
            home = self._shadow_home()
            argv = [str(home / "bin" / script), "-c", str(node.conf)]
            class_log = f"-Xlog:class+load=info:file={node.home / 'classload.log'}:uptimemillis"
            env = dict(os.environ, ROCKETMQ_HOME=str(home),
                       JAVA_OPT_EXT=f"{JAVA_HEAP} -Duser.home={node.home} {class_log}")
        else:
            module = {"namesrv": "emulator.namesrv", "controller": "emulator.controller_main",
                      "broker": "emulator.broker"}[node.kind]
            argv = [sys.executable, "-m", module, "-c", str(node.conf)]
            env = dict(os.environ, ROCKETMQ_VERSION="5.3.0", ROCKETMQ_LOG_DIR=str(node.log_dir),
                       RMQ_EMULATOR_BIND="127.0.0.1", PYTHONPATH=str(REPO), RMQ_EMULATOR_LOG_MILLIS="1")
        with open(node.home / "out.log", "ab") as out:
            node.proc = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=str(REPO))

    def _shadow_home(self) -> Path:
        """A ROCKETMQ_HOME in the work directory: `bin` and `lib` link to the distribution's, `conf` is a copy whose
        logback files log milliseconds (the scripts name `$ROCKETMQ_HOME/conf/rmq.<role>.logback.xml` last on the
        command line, so the copy must be there). Made at run time, removed with the work directory."""
        home = self.workdir / "rocketmq-home"
        if not home.exists():
            (home / "conf").mkdir(parents=True)
            for name in ("bin", "lib"):
                (home / name).symlink_to(self.rocketmq_home / name)  # type: ignore[operator]
            for source in (self.rocketmq_home / "conf").iterdir():  # type: ignore[operator]
                if source.is_file():
                    text = source.read_text(errors="replace")
                    (home / "conf" / source.name).write_text(text.replace("HH:mm:ss,GMT+8", "HH:mm:ss.SSS,GMT+8"))
        return home

    def _wait_boot(self, node: Node, text: str) -> None:
        deadline = time.monotonic() + BOOT_TIMEOUT_S
        while time.monotonic() < deadline:
            if text in (node.home / "out.log").read_text(errors="replace"):
                return
            if node.proc is not None and node.proc.poll() is not None:
                raise SystemExit(f"{node.name} exited {node.proc.returncode}: see {node.home / 'out.log'}")
            time.sleep(0.2)
        raise SystemExit(f"{node.name} did not boot in {BOOT_TIMEOUT_S}s: see {node.home / 'out.log'}")

    def classes_loaded(self, name: str, start: float, end: float) -> int | None:
        """How many classes the node's JVM loaded between wall times `start` and `end` (Apache only: its
        `-Xlog:class+load` file, uptime in ms; the JVM's start from /proc)."""
        node = self.nodes[name]
        path = node.home / "classload.log"
        if self.program != "apache" or node.proc is None or not path.exists():
            return None
        try:
            ticks = int(Path(f"/proc/{node.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
        except (OSError, IndexError, ValueError):
            return None
        boot = next(int(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines()
                    if line.startswith("btime"))
        jvm_start = boot + ticks / os.sysconf("SC_CLK_TCK")
        count = 0
        for line in path.read_text(errors="replace").splitlines():
            if line.startswith("[") and "ms]" in line:
                at = jvm_start + int(line[1:line.index("ms]")]) / 1000
                count += start <= at <= end
        return count

    def signal(self, name: str, sig: int) -> None:
        proc = self.nodes[name].proc
        if proc is not None and proc.poll() is None:
            os.kill(proc.pid, sig)

    def stop(self) -> None:
        """SIGCONT then SIGKILL every process we started (by pid), and the JVMs' GC logs."""
        for node in self.nodes.values():
            proc = node.proc
            if proc is None:
                continue
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGCONT)
                os.kill(proc.pid, signal.SIGKILL)
            proc.wait(30)
            for path in glob.glob(f"/dev/shm/rmq_*_gc_{proc.pid}_*"):
                os.remove(path)

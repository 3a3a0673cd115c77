"""One node of the local backend as a process we can stop and start again (`NodeControl` of `faults.target`): the
program's argv and environment, the node's cgroups, its log file and pidfile, and the checks that say it is ready
(name server: its port answers; broker: it answers GET_BROKER_RUNTIME_INFO and is registered with the name server)
or caught up (the slave's commitLogMaxOffset has reached the master's).

`to_json()` names `node_from_json` as its factory, so `rmq-chaos fault ...` can rebuild the control of a node of a
running cluster from the cluster state file (the readonly_fs revert stops and starts the broker)."""
from __future__ import annotations

import socket
import time
from dataclasses import dataclass, field
from typing import Any

from faults.journal import Journal
from faults.system.procs import ProcId
from faults.target import PidFile
from harness.resources.processes import ManagedProcess, spawn

POLL_S = 0.1
STOP_TIMEOUT_S = 15.0


class NodeNotReady(TimeoutError):
    pass


@dataclass
class NodeSpec:
    """Everything needed to start a node again (the JSON form of a control)."""

    name: str
    role: str
    run_id: str
    argv: list[str]
    env: dict[str, str]
    cwd: str
    log_path: str
    pidfile: str
    cgroups: list[str]
    addr: str
    namesrv_addr: str | None = None
    master_addr: str | None = None
    broker_id: int | None = None

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class LocalNode:
    spec: NodeSpec
    journal: Journal
    process: ManagedProcess | None = field(default=None, repr=False)

    @property
    def pids(self) -> PidFile:
        return PidFile(self.spec.pidfile)

    # --- NodeControl ------------------------------------------------------------------------------------------

    def start(self) -> None:
        if self.process is not None and self.process.alive():
            return
        s = self.spec
        self.process = spawn(self.journal, s.argv, name=s.name, cgroups=s.cgroups, env=s.env, cwd=s.cwd,
                             log_path=s.log_path, run_id=s.run_id, extra_undo=[{"op": "rm", "path": s.pidfile}])
        self.pids.write(self.process.proc)

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop(STOP_TIMEOUT_S)
            self.process = None
            return
        p = self.pids.read()  # rebuilt from the state file: end the pid the file names
        if p is not None and p.exists():
            from faults.undo import run_ops
            run_ops([{"op": "kill_procs", "procs": [p.to_json()], "timeout_s": STOP_TIMEOUT_S}])

    def wait_ready(self, timeout_s: float) -> None:
        _poll(lambda: self.ready(), timeout_s, f"{self.spec.name} ({self.spec.addr}) not ready")

    def wait_caught_up(self, timeout_s: float) -> None:
        self.wait_ready(timeout_s)
        if self.spec.role == "namesrv":
            return
        _poll(lambda: self.caught_up(), timeout_s, f"{self.spec.name}: the slave did not catch up with the master")

    def to_json(self) -> dict[str, Any]:
        return {"factory": "harness.backends.localnode:node_from_json", "spec": self.spec.to_json()}

    # --- checks -----------------------------------------------------------------------------------------------

    def alive(self) -> bool:
        p = self.pids.read()
        return p is not None and p.alive()

    def ready(self) -> bool:
        if not self.alive():
            raise NodeNotReady(f"{self.spec.name}: the process is not running (see {self.spec.log_path})")
        if self.spec.role == "namesrv":
            return port_open(self.spec.addr)
        from harness import brokerclient
        if brokerclient.runtime_info(self.spec.addr) is None:
            return False
        return brokerclient.registered(self.spec.namesrv_addr or "", self.spec.addr, self.spec.broker_id)

    def caught_up(self) -> bool:
        from harness import brokerclient
        master = brokerclient.runtime_info(self.spec.master_addr or self.spec.addr)
        mine = brokerclient.runtime_info(self.spec.addr)
        if not master or not mine:
            return False
        return int(mine.get("commitLogMaxOffset", -1)) >= int(master.get("commitLogMaxOffset", 0))


def node_from_json(data: dict[str, Any], journal: Journal) -> LocalNode:
    """The factory `NodeTarget.from_json` calls for a control written by `LocalNode.to_json`."""
    node = LocalNode(NodeSpec(**data["spec"]), journal)
    return node


def port_open(addr: str, timeout_s: float = 0.5) -> bool:
    host, _, port = addr.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout_s):
            return True
    except OSError:
        return False


def _poll(check: Any, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except NodeNotReady:
            raise
        except Exception as err:  # noqa: BLE001 - not ready yet; keep the last reason for the message
            last = err
        time.sleep(POLL_S)
    raise NodeNotReady(f"{what} within {timeout_s:g}s" + (f" (last error: {last})" if last else ""))


__all__ = ["LocalNode", "NodeNotReady", "NodeSpec", "ProcId", "node_from_json", "port_open"]

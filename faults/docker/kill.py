"""`kill` on a container: `docker kill --signal <signal>` (SIGKILL by default: the container stops at once), with an
optional restart after N seconds through the node's control (`docker start`, then ready). Verify: Docker reports
the container not running and its processes are gone. Revert: start it if it is still down."""
from __future__ import annotations

import re
import signal
import threading
from datetime import UTC, datetime

from faults import guard
from faults.docker import engine
from faults.errors import FaultRefused
from faults.process_kill import ProcessKill
from faults.system.procs import ProcId

NOT_RUNNING = ("exited", "dead", "created")


def finished_ns(stamp: str | None) -> int | None:
    """Docker's `State.FinishedAt` (RFC 3339, nanoseconds, UTC) as wall-clock ns; None when unset (year 1)."""
    m = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?Z", stamp or "")
    if m is None or m.group(1).startswith("0001"):
        return None
    whole = datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC)
    return int(whole.timestamp()) * 1_000_000_000 + int((m.group(2) or "0").ljust(9, "0")[:9])


class ContainerKill(ProcessKill):
    CONTAINER_TARGETS = True
    DOCKER_VARIANT = None

    def check(self) -> None:
        guard.check_node(self.kind, self.target, containers=True)
        if self.params.signal not in signal.Signals.__members__:
            raise FaultRefused(f"{self.kind}: params.signal: unknown signal {self.params.signal!r}")
        if self.params.restart_after_s is not None and self.target.control is None:
            raise FaultRefused(f"{self.kind}: node {self.target.name} has no control to restart it")
        ct = engine.container(self.target.container or "")
        if ct.status != "running":
            raise FaultRefused(f"{self.kind}: container {ct.name} of node {self.target.name} is {ct.status}, "
                               f"not running")
        self.state["container"] = ct.id
        self.state["procs"] = [p.to_json() for p in guard.proc_ids_of(self.target)]

    def inject(self) -> dict:
        ct = engine.container(self.state["container"])
        try:
            ct.kill(signal=self.params.signal)
        except Exception as e:  # noqa: BLE001 - the SDK's APIError, as one line
            raise engine.api_error(f"kill {ct.name}", e) from e
        if self.params.restart_after_s is not None:
            self._timer = threading.Timer(self.params.restart_after_s, self._restart, args=("timer",))
            self._timer.daemon = True
            self._timer.start()
        return {"container": ct.name, "signal": self.params.signal, "pids": [p[0] for p in self.state["procs"]],
                "restart_after_s": self.params.restart_after_s}

    def measure(self) -> tuple[bool, dict]:
        ct = engine.container(self.state["container"])
        procs = [ProcId.from_json(p) for p in self.state["procs"]]
        left = {p.pid: p.state() for p in procs if p.alive()}
        evidence = {"docker_status": ct.status, "exit_code": ct.attrs["State"].get("ExitCode"), "left": left,
                    "killed": [p.pid for p in procs]}
        died = finished_ns(ct.attrs["State"].get("FinishedAt"))
        if died is not None:
            evidence["died_ns"] = died  # Docker's own stamp: `docker kill` returns after it, the apply's ok later
        return ct.status in NOT_RUNNING and not left, evidence

    def shortfall(self, evidence: dict) -> tuple[str, str]:
        return (f"container {evidence.get('docker_status')}, still running: {evidence.get('left')}",
                "the container stopped and every killed process gone")

    def measure_gone(self) -> dict:
        ct = engine.container(self.state["container"])
        return {"docker_status_after": ct.status, "pids_after": self.target.pids()}

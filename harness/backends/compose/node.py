"""A node of the compose backend: one container of the run's compose project, as the faults' `NodeControl`:
`stop()` = `docker stop` (and wait until it is down), `start()` = `docker start`, ready = the container runs, its port
accepts and (brokers) it answers GET_BROKER_RUNTIME_INFO and the name server lists it; caught up = the slave's
commitLogMaxOffset reached the master's (the local backend's checks). Its pids (the container's main process, seen
from the host) are kept in a pidfile rewritten at every start, so `NodeTarget.pids` survives JSON.

`to_json()` names `ContainerNode.from_json` as the factory: `rmq-chaos fault ...` rebuilds it from the cluster state
file (the readonly_fs revert stops and starts the container)."""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any

import psutil

from faults.docker import engine
from faults.errors import FaultError, NodeNotBack
from faults.journal import Journal
from faults.system.procs import ProcId
from faults.target import PidFile
from harness.backends.broker_checks import POLL_S, BrokerChecks
from harness.resources.node_process import accepts

FACTORY = "harness.backends.compose.node:ContainerNode.from_json"
STOP_TIMEOUT_S = 15
GONE_TIMEOUT_S = 60
"""How long `stop` waits, after Docker says the container is down, for the last of its processes to be gone."""
LOG_TAIL = 5


class ContainerNotReady(NodeNotBack):
    pass


@dataclass
class ContainerNode(BrokerChecks):
    NOT_READY = ContainerNotReady
    name: str
    role: str
    run_id: str
    container: str
    pidfile: str
    addr: str
    namesrv_addr: str | None = None
    master_addr: str | None = None
    broker_id: int | None = None
    stop_timeout_s: int = STOP_TIMEOUT_S
    stopped: bool = False
    """set by `stop`, cleared by `start`: an exited container that we did not stop ended on its own"""

    @property
    def pid_source(self) -> PidFile:
        return PidFile(self.pidfile)

    @property
    def port(self) -> int:
        return int(self.addr.rpartition(":")[2])

    def pids(self) -> list[int]:
        return self.pid_source()

    def _container(self) -> Any:
        return engine.container(self.container)

    @staticmethod
    def _processes(ct: Any) -> list[ProcId]:
        """The container's main process and its descendants as the host sees them ([] when it is not running)."""
        pid = int(ct.attrs["State"].get("Pid") or 0) if ct.status in ("running", "paused", "restarting") else 0
        if not pid:
            return []
        try:
            pids = [pid, *(c.pid for c in psutil.Process(pid).children(recursive=True))]
        except psutil.Error:
            return []
        return [p for p in map(ProcId.of, pids) if p is not None]

    def refresh_pid(self) -> list[int]:
        """Write the container's main pid (as the host sees it) to the pidfile; [] when it is not running."""
        ct = self._container()
        pid = int(ct.attrs["State"].get("Pid") or 0)
        proc = ProcId.of(pid) if pid and ct.status in ("running", "paused") else None
        if proc is None:
            return []
        self.pid_source.write(proc)
        return [pid]

    def exit_status(self) -> str | None:
        """How the container ended when it was not stopped through `stop` ("exit 137 (OOM killed)"), else None."""
        if self.stopped:
            return None
        try:
            ct = self._container()
        except Exception:  # noqa: BLE001 - removed or the engine is gone: nothing to tell
            return None
        if ct.status not in ("exited", "dead"):
            return None
        state = ct.attrs["State"]
        return f"exit {state.get('ExitCode')}" + (" (OOM killed)" if state.get("OOMKilled") else "")

    def start(self) -> None:
        self.stopped = False
        ct = self._container()
        if ct.status not in ("running", "paused"):
            try:
                ct.start()
            except Exception as e:  # noqa: BLE001 - the SDK's APIError, as one line
                raise engine.api_error(f"start {ct.name}", e) from e
        self.refresh_pid()

    def stop(self) -> None:
        """`docker stop` (SIGTERM, SIGKILL after `stop_timeout_s`); returns once the container is down and every
        process it had is gone. Docker says "exited" when the main process has exited, while its other processes
        may still be tearing down their memory (a broker's mapped commitlog): until the last one is gone, the
        container's mount namespace keeps the store's filesystem in use, and `e2fsck` after the store's umount
        finds the device "in use" (a readonly_fs revert under load waited 15 s for it)."""
        self.stopped = True
        ct = self._container()
        procs = self._processes(ct)
        if ct.status in ("running", "paused", "restarting"):
            try:
                ct.stop(timeout=self.stop_timeout_s)
            except Exception as e:  # noqa: BLE001 - the SDK's APIError, as one line
                raise engine.api_error(f"stop {ct.name}", e) from e
        deadline = time.monotonic() + self.stop_timeout_s + 10
        while self._container().status in ("running", "paused", "restarting"):
            if time.monotonic() >= deadline:
                raise FaultError(f"node {self.name}: container {ct.name} does not stop")
            time.sleep(POLL_S)
        deadline = time.monotonic() + GONE_TIMEOUT_S
        while left := [p.pid for p in procs if p.exists()]:
            if time.monotonic() >= deadline:
                raise FaultError(f"node {self.name}: container {ct.name} stopped, its processes {left} are still "
                                 f"there after {GONE_TIMEOUT_S:g} s")
            time.sleep(POLL_S)
        try:
            os.unlink(self.pidfile)
        except FileNotFoundError:
            pass

    def wait_ready(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        last: Exception | None = None
        while True:
            ct = self._container()
            if ct.status in ("exited", "dead"):
                tail = ct.logs(tail=LOG_TAIL).decode("utf-8", "replace").strip().replace("\n", " | ")
                raise ContainerNotReady(f"node {self.name}: container {ct.name} exited with "
                                        f"{ct.attrs['State'].get('ExitCode')} while starting: {tail}")
            try:
                if ct.status == "running" and self.refresh_pid() and accepts(self.port) and self.registered():
                    return
            except Exception as err:  # noqa: BLE001 - not ready yet; the last reason goes into the message
                last = err
            if time.monotonic() >= deadline:
                raise ContainerNotReady(f"node {self.name} ({self.addr}) not ready within {timeout_s:.0f} s"
                                        + (f" (last error: {last})" if last else ""))
            time.sleep(POLL_S)

    def to_json(self) -> dict[str, Any]:
        return {"factory": FACTORY, "name": self.name, "role": self.role, "run_id": self.run_id,
                "container": self.container, "pidfile": self.pidfile, "addr": self.addr,
                "namesrv_addr": self.namesrv_addr, "master_addr": self.master_addr, "broker_id": self.broker_id,
                "stop_timeout_s": self.stop_timeout_s}

    @classmethod
    def from_json(cls, data: dict, journal: Journal | None = None) -> ContainerNode:
        keys = ("name", "role", "run_id", "container", "pidfile", "addr", "namesrv_addr", "master_addr",
                "broker_id", "stop_timeout_s")
        return cls(**{k: data[k] for k in keys if k in data})


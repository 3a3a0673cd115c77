"""A node made of one spawned process (the broker or name server program), in the node's cgroups: it implements the
faults' `NodeControl` (stop, start, wait_ready, wait_caught_up) and gives the node's pids through a pidfile, and it
round-trips through JSON so `rmq-chaos fault` can rebuild it from a cluster state file. A backend whose brokers need
a richer "caught up" check subclasses it and overrides `wait_caught_up`."""
from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass, field

from faults.errors import FaultError, NodeNotBack
from faults.journal import Journal
from faults.target import PidFile
from harness.resources.processes import ManagedProcess, spawn
from loads.process import exit_words

FACTORY = "harness.resources.node_process:ProcessNode.from_json"
POLL_S = 0.02


@dataclass
class ProcessNode:
    journal: Journal = field(repr=False)
    name: str
    argv: list[str]
    run_id: str
    pidfile: str
    cgroups: list[str] = field(default_factory=list)
    env: dict[str, str] | None = None
    cwd: str | None = None
    log_path: str | None = None
    ready_port: int | None = None
    ready_host: str = "127.0.0.1"
    stop_timeout_s: float = 10.0
    process: ManagedProcess | None = field(default=None, repr=False)
    started_pids: list[int] = field(default_factory=list, repr=False)
    """every pid this object started (a restart adds one): where a program's per-pid files are found"""

    @property
    def pid_source(self) -> PidFile:
        return PidFile(self.pidfile)

    def pids(self) -> list[int]:
        return self.pid_source()

    def start(self) -> None:
        """Spawn the program (journaled) and write the pidfile. A node already running is left alone."""
        if self.process is not None:
            if self.process.alive():
                return
            self.process.stop(self.stop_timeout_s)  # reap the dead one, close its journal entry
            self.process = None
        elif self.pids():
            return
        os.makedirs(os.path.dirname(self.pidfile), exist_ok=True)
        self.process = spawn(self.journal, self.argv, name=self.name, cgroups=self.cgroups, env=self.env,
                             cwd=self.cwd, log_path=self.log_path, run_id=self.run_id,
                             extra_undo=[{"op": "rm", "path": self.pidfile}])
        self.pid_source.write(self.process.proc)
        self.started_pids.append(self.process.proc.pid)

    def stop(self) -> None:
        """SIGTERM, SIGKILL after `stop_timeout_s`; waits until it is gone. Also ends the process the pidfile names
        when another process (e.g. `rmq-chaos fault revert`) restarted the node."""
        if self.process is not None:
            self.process.stop(self.stop_timeout_s)
            self.process = None
        from faults.system.procs import ProcId, terminate, with_descendants

        procs = with_descendants(self.pids())
        left = terminate(procs, self.stop_timeout_s) if procs else []
        if left:
            raise FaultError(f"node {self.name}: pids {[p.pid for p in left]} do not end")
        proc = self.pid_source.read()
        if proc is not None and not ProcId(proc.pid, proc.start).exists():
            try:
                os.unlink(self.pidfile)
            except FileNotFoundError:
                pass

    def exit_status(self) -> str | None:
        """How the process this object started ended ("killed by SIGBUS", "exit 1"), None while it runs or when it
        was stopped through `stop`."""
        if self.process is None or self.process.alive():
            return None
        code = self.process.popen.returncode
        return "ended (status unknown)" if code is None else exit_words(code)

    def wait_ready(self, timeout_s: float) -> None:
        """Running, and accepting TCP connections on `ready_port` when one is set."""
        deadline = time.monotonic() + timeout_s
        while True:
            alive = bool(self.pids()) and (self.process is None or self.process.alive())
            if alive and (self.ready_port is None or accepts(self.ready_port, self.ready_host)):
                return
            if not alive and self.process is not None and self.process.popen.poll() is not None:
                raise NodeNotBack(f"node {self.name} exited with {self.process.popen.returncode} while starting "
                                 f"(log: {self.log_path})")
            if time.monotonic() >= deadline:
                raise NodeNotBack(f"node {self.name} not ready within {timeout_s:.0f} s (log: {self.log_path})")
            time.sleep(POLL_S)

    def wait_caught_up(self, timeout_s: float) -> None:
        """For a plain process, ready is caught up; broker nodes override this."""
        self.wait_ready(timeout_s)

    def to_json(self) -> dict:
        return {"factory": FACTORY, "name": self.name, "argv": self.argv, "run_id": self.run_id,
                "pidfile": self.pidfile, "cgroups": self.cgroups, "env": self.env, "cwd": self.cwd,
                "log_path": self.log_path, "ready_port": self.ready_port, "ready_host": self.ready_host,
                "stop_timeout_s": self.stop_timeout_s}

    @classmethod
    def from_json(cls, data: dict, journal: Journal) -> ProcessNode:
        keys = ("name", "argv", "run_id", "pidfile", "cgroups", "env", "cwd", "log_path", "ready_port", "ready_host",
                "stop_timeout_s")
        return cls(journal=journal, **{k: data[k] for k in keys if k in data})


def accepts(port: int, host: str = "127.0.0.1") -> bool:
    """A TCP connection to `host`:`port` succeeds within half a second."""
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False

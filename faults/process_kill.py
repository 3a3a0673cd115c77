"""`kill`: SIGKILL the node's processes, with an optional restart after N seconds (through the node's control).
Verify: the processes are gone. Revert: start the node if it is still down (cancelling a pending timed restart)."""
from __future__ import annotations

import signal
import threading

from pydantic import Field

from faults import guard
from faults.base import Fault, FaultParams
from faults.errors import FaultError, FaultRefused
from faults.system.procs import ProcId, wait_gone

READY_TIMEOUT_S = 120.0
GONE_TIMEOUT_S = 30.0
"""How long a restart waits for the killed processes to be gone: exited (a zombie at most), their ports and store
files released, not merely dying with the signal pending."""


class KillParams(FaultParams):
    signal: str = Field("SIGKILL", description="signal to send: SIGKILL, SIGTERM, ...")
    restart_after_s: float | None = Field(None, ge=0, description="start the node again this many seconds later")
    restart_on_revert: bool = Field(True, description="revert starts the node if it is still down")


class ProcessKill(Fault):
    kind = "kill"
    summary = "SIGKILL the node's processes, optionally restart after N s; revert: start it if still down"
    Params = KillParams
    VERIFY_TIMEOUT_S = 5.0
    DOCKER_VARIANT = "faults.docker.kill:ContainerKill"

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._timer: threading.Timer | None = None
        self._restart_lock = threading.Lock()

    def check(self) -> None:
        super().check()
        if self.params.signal not in signal.Signals.__members__:
            raise FaultRefused(f"{self.kind}: params.signal: unknown signal {self.params.signal!r}")
        if self.params.restart_after_s is not None and self.target.control is None:
            raise FaultRefused(f"{self.kind}: node {self.target.name} has no control to restart it")
        procs = guard.proc_ids_of(self.target)
        guard.check_pids(self.kind, self.target, self.journal, procs)
        self.state["procs"] = [p.to_json() for p in procs]

    def claims(self) -> list[str]:
        return [f"procs:{self.target.run_id}/{self.target.name}"]

    def plan(self) -> list[dict]:
        return []  # nothing to undo in a crashed run: the processes are gone; a live revert restarts the node

    def inject(self) -> dict:
        sig = signal.Signals[self.params.signal]
        procs = [ProcId.from_json(p) for p in self.state["procs"]]
        sent = [p.pid for p in procs if p.signal(sig)]
        if self.params.restart_after_s is not None:
            self._timer = threading.Timer(self.params.restart_after_s, self._restart, args=("timer",))
            self._timer.daemon = True
            self._timer.start()
        return {"signal": sig.name, "pids": sent, "restart_after_s": self.params.restart_after_s}

    def _restart(self, why: str) -> dict:
        with self._restart_lock:
            if self.state.get("restarted") or self.target.control is None:
                return {"restart": "not needed"}
            self._step("restart", "started", {"why": why}, None)
            try:
                left = wait_gone([ProcId.from_json(p) for p in self.state["procs"]], GONE_TIMEOUT_S,
                                 dying_is_gone=False)
                if left:
                    raise FaultError(f"{self.kind}: node {self.target.name}: killed pids {[p.pid for p in left]} not "
                                     f"gone after {GONE_TIMEOUT_S:g} s; not starting the node beside them")
                self.target.control.start()
                self.target.control.wait_ready(READY_TIMEOUT_S)
            except Exception as e:
                self._step("restart", "failed", None, str(e))
                raise
            self.state["restarted"] = True
            evidence = {"why": why, "pids": self.target.pids()}
            self._step("restart", "ok", evidence, None)
            return evidence

    def measure(self) -> tuple[bool, dict]:
        procs = [ProcId.from_json(p) for p in self.state["procs"]]
        left = {p.pid: p.state() for p in procs if p.alive()}
        return not left, {"left": left, "killed": [p.pid for p in procs]}

    def shortfall(self, evidence: dict) -> tuple[str, str]:
        return f"still running after {self.params.signal}: {evidence.get('left')}", "every killed process gone"

    def before_revert(self) -> list[dict]:
        if self._timer is not None:
            self._timer.cancel()
        if self.params.restart_on_revert or self.params.restart_after_s is not None:
            return [{"op": "restart", "result": self._restart("revert")}]
        return []

    def measure_gone(self) -> dict:
        return {"pids_after": self.target.pids()}

"""`restart`: stop the node through its control and start it again (one-shot: nothing to revert). Verify: the node
runs under new pids."""
from __future__ import annotations

from pydantic import Field

from faults.base import Fault, FaultParams
from faults.errors import FaultRefused
from faults.system.procs import ProcId


class RestartParams(FaultParams):
    ready_timeout_s: float = Field(120.0, gt=0, description="how long the node may take to be ready again")


class NodeRestart(Fault):
    kind = "restart"
    summary = "stop and start the node through its control (one-shot)"
    Params = RestartParams
    ONE_SHOT = True
    CONTAINER_TARGETS = True

    def check(self) -> None:
        super().check()
        if self.target.control is None:
            raise FaultRefused(f"{self.kind}: node {self.target.name} has no control")
        self.state["old"] = [p.to_json() for p in (ProcId.of(pid) for pid in self.target.pids()) if p]

    def claims(self) -> list[str]:
        return [f"procs:{self.target.run_id}/{self.target.name}"]

    def plan(self) -> list[dict]:
        return []

    def inject(self) -> dict:
        self.target.control.stop()
        self.target.control.start()
        self.target.control.wait_ready(self.params.ready_timeout_s)
        return {"old_pids": [p[0] for p in self.state["old"]], "new_pids": self.target.pids()}

    def measure(self) -> tuple[bool, dict]:
        old = {p[0] for p in self.state["old"]}
        new = [pid for pid in self.target.pids() if (p := ProcId.of(pid)) and p.alive()]
        return bool(new) and not (old & set(new)), {"old_pids": sorted(old), "new_pids": new}

    def shortfall(self, evidence: dict) -> tuple[str, str]:
        return (f"pids {evidence.get('new_pids')} running (before: {evidence.get('old_pids')})",
                "running under new pids only")

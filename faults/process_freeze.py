"""`freeze`: the node's processes stop (SIGSTOP, or the cgroup freezer), as in a long GC pause or a hung VM. Verify:
every process is in state T (signal) or its freezer cgroup reports FROZEN (cgroup). Revert: SIGCONT / thaw."""
from __future__ import annotations

import signal
from typing import Literal

from pydantic import Field

from faults import guard
from faults.base import Fault, FaultParams
from faults.errors import FaultNotEffective
from faults.system import cgroupfs
from faults.system.procs import ProcId

STOPPED = ("T", "t")


class FreezeParams(FaultParams):
    method: Literal["signal", "cgroup"] = Field("signal", description="signal: SIGSTOP/SIGCONT the node's processes "
                                                                      "(state T); cgroup: its freezer cgroup")


class ProcessFreeze(Fault):
    kind = "freeze"
    summary = "the node's processes stop (SIGSTOP or cgroup freezer); revert: SIGCONT / thaw"
    Params = FreezeParams
    VERIFY_TIMEOUT_S = 2.0
    DOCKER_VARIANT = "faults.docker.freeze:ContainerFreeze"

    def check(self) -> None:
        super().check()
        procs = guard.proc_ids_of(self.target)
        guard.check_pids(self.kind, self.target, self.journal, procs)
        self.state["procs"] = [p.to_json() for p in procs]
        if self.params.method == "cgroup":
            self.state["cgroup"] = guard.check_cgroup(self.kind, self.target, "freezer")

    @property
    def procs(self) -> list[ProcId]:
        return [ProcId.from_json(p) for p in self.state["procs"]]

    def claims(self) -> list[str]:
        return [f"procs:{self.target.run_id}/{self.target.name}"]

    def plan(self) -> list[dict]:
        if self.params.method == "cgroup":
            cg = self.state["cgroup"]
            knob, value = ("freezer.state", "THAWED") if cgroupfs.version_of(cg) == 1 else ("cgroup.freeze", "0")
            return [{"op": "cgroup_write", "path": cg, "knob": knob, "value": value}]
        return [{"op": "signal", "signal": "SIGCONT", "procs": self.state["procs"]}]

    def inject(self) -> dict:
        if self.params.method == "cgroup":
            cg = self.state["cgroup"]
            if cgroupfs.version_of(cg) == 1:
                cgroupfs.write(cg, "freezer.state", "FROZEN")
            else:
                cgroupfs.write(cg, "cgroup.freeze", "1")
            return {"cgroup": cg}
        sent = [p.pid for p in self.procs if p.signal(signal.SIGSTOP)]
        return {"sigstop": sent}

    def _states(self) -> dict[int, str | None]:
        return {p.pid: p.state() for p in self.procs}

    def measure(self) -> tuple[bool, dict]:
        states = self._states()
        if self.params.method == "cgroup":
            cg = self.state["cgroup"]
            if cgroupfs.version_of(cg) == 1:
                frozen = cgroupfs.read(cg, "freezer.state") == "FROZEN"
            else:
                frozen = "frozen 1" in cgroupfs.read(cg, "cgroup.events").splitlines()
            return frozen, {"freezer": "FROZEN" if frozen else "not frozen", "states": states}
        alive = {pid: s for pid, s in states.items() if s is not None}
        return bool(alive) and all(s in STOPPED for s in alive.values()), {"states": states}

    def shortfall(self, evidence: dict) -> tuple[str, str]:
        if self.params.method == "cgroup":
            return f"freezer {evidence.get('freezer')} (states {evidence.get('states')})", "FROZEN"
        return f"process states {evidence.get('states')}", "every live process stopped (T)"

    def measure_gone(self) -> dict:
        states = self._states()
        stopped = {pid: s for pid, s in states.items() if s in STOPPED}
        if stopped:
            raise FaultNotEffective(f"{self.kind}: still stopped after revert: {stopped}", {"states": states})
        return {"states_after": states}

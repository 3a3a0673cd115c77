"""`freeze` on a container: `docker pause` (the container's freezer cgroup), as in a long GC pause or a hung VM. Both
`method`s mean the same here: every process of the container stops. Verify: Docker reports the container paused
and its freezer cgroup reads FROZEN. Revert: `docker unpause`; the container runs and its cgroup is THAWED."""
from __future__ import annotations

import os

from faults import guard
from faults.docker import engine
from faults.errors import FaultNotEffective, FaultRefused
from faults.process_freeze import ProcessFreeze
from faults.system import cgroupfs


class ContainerFreeze(ProcessFreeze):
    CONTAINER_TARGETS = True
    DOCKER_VARIANT = None

    def check(self) -> None:
        guard.check_node(self.kind, self.target, containers=True)
        ct = engine.container(self.target.container or "")
        if ct.status != "running":
            raise FaultRefused(f"{self.kind}: container {ct.name} of node {self.target.name} is {ct.status}, "
                               f"not running")
        self.state["container"] = ct.id
        self.state["cgroup"] = guard.check_cgroup(self.kind, self.target, "freezer")
        self.state["procs"] = [p.to_json() for p in guard.proc_ids_of(self.target)]

    def plan(self) -> list[dict]:
        return [{"op": "docker_unpause", "container": self.state["container"]}]

    def inject(self) -> dict:
        ct = engine.container(self.state["container"])
        try:
            ct.pause()
        except Exception as e:  # noqa: BLE001 - the SDK's APIError, as one line
            raise engine.api_error(f"pause {ct.name}", e) from e
        return {"container": ct.name, "method": "docker pause", "cgroup": self.state["cgroup"]}

    def _observed(self) -> dict:
        ct = engine.container(self.state["container"])
        return {"docker_status": ct.status, "freezer": freezer_state(self.state["cgroup"]), "states": self._states()}

    def measure(self) -> tuple[bool, dict]:
        seen = self._observed()
        return seen["docker_status"] == "paused" and seen["freezer"] == "FROZEN", seen

    def shortfall(self, evidence: dict) -> tuple[str, str]:
        return f"container {evidence.get('docker_status')}, freezer {evidence.get('freezer')}", "paused and FROZEN"

    def measure_gone(self) -> dict:
        seen = self._observed()
        if seen["docker_status"] != "running" or seen["freezer"] == "FROZEN":
            raise FaultNotEffective(f"{self.kind}: container still paused after revert: {seen}", seen)
        return {"after": seen}


def freezer_state(cg: str) -> str | None:
    """FROZEN / THAWED / FREEZING from the kernel (v1 `freezer.state`, v2 `cgroup.events`); None when it is gone."""
    if os.path.exists(os.path.join(cg, "freezer.state")):
        return cgroupfs.read(cg, "freezer.state")
    if os.path.exists(os.path.join(cg, "cgroup.events")):
        return "FROZEN" if "frozen 1" in cgroupfs.read(cg, "cgroup.events").splitlines() else "THAWED"
    return None

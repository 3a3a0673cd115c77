"""`memory_pressure` on a container: the container's memory limit lowered with `container.update(mem_limit=...,
memswap_limit=-1)` (swap allowed), a hog inside the container (`docker exec python3 -c <faults.hog>`; from the
host inside the container's memory cgroup when the image has no python3, as the official image has none), and a
swap file when the machine has no swap. Verify: the broker's VmSwap > 0. Revert: hog ended, both limits back
through `container.update`, our swap file off. The same parameters as on a local node.

Docker cannot give a container "no limit" back (`update` treats 0 as unchanged and refuses -1), so the container
must have been created with a memory limit (the compose backend always sets one)."""
from __future__ import annotations

import inspect
import os
import time

from faults import hog as hog_program
from faults.docker import engine
from faults.errors import FaultError, FaultNotEffective, FaultRefused
from faults.memory_pressure import MemoryPressure
from faults.system import cgroupfs, swapfiles
from faults.system.procs import TAG_ENV, swap_bytes, tagged

HOG_START_TIMEOUT_S = 30.0
HOG_READY_FRACTION = 0.9
POLL_S = 0.05
SWAP_UNLIMITED = -1


class ContainerMemoryPressure(MemoryPressure):
    CONTAINER_TARGETS = True
    DOCKER_VARIANT = None

    def check(self) -> None:
        super().check()
        ct = engine.container(self.target.container or "")
        if ct.status != "running":
            raise FaultRefused(f"{self.kind}: container {ct.name} of node {self.target.name} is {ct.status}, "
                               f"not running")
        host = ct.attrs["HostConfig"]
        if not host.get("Memory"):
            raise FaultRefused(f"{self.kind}: container {ct.name} has no memory limit, and the Docker API cannot "
                               f"restore 'no limit' after an update; create it with one (the compose backend does)")
        self.state.update(container=ct.id, old_memory=int(host["Memory"]), old_memswap=int(host["MemorySwap"]))

    def plan(self) -> list[dict]:
        s = self.state
        ops = [{"op": "kill_procs", "tag": self.tag, "timeout_s": 5.0}]
        if s["limit"] is not None:
            ops.append({"op": "docker_update", "container": s["container"], "mem_limit": s["old_memory"],
                        "memswap_limit": s["old_memswap"]})
        if s["swap_file"]:
            ops.append({"op": "swapoff", "path": s["swap_file"]})
        return ops

    def inject(self) -> dict:
        s = self.state
        evidence: dict = {"container": s["container"][:12], "cgroup": s["cgroup"], "anon_before": s["anon_before"]}
        if s["swap_file"]:
            os.makedirs(self.swap_dir, exist_ok=True)
            swapfiles.create_swap_file(s["swap_file"], s["swap_bytes"])
            evidence["swap_file"] = {"path": s["swap_file"], "bytes": s["swap_bytes"]}
        if s["limit"] is not None:
            ct = engine.container(s["container"])
            try:
                ct.update(mem_limit=s["limit"], memswap_limit=SWAP_UNLIMITED)
            except Exception as e:  # noqa: BLE001 - the SDK's APIError, as one line
                raise engine.api_error(f"update {ct.name} mem_limit={s['limit']}", e) from e
            evidence["limit"] = {"old": s["old_memory"], "new": s["limit"],
                                 "kernel": cgroupfs.read(s["cgroup"], s["limit_knob"]),
                                 "memswap_old": s["old_memswap"], "memswap_new": SWAP_UNLIMITED}
        if s["hog"]:
            evidence["hog"] = self._start_hog(s["hog"], s["cgroup"])
        return evidence

    def _start_hog(self, size: int, cgroup: str) -> dict:
        ct = engine.container(self.state["container"])
        if ct.exec_run(["sh", "-c", "command -v python3"]).exit_code != 0:
            return {**super()._start_hog(size, cgroup),
                    "where": "the container's memory cgroup, from the host (the image has no python3)"}
        source = inspect.getsource(hog_program)
        ct.exec_run(["python3", "-c", source, "--bytes", str(size)], environment={TAG_ENV: self.tag}, detach=True)
        deadline = time.monotonic() + HOG_START_TIMEOUT_S
        while True:
            procs = tagged(self.tag)
            held = {p.pid: sum(swap_bytes(p.pid)[k] for k in ("vm_rss", "vm_swap")) for p in procs}
            if held and max(held.values()) >= size * HOG_READY_FRACTION:
                pid = max(held, key=lambda k: held[k])
                return {"where": "inside the container (docker exec)", "pid": pid, "bytes": size,
                        "held_bytes": held[pid]}
            if time.monotonic() >= deadline:
                raise FaultError(f"{self.kind}: hog of {size} B in container {ct.name} did not fill its memory "
                                 f"within {HOG_START_TIMEOUT_S:.0f} s (held: {held})")
            time.sleep(POLL_S)

    def measure_gone(self) -> dict:
        evidence = super().measure_gone()
        ct = engine.container(self.state["container"])
        host = ct.attrs["HostConfig"]
        evidence["docker_after"] = {"memory": host.get("Memory"), "memswap": host.get("MemorySwap")}
        if self.state["limit"] is not None and (host.get("Memory"), host.get("MemorySwap")) != (
                self.state["old_memory"], self.state["old_memswap"]):
            raise FaultNotEffective(f"{self.kind}: container limits not restored: {evidence['docker_after']}",
                                    evidence)
        return evidence

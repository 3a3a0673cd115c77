"""`memory_pressure`: make the node's broker swap. A swap file is added when the machine has no swap of its own, the
node's memory cgroup limit is lowered below its working set and/or a hog process inside that cgroup fills memory.
Verify: the broker has more in swap (VmSwap or smaps Swap) than before. Revert: hog ended, limit restored, our swap file switched off and removed."""
from __future__ import annotations

import os
import subprocess
import sys

from pydantic import ByteSize, Field, model_validator

from faults import guard
from faults.base import Fault, FaultParams
from faults.errors import FaultError, FaultNotEffective, FaultRefused
from faults.journal import default_state_dir
from faults.system import cgroupfs, swapfiles
from faults.system.meminfo import mem_total
from faults.system.procs import TAG_ENV, swap_bytes, tagged

SWAP_DIR = "swap"
MIN_SWAP = 256 << 20
SWAP_MARGIN = 256 << 20
HOG_START_TIMEOUT_S = 30.0
V1_UNLIMITED = 1 << 62


def _swapped(pids: list[int]) -> int:
    """Bytes of these processes in swap (each its larger of VmSwap and smaps Swap)."""
    return sum(max(v["vm_swap"], v["smaps_swap"]) for v in (swap_bytes(pid) for pid in pids))


class MemoryPressureParams(FaultParams):
    limit_bytes: ByteSize | None = Field(None, description="new memory limit of the node's cgroup (e.g. 64MiB)")
    limit_fraction: float | None = Field(None, gt=0, lt=1,
                                         description="new limit as a fraction of the node's anonymous memory now")
    hog_bytes: ByteSize | None = Field(None, description="a hog in the node's cgroup fills this much (e.g. 256MiB)")
    hog_percent_of_ram: float | None = Field(None, gt=0, le=95, description="hog size as a percentage of RAM")
    swap_file_bytes: ByteSize | None = Field(None, description="size of the swap file added when the machine has "
                                                               "none (default: node memory + hog + 256 MiB)")

    @model_validator(mode="after")
    def _something(self) -> MemoryPressureParams:
        if self.limit_bytes is not None and self.limit_fraction is not None:
            raise ValueError("give limit_bytes or limit_fraction, not both")
        if self.hog_bytes is not None and self.hog_percent_of_ram is not None:
            raise ValueError("give hog_bytes or hog_percent_of_ram, not both")
        if self.limit_bytes is None and self.limit_fraction is None and self.hog_bytes is None \
                and self.hog_percent_of_ram is None:
            self.limit_fraction = 0.5
        return self


class MemoryPressure(Fault):
    kind = "memory_pressure"
    summary = "the node swaps: lower its memory cgroup limit and/or a hog in its cgroup; swap file added if none"
    Params = MemoryPressureParams
    VERIFY_TIMEOUT_S = 5.0
    DOCKER_VARIANT = "faults.docker.memory:ContainerMemoryPressure"
    NEEDS_ROOT = True
    TOOLS = ("mkswap", "swapon", "swapoff")

    @classmethod
    def problems(cls) -> list[str]:
        return super().problems() + ([] if cgroupfs.hierarchy("memory") else ["no memory cgroup controller"])

    def check(self) -> None:
        super().check()
        cg = guard.check_cgroup(self.kind, self.target, "memory")
        procs = guard.proc_ids_of(self.target)
        guard.check_pids(self.kind, self.target, self.journal, procs)
        files = cgroupfs.memory_files(cg)
        old_limit = cgroupfs.read(cg, files["limit"])
        anon = cgroupfs.memory_stat(cg).get(files["anon_stat"], 0)
        p = self.params
        limit = int(p.limit_bytes) if p.limit_bytes is not None else (
            int(anon * p.limit_fraction) if p.limit_fraction is not None else None)
        if limit is not None and limit < (4 << 20):
            raise FaultRefused(f"{self.kind}: new limit {limit} B is below 4 MiB (node anon memory {anon} B)")
        hog = int(p.hog_bytes) if p.hog_bytes is not None else (
            int(mem_total() * p.hog_percent_of_ram / 100) if p.hog_percent_of_ram is not None else 0)
        unlimited = old_limit == "max" or int(old_limit if old_limit != "max" else 0) >= V1_UNLIMITED
        if limit is None and unlimited:
            raise FaultRefused(f"{self.kind}: a hog alone cannot make node {self.target.name} swap: its memory "
                               f"cgroup has no limit; give limit_bytes or limit_fraction too")
        own_swaps = [s for s in swapfiles.active_swaps() if not s["path"].startswith(self.swap_dir + "/")]
        swap_file = None
        if not own_swaps:
            size = int(p.swap_file_bytes) if p.swap_file_bytes is not None else anon + hog + SWAP_MARGIN
            swap_file = (os.path.join(self.swap_dir, f"{self.tag}.swap"), max(MIN_SWAP, size))
        self.state.update(cgroup=cg, limit_knob=files["limit"], old_limit=old_limit, limit=limit, hog=hog,
                          anon_before=anon, swapped_before=_swapped([p.pid for p in procs]), swap_file=swap_file[0] if swap_file else None,
                          swap_bytes=swap_file[1] if swap_file else 0,
                          unlimited_value=files["unlimited"] if unlimited else None)

    @property
    def swap_dir(self) -> str:
        return os.path.join(os.path.realpath(default_state_dir() if self.journal is None else self.journal.state_dir),
                            SWAP_DIR)

    def claims(self) -> list[str]:
        return [f"memory:{self.state['cgroup']}"]

    def plan(self) -> list[dict]:
        s = self.state
        ops = [{"op": "kill_procs", "tag": self.tag, "timeout_s": 5.0}]
        if s["limit"] is not None:
            ops.append({"op": "cgroup_write", "path": s["cgroup"], "knob": s["limit_knob"],
                        "value": s["unlimited_value"] or s["old_limit"]})
        if s["swap_file"]:
            ops.append({"op": "swapoff", "path": s["swap_file"]})
        return ops

    def inject(self) -> dict:
        s = self.state
        evidence: dict = {"cgroup": s["cgroup"], "anon_before": s["anon_before"]}
        if s["swap_file"]:
            os.makedirs(self.swap_dir, exist_ok=True)
            swapfiles.create_swap_file(s["swap_file"], s["swap_bytes"])
            evidence["swap_file"] = {"path": s["swap_file"], "bytes": s["swap_bytes"]}
        if s["limit"] is not None:
            cgroupfs.write(s["cgroup"], s["limit_knob"], s["limit"])
            evidence["limit"] = {"old": s["old_limit"], "new": s["limit"]}
        if s["hog"]:
            evidence["hog"] = self._start_hog(s["hog"], s["cgroup"])
        return evidence

    def _start_hog(self, size: int, cgroup: str) -> dict:
        env = {**os.environ, TAG_ENV: self.tag}
        hog = subprocess.Popen([sys.executable, "-m", "faults.hog", "--bytes", str(size), "--cgroup", cgroup],
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                               start_new_session=True)
        line = hog.stdout.readline().strip()  # blocks until the hog touched its memory (or died)
        if line != "ready":
            hog.kill()
            raise FaultError(f"{self.kind}: hog of {size} B did not start (exit {hog.poll()})")
        return {"pid": hog.pid, "bytes": size}

    def measure(self) -> tuple[bool, dict]:
        """The node's processes have more in swap than before the change (VmSwap or smaps Swap; 0 before on a
        machine without swap of its own, but a node already partly swapped out by the machine's own memory
        pressure must swap more for the fault to count)."""
        pids = self.target.pids()
        per_pid = {pid: swap_bytes(pid) for pid in pids}
        cg = self.state["cgroup"]
        before = self.state.get("swapped_before", 0)
        evidence = {"swapped": _swapped(pids), "swapped_before": before, "pids": per_pid,
                    "cgroup_usage": int(cgroupfs.read(cg, cgroupfs.memory_files(cg)["usage"])),
                    "limit": self.state.get("limit")}
        return evidence["swapped"] > before, evidence

    def shortfall(self, evidence: dict) -> tuple[str, str]:
        return (f"{evidence.get('swapped')} B of the node's memory in swap (before: {evidence.get('swapped_before')} "
                f"B; cgroup usage {evidence.get('cgroup_usage')} B, limit {evidence.get('limit')})",
                "more in swap than before the fault")

    def measure_gone(self) -> dict:
        s = self.state
        cg = s["cgroup"]
        evidence = {"limit_after": cgroupfs.read(cg, s["limit_knob"]) if os.path.isdir(cg) else None,
                    "hog_left": [p.pid for p in tagged(self.tag)],
                    "swap_file_active": bool(s["swap_file"]) and swapfiles.is_active(s["swap_file"]),
                    "pids": {pid: swap_bytes(pid) for pid in self.target.pids()}}
        if evidence["hog_left"] or evidence["swap_file_active"]:
            raise FaultNotEffective(f"{self.kind}: not fully reverted: {evidence}", evidence)
        return evidence

"""`disk_freeze`: writes to the node's store hang (fsfreeze), as on a disk that stops answering. Verify: a probe
write from a child process blocks (D state, where a frozen filesystem holds writers). Revert: thaw."""
from __future__ import annotations

import os

from pydantic import Field

from faults.base import FaultParams
from faults.errors import FaultNotEffective
from faults.probe import BLOCKED_AFTER_S, blocked_write_probe, probe_path
from faults.store_fault import StoreFault
from faults.system import mounts


class DiskFreezeParams(FaultParams):
    blocked_after_s: float = Field(BLOCKED_AFTER_S, gt=0, le=10,
                                   description="verify: a probe write unfinished after this long counts as blocked")


class DiskFreeze(StoreFault):
    kind = "disk_freeze"
    summary = "writes to the store hang (fsfreeze); revert: thaw"
    Params = DiskFreezeParams
    VERIFY_TIMEOUT_S = 2.0
    TOOLS = ("fsfreeze",)

    @property
    def probe_file(self) -> str:
        return probe_path(self.mount, f"{self.tag}.probe")

    def plan(self) -> list[dict]:
        image = self.target.store_image
        return [{"op": "thaw", "mount": self.mount, "image": image},
                {"op": "kill_procs", "tag": self.tag, "timeout_s": 5.0},
                {"op": "rm", "path": self.probe_file}]

    def inject(self) -> dict:
        with open(self.probe_file, "wb") as f:  # made before the freeze: the probe then only writes
            f.write(b"\0" * 4096)
        mounts.freeze(self.mount)
        return {"frozen": self.mount}

    def measure(self) -> tuple[bool, dict]:
        probe = blocked_write_probe(self.probe_file, self.tag, self.params.blocked_after_s)
        return bool(probe["blocked"]), probe

    def shortfall(self, evidence: dict) -> tuple[str, str]:
        if "exit" in evidence:
            measured = f"a probe write on {self.mount} completed (exit {evidence['exit']})"
        else:
            measured = (f"a probe write on {self.mount} in state {evidence.get('state')} at "
                        f"{evidence.get('wchan') or 'unknown wchan'} after {evidence.get('waited_s')} s")
        return measured, f"still blocked in D state on the frozen superblock after {self.params.blocked_after_s:g} s"

    def measure_gone(self) -> dict:
        after = probe_path(self.mount, f"{self.tag}.after")
        probe = blocked_write_probe(after, f"{self.tag}-after", self.params.blocked_after_s * 4)
        if not probe["blocked"] and os.path.exists(after):
            os.unlink(after)
        if probe["blocked"] or probe.get("exit") != 0:
            raise FaultNotEffective(f"{self.kind}: probe write still does not complete after thaw: {probe}", probe)
        return {"probe_write_after": probe}

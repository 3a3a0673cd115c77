"""`readonly_fs`: the node's store turns read-only the way a failing disk makes it: an ext4 error raised through
`/sys/fs/ext4/<dev>/trigger_fs_error` on a store mounted with `errors=remount-ro` (a plain `remount,ro` is refused
while the broker holds files open for writing). Revert: stop the node, unmount, e2fsck, mount, start, wait caught up."""
from __future__ import annotations

import os

from pydantic import Field

from faults.base import FaultParams
from faults.errors import FaultNotEffective, FaultRefused, FaultUnavailable
from faults.probe import erofs_probe
from faults.store_fault import StoreFault
from faults.system import mounts
from faults.target import pid_source_to_json

TRIGGER = "/sys/fs/ext4/{dev}/trigger_fs_error"
REQUIRED_OPTION = "errors=remount-ro"


class ReadonlyFsParams(FaultParams):
    message: str = Field("rmq-chaos readonly_fs", description="text of the ext4 error the kernel logs")
    restart_timeout_s: float = Field(120.0, gt=0, description="revert: how long the node may take to catch up")


class ReadonlyFs(StoreFault):
    kind = "readonly_fs"
    summary = "store filesystem turns read-only by an ext4 error (errors=remount-ro); revert: stop, fsck, remount, start"
    Params = ReadonlyFsParams
    VERIFY_TIMEOUT_S = 2.0
    TOOLS = ("umount", "mount", "e2fsck")

    @classmethod
    def problems(cls) -> list[str]:
        ext4 = [] if os.path.isdir("/sys/fs/ext4") else ["no /sys/fs/ext4 (ext4 sysfs) on this kernel"]
        return super().problems() + ext4

    def check(self) -> None:
        super().check()
        m = self.store
        if m.fstype != "ext4":
            raise FaultRefused(f"{self.kind}: {m.target} is {m.fstype}, needs ext4")
        if REQUIRED_OPTION not in m.options:
            raise FaultRefused(f"{self.kind}: {m.target} is mounted without {REQUIRED_OPTION} "
                               f"(options: {','.join(m.options)}); an ext4 error would not make it read-only")
        if m.readonly:
            raise FaultRefused(f"{self.kind}: {m.target} is already read-only")
        dev = os.path.basename(m.source)
        if not os.path.exists(TRIGGER.format(dev=dev)):
            raise FaultUnavailable(f"{self.kind}: {TRIGGER.format(dev=dev)} is missing on this kernel")
        if self.target.control is None:
            raise FaultRefused(f"{self.kind}: node {self.target.name} has no control; revert must restart it")
        self.state["device"] = m.source
        self.state["options"] = ",".join(o for o in m.options if o not in ("rw", "emergency_ro"))

    def plan(self) -> list[dict]:
        t, image, mount = self.target, self.target.store_image, self.mount
        return [
            {"op": "node_stop", "step": "stop_node", "node": t.name, "pids": pid_source_to_json(t.pids)},
            {"op": "umount", "step": "umount", "mount": mount, "image": image},
            {"op": "e2fsck", "step": "e2fsck", "image": image, "device": self.state["device"]},
            {"op": "mount", "step": "mount", "mount": mount, "image": image, "fstype": "ext4",
             "options": self.state["options"]},
            {"op": "node_start", "step": "start_node", "node": t.name, "wait": "caught_up",
             "timeout_s": self.params.restart_timeout_s},
        ]

    def inject(self) -> dict:
        dev = os.path.basename(self.state["device"])
        with open(TRIGGER.format(dev=dev), "w", encoding="utf-8") as f:
            f.write(self.params.message + "\n")
        return {"device": self.state["device"], "trigger": TRIGGER.format(dev=dev)}

    def measure(self) -> tuple[bool, dict]:
        probe = erofs_probe(self.mount, f"{self.fault_id}.probe")
        m = mounts.mount_at(self.mount)
        evidence = {"write_errno": probe["errno"], "mount_options": ",".join(m.options) if m else None}
        return probe["errno"] == "EROFS" and bool(m and m.readonly), evidence

    def shortfall(self, evidence: dict) -> tuple[str, str]:
        return (f"a probe write on {self.mount} got {evidence.get('write_errno') or 'no error'}, mounted "
                f"{evidence.get('mount_options')}", "EROFS on a read-only mount (emergency_ro or ro)")

    def measure_gone(self) -> dict:
        probe = erofs_probe(self.mount, f"{self.fault_id}.after")
        m = mounts.mount_at(self.mount)
        evidence = {"write_errno_after": probe["errno"], "mount_options_after": ",".join(m.options) if m else None,
                    "pids_after": self.target.pids()}
        if probe["errno"] or (m is None or m.readonly):
            raise FaultNotEffective(f"{self.kind}: store still not writable after revert: {evidence}", evidence)
        return evidence


"""`consumer_stuck`: a share of the messages a consumer process receives block one of its consume threads for
`hold_s` seconds, the way a listener's HTTP call without a timeout does (the field incident of issue 12: the
committed offset is the smallest one still in the process queue, so it stops; the client's flow control then stops
pulling; the group's lag grows while another group on the same topic keeps up).

The target is a consumer process (`<group>.c<i>`) or a whole group (`consumer:<group>`): the backend-free target
carries the processes' control files in `extras["control_files"]` (engineer C1's `loads.consumers.write_control`,
polled by each process). Apply: write `stuck` into each file (the undo, journaled first, is the same file written
with no stuck share and `release`, so the blocked threads return). Verify: a blocked thread is measured, from the
processes' own report next to their control files (`<control>.status`, `blocked` > 0); it needs messages arriving
(a load). Revert: the undo."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import Field

from faults.base import Fault, FaultParams
from faults.errors import FaultRefused
from faults.undo import UndoContext

STATUS_SUFFIX = ".status"
"""A consumer process reports `{"blocked": N, "released": M, "pid": P}` in `<control file>.status`
(`loads.consumer_control.write_status`)."""


class StuckParams(FaultParams):
    share: float = Field(1.0, gt=0, le=1, description="share of messages that block a consume thread")
    hold_s: float = Field(3600.0, gt=0, le=86400, description="how long such a message blocks its thread (s)")


def write_control(path: str, **values: Any) -> None:
    """`loads.consumers.write_control` (imported when used: faults/ does not load consumers otherwise)."""
    from loads.consumers import write_control as write

    write(path, **values)


def release_controls(op: dict, ctx: UndoContext | None = None) -> str:
    """Undo op `consumer_control`: no stuck share, blocked threads released. A file whose process is gone is kept
    as it is (nothing reads it)."""
    done = 0
    for path in op.get("files", []):
        if Path(path).parent.exists():
            write_control(path, stuck=None, release=True)
            done += 1
    return f"released {done} consumer(s)"


def read_status(control_file: str) -> dict | None:
    try:
        return json.loads(Path(control_file + STATUS_SUFFIX).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


class ConsumerStuck(Fault):
    kind = "consumer_stuck"
    summary = "a share of messages block a consume thread for hold_s (a listener without a timeout); revert: release"
    Params = StuckParams
    target_roles = ("consumer",)
    VERIFY_TIMEOUT_S = 20.0

    @property
    def files(self) -> list[str]:
        return list(self.target.extras.get("control_files") or [])

    def check(self) -> None:
        super().check()
        if self.target.role != "consumer" or not self.files:
            raise FaultRefused(f"{self.kind}: target {self.target.name} is not a consumer with a control file "
                               f"(role {self.target.role}); allowed: consumer:<group>, <group>.c<index>")

    def claims(self) -> list[str]:
        return [f"consumer-control:{f}" for f in self.files]

    def plan(self) -> list[dict]:
        return [{"op": "consumer_control", "files": self.files}]

    def inject(self) -> dict:
        stuck = {"share": self.params.share, "hold_s": self.params.hold_s}
        for path in self.files:
            write_control(path, stuck=stuck, release=False)
        return {"files": self.files, "stuck": stuck, "pids": self.target.pids()}

    def measure(self) -> tuple[bool, dict]:
        """Effective once a consume thread is measured blocked: the processes report it in `<control>.status`
        (written when a thread starts or stops blocking; none yet = no thread blocked yet)."""
        statuses = {f: read_status(f) for f in self.files}
        blocked = {f: int((s or {}).get("blocked") or 0) for f, s in statuses.items()}
        return sum(blocked.values()) > 0, {"blocked": blocked, "pids": self.target.pids()}

    def measure_gone(self) -> dict:
        return {"control": {f: _stuck_of(f) for f in self.files}}


def _stuck_of(path: str) -> Any:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8")).get("stuck")
    except (OSError, ValueError, AttributeError):
        return None

"""`consumer_stuck`: a share of the messages a consumer process receives block one of its consume threads for
`hold_s` seconds, the way a listener's HTTP call without a timeout does (the field incident of issue 12: the
committed offset is the smallest one still in the process queue, so it stops; the client's flow control then stops
pulling; the group's lag grows while another group on the same topic keeps up).

The target is a consumer process (`<group>.c<i>`) or a whole group (`consumer:<group>`); it carries, in
`extras["listeners"]`, what the fault acts on as JSON naming its own factory (`{"factory": "module:callable",
...}`, built by `callable(data, journal)`, as node controls are): a `ConsumerListeners`, which the load side
implements over the processes' control files (`loads.consumer_control.ControlFiles`). Apply: `hold(share, hold_s)`
(the undo, journaled first, is the op `consumer_release` carrying the same JSON: no stuck share, the blocked threads
return). Verify: a blocked thread is measured, from the processes' own report (`blocked()` > 0); it needs messages
arriving (a load). Revert: the undo."""
from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from pydantic import Field

from faults.base import Fault, FaultParams
from faults.errors import FaultRefused
from faults.target import build_from_factory


class StuckParams(FaultParams):
    share: float = Field(1.0, gt=0, le=1, description="share of messages that block a consume thread")
    hold_s: float = Field(3600.0, gt=0, le=86400, description="how long such a message blocks its thread (s)")


@runtime_checkable
class ConsumerListeners(Protocol):
    """The listeners of one or more consumer processes, as this fault acts on them."""

    files: list[str]
    """One name per process (its control file): the claims and the evidence's keys."""

    def hold(self, share: float, hold_s: float) -> None:
        """From now on `share` of the messages block a consume thread for `hold_s` seconds."""

    def release(self) -> int:
        """No message blocks any more; the threads blocked now return. Returns how many processes were told."""

    def blocked(self) -> dict[str, int]:
        """Consume threads blocked now, per process, as the processes report it."""

    def holding(self) -> dict[str, Any]:
        """The blocking setting each process has (None: off)."""

    def to_json(self) -> dict:
        """`{"factory": "module:callable", ...}`; `callable(data, journal)` builds it again."""


class ConsumerStuck(Fault):
    kind = "consumer_stuck"
    summary = "a share of messages block a consume thread for hold_s (a listener without a timeout); revert: release"
    Params = StuckParams
    target_roles = ("consumer",)
    VERIFY_TIMEOUT_S = 20.0

    @property
    def listeners(self) -> ConsumerListeners:
        return build_from_factory(self.target.extras["listeners"], self.journal)

    def check(self) -> None:
        super().check()
        if self.target.role != "consumer" or not (self.target.extras.get("listeners") or {}).get("factory"):
            raise FaultRefused(f"{self.kind}: target {self.target.name} is not a consumer with its listeners "
                               f"(role {self.target.role}); allowed: consumer:<group>, <group>.c<index>")

    def claims(self) -> list[str]:
        return [f"consumer-control:{f}" for f in self.listeners.files]

    def plan(self) -> list[dict]:
        return [{"op": "consumer_release", "listeners": self.listeners.to_json()}]

    def inject(self) -> dict:
        listeners = self.listeners
        listeners.hold(self.params.share, self.params.hold_s)
        stuck = {"share": self.params.share, "hold_s": self.params.hold_s}
        return {"files": listeners.files, "stuck": stuck, "pids": self.target.pids()}

    def measure(self) -> tuple[bool, dict]:
        """Effective once a consume thread is measured blocked (the processes report it when a thread starts or
        stops blocking; no report yet = no thread blocked yet)."""
        blocked = self.listeners.blocked()
        return sum(blocked.values()) > 0, {"blocked": blocked, "pids": self.target.pids()}

    def shortfall(self, evidence: dict) -> tuple[str, str]:
        return f"blocked consume threads per process {evidence.get('blocked')}", "at least one consume thread blocked"

    def measure_gone(self) -> dict:
        return {"control": self.listeners.holding()}

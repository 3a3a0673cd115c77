"""A scenario's phases: each a name and a duration, the load's rate in it (open model), the faults applied at its
start and the expectations about it; and the `readback:` section (reading every queue back after the run)."""
from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from analysis.expectations import Expectation
from harness.scenario.cluster import NODE_NAMES
from harness.scenario.consumers import is_consumer_target
from harness.scenario.controller_keys import CONTROLLER_LEADER
from harness.scenario.schema import NAME_PATTERN, Duration, Name, Strict, at
from harness.scenario.search import SearchSpec
from harness.scenario.workload import MAX_RATE

WARMUP_PHASE = "warmup"
INTERRUPTED_PHASE = "interrupted"
"""What rows intended after a Ctrl-C, SIGTERM or a harness failure are labelled (never the phase it cut short)."""
MAX_PHASES = 256
MAX_FAULTS_PER_PHASE = 16
MAX_EXPECTATIONS = 512
GROUP_TARGET_RE = re.compile(f"{NAME_PATTERN.rstrip('$')}/(master|slave)$")
"""`<broker group>/<role>`: a broker of one group (harness.topology checks the group exists)."""


class FaultSpec(Strict):
    """A fault applied at the start of its phase and reverted at its end (or after the read-back)."""

    id: Name | None = Field(default=None, description="name used by expectations (default: the kind)")
    kind: str
    target: str
    params: dict[str, Any] = {}
    revert: Literal["phase_end", "after_readback"] = Field(
        default="phase_end", description="after_readback keeps the fault while every queue is read back")

    @field_validator("target")
    @classmethod
    def _target(cls, v: str) -> str:
        if v not in NODE_NAMES and v != CONTROLLER_LEADER and not is_consumer_target(v) \
                and not GROUP_TARGET_RE.match(v):
            raise ValueError(f"{v!r} is not a node of the cluster; allowed: {', '.join(NODE_NAMES)}, "
                             f"<broker group>/master, <broker group>/slave, {CONTROLLER_LEADER} (controllers: 3), "
                             "consumer:<group>, <group>.c<index>")
        return v

    @property
    def role(self) -> str:
        """The target's role within its broker group (`broker-b/master` -> `master`), else the target itself."""
        return self.target.partition("/")[2] or self.target


class PhaseSpec(Strict):
    name: Name

    @field_validator("name")
    @classmethod
    def _not_reserved(cls, v: str) -> str:
        if v == INTERRUPTED_PHASE:
            raise ValueError(f"{INTERRUPTED_PHASE!r} labels the rows sent after a run was interrupted; allowed: any "
                             "other name")
        return v

    duration: Duration
    duration_s: float | None = Field(default=None, description="written by resolution; seconds of duration")
    rate: float | None = Field(default=None, gt=0, le=MAX_RATE,
                               description="open model: the load's total sends/s in this phase")
    faults: list[FaultSpec] = Field(default=[], max_length=MAX_FAULTS_PER_PHASE)
    search: SearchSpec | None = Field(default=None, description="open model: move the rate step by step to find "
                                                                "the highest one held within bounds")
    expect: list[Expectation] = Field(default=[], max_length=MAX_EXPECTATIONS,
                                      description="expectations of this phase (phase filled in)")

    @model_validator(mode="before")
    @classmethod
    def _seconds(cls, data: Any) -> Any:
        if isinstance(data, dict) and "duration_s" in data:
            s = data["duration_s"]
            if isinstance(s, bool) or not isinstance(s, (int, float)):
                raise at(("duration_s",), f"expected a number of seconds, got {s!r}")
            if "duration" not in data:
                data = {**data, "duration": f"{round(s * 1000)}ms"}
        return data

    @model_validator(mode="after")
    def _agree(self) -> PhaseSpec:
        if self.duration <= 0:
            raise at(("duration",), "must be above 0s")
        if self.duration_s is not None and abs(self.duration_s - self.duration) > 1e-6:
            raise at(("duration_s",), f"{self.duration_s} disagrees with duration {self.duration:g}s")
        self.duration_s = self.duration
        if self.search is not None and self.duration < self.search.step * self.search.hold:
            raise at(("search", "hold"), f"{self.search.hold} steps of {self.search.step:g}s do not fit in the "
                                         f"phase's {self.duration:g}s; allowed: a longer phase, or fewer or shorter "
                                         "steps")
        return self


class ReadbackSpec(Strict):
    enabled: bool = True
    timeout: Duration = "120s"
    batch: int = Field(default=32, ge=1, le=1024, description="messages per pull request")


"""The scenario's `consumers:` section: `drain` (how long the run waits after the load for every group's lag to
reach 0) and `groups`, each a `GroupSpec` of `loads.consumer_spec` (engineer C1's model: name, consumers, threads,
processing, stuck, consume_from, reconsume_share), embedded as is. Until `loads.consumer_spec` exists, a stand-in
of the same shape is used so a scenario can already name its groups.

Consumer fault targets: `consumer:<group>` (every process of the group) or `<group>.c<i>` (one process).
"""
from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from harness.schemabase import NAME_PATTERN, Duration, Strict, at

DEFAULT_DRAIN = "30s"
MAX_GROUPS = 16
GROUP_TARGET_PREFIX = "consumer:"
WORKER_TARGET_RE = re.compile(r"^(?P<group>[A-Za-z0-9][A-Za-z0-9_.-]*)\.c(?P<index>\d+)$")

try:  # engineer C1's model (branch h12-consumerproc)
    from loads.consumer_spec import GroupSpec
except ImportError:  # pragma: no cover - the stand-in until it lands

    class StuckSpec(BaseModel):
        model_config = ConfigDict(extra="forbid")
        share: float = Field(gt=0, le=1, description="share of messages that block a consume thread")
        hold_s: float = Field(gt=0, le=86400, description="how long such a message blocks its thread (s)")

    class GroupSpec(BaseModel):  # type: ignore[no-redef]
        """One consumer group: its processes and what their listener does."""

        model_config = ConfigDict(extra="forbid")
        name: str = Field(pattern=NAME_PATTERN)
        consumers: int = Field(default=1, ge=1, le=64, description="consumer processes")
        threads: int = Field(default=20, ge=1, le=256, description="consume threads per process")
        processing: float = Field(default=0, ge=0, le=60000, description="listener time per message (ms)")
        stuck: StuckSpec | None = None
        consume_from: Literal["CONSUME_FROM_LAST_OFFSET", "CONSUME_FROM_FIRST_OFFSET"] = "CONSUME_FROM_LAST_OFFSET"
        reconsume_share: float | None = Field(default=None, ge=0, le=1)


class ConsumersSection(Strict):
    """Consumer groups started before the load, drained after it, stopped before the read-back."""

    drain: Duration = Field(default=DEFAULT_DRAIN, description="after the load: wait up to this long for lag 0")
    groups: list[GroupSpec] = Field(default=[], max_length=MAX_GROUPS)

    @model_validator(mode="after")
    def _names(self) -> ConsumersSection:
        names = [g.name for g in self.groups]
        for i, name in enumerate(names):
            if names.index(name) != i:
                raise at(("groups", i, "name"), f"group name {name!r} is used twice")
        return self

    def group(self, name: str) -> Any | None:
        return next((g for g in self.groups if g.name == name), None)

    def workers(self) -> list[str]:
        """Every consumer process's name, `<group>.c<i>`."""
        return [f"{g.name}.c{i}" for g in self.groups for i in range(g.consumers)]


def is_consumer_target(target: str) -> bool:
    return target.startswith(GROUP_TARGET_PREFIX) or WORKER_TARGET_RE.match(target) is not None


def target_problem(target: str, section: ConsumersSection | None) -> str | None:
    """Why `target` names no consumer of `section` (None when it does)."""
    groups = [g.name for g in section.groups] if section else []
    allowed = ", ".join([f"consumer:{g}" for g in groups] + (section.workers() if section else [])) or "none"
    if target.startswith(GROUP_TARGET_PREFIX):
        name = target[len(GROUP_TARGET_PREFIX):]
        return None if name in groups else f"{name!r} is not a consumer group of this scenario; allowed: {allowed}"
    m = WORKER_TARGET_RE.match(target)
    if m is None:
        return f"{target!r} is not a consumer target; allowed: {allowed}"
    group = section.group(m["group"]) if section else None
    if group is None or int(m["index"]) >= group.consumers:
        return f"{target!r} is not a consumer process of this scenario; allowed: {allowed}"
    return None

"""The scenario's `consumers:` section: `drain` (how long the run waits after the load for every group's lag to
reach 0) and `groups`, each a `GroupSpec` of `loads.consumer_spec` (engineer C1's model: name, consumers, threads,
processing, stuck, consume_from, reconsume_share, profile), embedded as is. This is where a group is validated: the
run hands these `GroupSpec`s to `loads.consumers.ConsumerFleet` as they are.

Consumer fault targets: `consumer:<group>` (every process of the group) or `<group>.c<i>` (one process).
"""
from __future__ import annotations

import re

from pydantic import Field, model_validator

from harness.scenario.schema import Duration, Strict, at
from loads.consumer_spec import GroupSpec

DEFAULT_DRAIN = "30s"
MAX_GROUPS = 16
GROUP_TARGET_PREFIX = "consumer:"
WORKER_TARGET_RE = re.compile(r"^(?P<group>[A-Za-z0-9][A-Za-z0-9_.-]*)\.c(?P<index>\d+)$")


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

    def group(self, name: str) -> GroupSpec | None:
        return next((g for g in self.groups if g.name == name), None)

    def workers(self) -> list[str]:
        """Every consumer process's name, `<group>.c<i>`."""
        return [g.worker(i) for g in self.groups for i in range(g.consumers)]


def is_consumer_target(target: str) -> bool:
    return target.startswith(GROUP_TARGET_PREFIX) or WORKER_TARGET_RE.match(target) is not None


def target_problem(target: str, section: ConsumersSection | None) -> str | None:
    """Why `target` names no consumer of `section` (None when it does)."""
    groups = [g.name for g in section.groups] if section else []
    workers = section.workers() if section else []
    allowed = ", ".join([f"{GROUP_TARGET_PREFIX}{g}" for g in groups] + workers) or "none"
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


def target_group(target: str) -> str | None:
    """The consumer group a fault target acts on (`consumer:<group>` or `<group>.c<i>`), None for a node."""
    if target.startswith(GROUP_TARGET_PREFIX):
        return target[len(GROUP_TARGET_PREFIX):]
    m = WORKER_TARGET_RE.match(target)
    return m["group"] if m else None

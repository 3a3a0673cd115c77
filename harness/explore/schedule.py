"""A fault schedule and the scenario it becomes. A schedule is a quiet lead-in, one or more windows (each: the quiet
gap before it, its length, its faults and the load's rate) and a tail; as a scenario it is the base scenario's
cluster, topic, load and read-back with the phases `steady`, `w1`, `gap2`, `w2`, ..., `after` (a window's faults
applied at its start and reverted at its end, as every scenario's) and the invariants as expectations. The
scenario is validated by the scenario schema itself (`load_scenario_text`), so what explore runs and writes is a
plain scenario file that `rmq-chaos validate` and `run` take."""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import yaml

from harness.scenario import Scenario, format_duration, load_scenario_text

LEAD_PHASE, AFTER_PHASE = "steady", "after"
UNSAFE_ID = re.compile(r"[^A-Za-z0-9_.-]")


@dataclass(frozen=True)
class DrawnFault:
    kind: str
    target: str
    params: Mapping[str, Any] = field(default_factory=dict)
    choice: int = 0
    """the index of the space's fault choice it was drawn from (where its parameter ranges are)"""

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "target": self.target, "params": dict(self.params), "choice": self.choice}


@dataclass(frozen=True)
class Window:
    gap_s: float
    """quiet before the window (the lead-in for the first)"""
    duration_s: float
    faults: tuple[DrawnFault, ...]

    def to_json(self) -> dict[str, Any]:
        return {"gap_s": self.gap_s, "duration_s": self.duration_s, "faults": [f.to_json() for f in self.faults]}


@dataclass(frozen=True)
class Schedule:
    windows: tuple[Window, ...]
    after_s: float
    rate: float | None = None

    @property
    def fault_count(self) -> int:
        return sum(len(w.faults) for w in self.windows)

    @property
    def length_s(self) -> float:
        return sum(w.gap_s + w.duration_s for w in self.windows) + self.after_s

    def size(self) -> tuple[float, ...]:
        """What shrinking makes smaller, most important first."""
        return (self.fault_count, len(self.windows), sum(w.duration_s for w in self.windows),
                sum(w.gap_s for w in self.windows), self.rate or 0.0)

    def with_window(self, i: int, window: Window | None) -> Schedule:
        """This schedule with window `i` replaced (or dropped: None)."""
        ws = list(self.windows)
        if window is None:
            ws.pop(i)
            if i == 0 and ws:  # the next window keeps the lead-in's start
                ws[0] = replace(ws[0], gap_s=self.windows[0].gap_s)
        else:
            ws[i] = window
        return replace(self, windows=tuple(ws))

    def to_json(self) -> dict[str, Any]:
        return {"windows": [w.to_json() for w in self.windows], "after_s": self.after_s, "rate": self.rate}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Schedule:
        return cls(tuple(Window(w["gap_s"], w["duration_s"],
                                tuple(DrawnFault(f["kind"], f["target"], f.get("params") or {}, f.get("choice", 0))
                                      for f in w["faults"])) for w in data["windows"]),
                   data["after_s"], data.get("rate"))

    def describe(self) -> str:
        """`@7s 12s [kill master restart_after_s=2, freeze slave] | +3s 5s [...]; rate 100/s`."""
        parts = []
        for i, w in enumerate(self.windows):
            faults = ", ".join(f"{f.kind} {f.target}" + "".join(f" {k}={v}" for k, v in f.params.items())
                               for f in w.faults)
            parts.append(f"{'@' if i == 0 else '+'}{w.gap_s:g}s {w.duration_s:g}s [{faults}]")
        return " | ".join(parts) + (f"; rate {self.rate:g}/s" if self.rate else "")


def fault_id(window: int, f: DrawnFault) -> str:
    return UNSAFE_ID.sub("-", f"w{window}-{f.kind}-{f.target}")


def phases(schedule: Schedule) -> list[dict[str, Any]]:
    """The scenario's phases of a schedule: `steady`, then per window its gap (`gap<i>`, from the second) and the
    window (`w<i>`), then `after`."""
    rate = {"rate": schedule.rate} if schedule.rate else {}
    out: list[dict[str, Any]] = []
    for i, w in enumerate(schedule.windows, start=1):
        if w.gap_s > 0:
            out.append({"name": LEAD_PHASE if i == 1 else f"gap{i}", "duration": format_duration(w.gap_s), **rate})
        faults = [{"id": fault_id(i, f), "kind": f.kind, "target": f.target,
                   **({"params": dict(f.params)} if f.params else {})} for f in w.faults]
        out.append({"name": f"w{i}", "duration": format_duration(w.duration_s), **rate, "faults": faults})
    out.append({"name": AFTER_PHASE, "duration": format_duration(schedule.after_s), **rate})
    return out


def scenario_data(base: Mapping[str, Any], name: str, description: str, schedule: Schedule,
                  expect: list[dict[str, Any]]) -> dict[str, Any]:
    """The scenario file's data: the base's sections, this schedule's phases and `expect`."""
    data = {k: v for k, v in base.items() if k not in ("name", "description", "phases", "expect", "matrix")}
    return {"name": name, "description": description, **data, "phases": phases(schedule), "expect": expect}


def to_yaml(data: Mapping[str, Any]) -> str:
    return yaml.safe_dump(dict(data), sort_keys=False, allow_unicode=True, width=120)


def to_scenario(source: str, data: Mapping[str, Any]) -> Scenario:
    """Validated by the scenario schema (raises `SourceError`, one line, naming `source`)."""
    runs = load_scenario_text(source, to_yaml(data))
    return runs[0]

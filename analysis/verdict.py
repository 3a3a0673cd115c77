"""Verdicts, Jepsen style: each expectation held (true), failed (false) or could not be measured (unknown).

A run is valid when every expectation held; false beats unknown beats true when merging (Jepsen's
`merge-valid`). Exit codes: 0 valid, 1 an expectation failed, 2 one could not be measured.
"""
from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analysis.expectations import Expectation
from analysis.measures import Measurement

HELD, FAILED, UNKNOWN = "held", "failed", "unknown"
VALID_OF_STATUS: dict[str, bool | str] = {HELD: True, FAILED: False, UNKNOWN: "unknown"}
EXIT_CODE = {True: 0, False: 1, "unknown": 2}


@dataclass
class ExpectationResult:
    name: str
    expectation: Expectation
    measured: float | None  # None: unknown; inf: never happened
    status: str  # held | failed | unknown
    note: str | None = None
    rows: int | None = None

    @property
    def held(self) -> bool | None:
        return {HELD: True, FAILED: False}.get(self.status)

    def measured_text(self) -> str:
        if self.measured is None:
            return "unknown"
        if math.isinf(self.measured):
            return "never"
        return f"{self.measured:.6g}"

    def limit_text(self) -> str:
        return " ".join(f"{k} {v:g}" for k, v in self.expectation.limit.items())

    def message(self) -> str:
        """One line: name, measured value and limit (what junit and the terminal print for a failure)."""
        text = f"{self.name}: measured {self.measured_text()} ({self.expectation.metric}), limit {self.limit_text()}"
        return text + (f"; {self.note}" if self.note else "")

    def to_json(self) -> dict[str, Any]:
        e = self.expectation
        measured = None if self.measured is None or math.isinf(self.measured) else self.measured
        return {
            "name": self.name, "metric": e.metric, "filters": e.filters,
            **({"basis": e.basis} if e.metric.startswith("latency_") else {}),
            **({"below": e.below} if e.below is not None else {}),
            "limit": e.limit, "measured": measured, "measured_text": self.measured_text(),
            "held": self.held, "status": self.status, "rows": self.rows, "note": self.note,
        }


def judge(e: Expectation, m: Measurement) -> ExpectationResult:
    if m.value is None:
        status = UNKNOWN
    elif getattr(m, "lower_bound", False):
        # at least m.value: it breaks a max for sure, proves a min (without a max), and decides nothing else
        if e.max is not None and m.value > e.max:
            status = FAILED
        elif e.max is None and e.min is not None and m.value >= e.min:
            status = HELD
        else:
            status = UNKNOWN
    else:
        status = HELD if e.holds(m.value) else FAILED
    return ExpectationResult(e.label(), e, m.value, status, m.note, m.rows)


def merge_valid(values: Iterable[bool | str]) -> bool | str:
    """Jepsen's merge: any false -> false; else any unknown -> unknown; else true."""
    vals = list(values)
    if any(v is False for v in vals):
        return False
    if any(v == "unknown" for v in vals):
        return "unknown"
    return True


@dataclass
class RunVerdict:
    """The verdict of one run. A run that did not complete (no run_end 'completed', or request parts lost) is at
    best `unknown`: every expectation may have held over the rows there are, but the history is not whole."""

    run_id: str
    scenario: str
    results: list[ExpectationResult]
    incomplete: str | None = None  # why the run's history is not whole
    extra: dict[str, Any] = field(default_factory=dict)  # loss, faults, warnings for verdict.json

    @property
    def valid(self) -> bool | str:
        valid = merge_valid(VALID_OF_STATUS[r.status] for r in self.results)
        return "unknown" if valid is True and self.incomplete else valid

    @property
    def exit_code(self) -> int:
        return EXIT_CODE[self.valid]

    def counts(self) -> dict[str, int]:
        return {s: sum(r.status == s for r in self.results) for s in (HELD, FAILED, UNKNOWN)}

    def to_json(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "scenario": self.scenario, "valid": self.valid,
                "exit_code": self.exit_code, "incomplete": self.incomplete, "counts": self.counts(),
                "expectations": [r.to_json() for r in self.results], **self.extra}

    def write(self, path: Path) -> None:
        path.write_text(json.dumps(self.to_json(), indent=2, allow_nan=False) + "\n", encoding="utf-8")


def exit_code_of(verdicts: Sequence[RunVerdict]) -> int:
    return EXIT_CODE[merge_valid(v.valid for v in verdicts)]

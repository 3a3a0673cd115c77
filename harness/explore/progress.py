"""What explore shows on the terminal while it goes: the run's own live panel (`harness.progress.RunProgress`: phase,
rate, outcomes, faults) with explore's rows on top: runs done of the budget, failures, runs discarded, the stage
(exploring, confirming, shrinking step N: what it tries) and the time left of the budget."""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from rich.console import Group
from rich.table import Table

from harness.progress import RunProgress


@dataclass
class Tally:
    """Explore's counters, shared by the loop, the progress panel and the page."""

    budget_runs: int
    budget_s: float | None
    started: float
    runs: int = 0
    """every run (exploring, confirming, shrinking)"""
    explored: int = 0
    failures: int = 0
    discarded: int = 0
    stage: str = "exploring"
    shrink_runs: int = 0
    shrink_step: int = 0
    trying: str = ""

    def elapsed_s(self) -> float:
        return time.monotonic() - self.started

    def left_s(self) -> float | None:
        return None if self.budget_s is None else self.budget_s - self.elapsed_s()

    def line(self) -> str:
        left = self.left_s()
        return (f"runs {self.runs} (explored {self.explored}/{self.budget_runs}), failures {self.failures}, "
                f"discarded {self.discarded}; {self.stage_text()}; "
                + (f"{max(0.0, left):.0f}s left" if left is not None else f"{self.elapsed_s():.0f}s so far"))

    def stage_text(self) -> str:
        if self.stage == "shrinking":
            return f"shrinking step {self.shrink_step}: {self.trying}" if self.trying else "shrinking"
        return f"{self.stage}: {self.trying}" if self.trying else self.stage


class ExploreRunProgress(RunProgress):
    """One run's panel with explore's rows above it."""

    def __init__(self, run_id: str, total_s: float, tally: Tally) -> None:
        super().__init__(run_id, total_s)
        self.tally = tally

    def update(self, **kw: Any) -> None:  # type: ignore[override]
        super().update(**kw)
        t = self.tally
        table = Table.grid(padding=(0, 2))
        table.add_row("explore", f"runs {t.runs}, explored {t.explored}/{t.budget_runs}, failures {t.failures}, "
                                 f"discarded {t.discarded}")
        table.add_row("stage", t.stage_text())
        left = t.left_s()
        table.add_row("time", f"{max(0.0, left):.0f}s left of the budget" if left is not None
                      else f"{t.elapsed_s():.0f}s so far (no time budget)")
        self._live.update(Group(table, self._live.renderable))

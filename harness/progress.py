"""What a run shows on the terminal while it goes (rich): the phase, the time left in it and in the run, the rate
achieved, the outcomes so far, the faults in effect, each consumer group's consumed/s and lag; and one line per step (cluster up, fault applied, ...)."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

REFRESH_PER_S = 4


class RunProgress:
    """`step(text)` prints a line; `update(...)` redraws the live panel. Use as a context manager."""

    def __init__(self, run_id: str, total_s: float, console: Console | None = None) -> None:
        self.console = console or Console(stderr=True)
        self.run_id = run_id
        self.total_s = total_s
        self._live = Live(console=self.console, refresh_per_second=REFRESH_PER_S, transient=False)
        self._state: dict[str, Any] = {}

    def __enter__(self) -> RunProgress:
        self._live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._live.__exit__(*exc)  # type: ignore[arg-type]

    def stop(self) -> None:
        """End the live panel now (the process is about to end without its wind-down): the terminal gets its
        cursor back."""
        try:
            self._live.stop()
        except Exception:  # noqa: BLE001 - best effort on the way out
            self.console.show_cursor(True)

    def step(self, text: str, style: str = "") -> None:
        self.console.print(Text(text, style=style))

    def update(self, *, phase: str, index: int, phases: int, phase_left_s: float, run_left_s: float,
               stats: Mapping[str, Any] | None, faults: list[str],
               consumers: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        table = Table.grid(padding=(0, 2))
        table.add_row("run", self.run_id)
        table.add_row("phase", f"{phase} ({index + 1}/{phases}), {max(0.0, phase_left_s):.0f}s left; "
                               f"run {max(0.0, run_left_s):.0f}s left of {self.total_s:.0f}s")
        table.add_row("faults", ", ".join(faults) or "none")
        if stats:
            rate = stats.get("rate")
            table.add_row("rate", f"{rate:.0f} sends/s" if isinstance(rate, (int, float)) else "-")
            outcomes = stats.get("outcomes") or {}
            table.add_row("outcomes", ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items())) or "-")
            p99 = stats.get("p99_ms")
            if isinstance(p99, (int, float)):
                table.add_row("p99", f"{p99:.1f} ms (last seconds)")
        for group, figures in (consumers or {}).items():
            table.add_row(f"group {group}", consumer_line(figures))
        self._live.update(Group(table))


def consumer_line(figures: Mapping[str, Any]) -> str:
    """`120 consumed/s, lag 35` (a dash for a figure the broker has not given yet)."""
    tps, lag = figures.get("tps"), figures.get("lag")
    return (f"{tps:.0f} consumed/s" if isinstance(tps, (int, float)) else "- consumed/s") + \
        (f", lag {lag}" if isinstance(lag, int) else ", lag -")

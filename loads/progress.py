"""The load's progress on the terminal (rich): phase, achieved against target rate, sends fired / completed / in
flight, rows written, outcomes so far, and the p50/p99/max latency (from the intended start) and p99 start lag over
the last seconds.

`render(stats)` makes the panel from a `LoadProcess.stats()` mapping (the harness can embed it in its own display);
`ProgressView(get_stats)` refreshes it in place from a background thread.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

REFRESH_S = 0.5
OK_WORDS = ("SEND_OK",)


def _ms(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.2f} ms" if value < 100 else f"{value:,.0f} ms"


def render(stats: Mapping[str, Any]) -> Panel:
    """A panel of the figures in `stats` (a `LoadStats` mapping)."""
    window = stats.get("window_s", 5)
    head = Table.grid(padding=(0, 2))
    for _ in range(4):
        head.add_column()
    target = stats.get("target_rate")
    rate = f"{stats.get('rate', 0):,.0f}/s" + (f" of {target:,.0f}/s" if target else "")
    head.add_row("phase", Text(str(stats.get("phase") or "-"), style="bold"), "rate", Text(rate, style="bold"))
    head.add_row("fired", f"{stats.get('fired', 0):,}", "completed", f"{stats.get('completed', 0):,}")
    head.add_row("in flight", f"{stats.get('in_flight', 0):,}", "rows written",
                 f"{stats.get('rows_written', 0):,} in {stats.get('parts', 0):,} parts")
    head.add_row(f"p50 / p99 ({window:g} s)", f"{_ms(stats.get('p50_ms'))} / {_ms(stats.get('p99_ms'))}",
                 "max / start lag p99", f"{_ms(stats.get('max_ms'))} / {_ms(stats.get('lag_p99_ms'))}")
    outcomes = Table(box=None, show_header=True, padding=(0, 2))
    outcomes.add_column("outcome")
    outcomes.add_column("count", justify="right")
    for word, n in (stats.get("outcomes") or {}).items():
        outcomes.add_row(Text(word, style="green" if word in OK_WORDS else "red"), f"{n:,}")
    title = f"load [{stats.get('state', '?')}] {stats.get('elapsed_s', 0):.0f} s, {stats.get('workers', 0)} worker(s)"
    return Panel(Group(head, outcomes), title=title, expand=False)


class ProgressView:
    """Redraws `render(get_stats())` every `REFRESH_S` until `stop()`."""

    def __init__(self, get_stats: Callable[[], Mapping[str, Any]], console: Console | None = None) -> None:
        self.get_stats = get_stats
        self.console = console or Console(stderr=True)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="load-progress", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        with Live(render(self.get_stats()), console=self.console, refresh_per_second=4, transient=False) as live:
            while not self._stop.wait(REFRESH_S):
                live.update(render(self.get_stats()))
            live.update(render(self.get_stats()))

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)

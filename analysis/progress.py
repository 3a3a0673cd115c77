"""Progress of the job on the terminal (rich): the current step, and the Spark stages running under it.

A background thread polls Spark's status tracker every `POLL_S` and shows the active stages' finished/total tasks,
so a long scan on a cluster shows that it moves. With `enabled=False` (or output not a terminal and not forced)
the steps are still printed, one line each.
"""
from __future__ import annotations

import threading
import time
from types import TracebackType

from pyspark import SparkContext
from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

POLL_S = 0.5


class JobProgress:
    """`with JobProgress(console) as p: p.step("reading"); p.attach(spark_context) ...`"""

    def __init__(self, console: Console | None = None, enabled: bool = True) -> None:
        self.console = console or Console(stderr=True)
        self.enabled = enabled
        self._progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                                  console=self.console, transient=True, disable=not enabled)
        self._task = self._progress.add_task("starting", total=None)
        self._step = "starting"
        self._started = time.monotonic()
        self._sc: SparkContext | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> JobProgress:
        self._progress.start()
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
        self._progress.stop()

    def step(self, text: str) -> None:
        """Start a new step; the previous one is printed as done with its time."""
        now = time.monotonic()
        if self._step != "starting" and self.enabled:
            self.console.print(f"[green]✓[/] {self._step} [dim]({now - self._started:.1f} s)[/]")
        self._step, self._started = text, now
        self._progress.update(self._task, description=text)

    def done(self) -> None:
        self.step("done")

    def attach(self, sc: SparkContext) -> None:
        """Show the running Spark stages under the current step."""
        if not self.enabled or self._thread is not None:
            return
        self._sc = sc
        self._thread = threading.Thread(target=self._poll, name="spark-progress", daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        while not self._stop.wait(POLL_S):
            try:
                tracker = self._sc.statusTracker() if self._sc else None
                stages = [tracker.getStageInfo(s) for s in tracker.getActiveStageIds()] if tracker else []
            except Exception:  # the context is stopping; progress is best effort
                return
            parts = [f"stage {s.stageId}: {s.numCompletedTasks}/{s.numTasks} tasks" for s in stages if s]
            text = self._step + (f" [dim]({', '.join(parts)})[/]" if parts else "")
            self._progress.update(self._task, description=text)

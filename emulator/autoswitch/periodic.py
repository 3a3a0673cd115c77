"""A task run at a fixed rate on its own named thread (`scheduleAtFixedRate` of the replicas manager's scheduled
services), cancellable; an exception is logged and the task goes on, as in Java."""
from __future__ import annotations

import threading
from collections.abc import Callable

from emulator.logs import broker_log


class Periodic:
    def __init__(self, name: str, initial_s: float, period_s: Callable[[], float], task: Callable[[], None]) -> None:
        self._cancel = threading.Event()
        self._task, self._initial, self._period = task, initial_s, period_s
        threading.Thread(target=self._run, name=name, daemon=True).start()

    def cancel(self) -> None:
        self._cancel.set()

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def _run(self) -> None:
        if self._cancel.wait(self._initial):
            return
        while not self._cancel.is_set():
            try:
                self._task()
            except Exception as e:  # scheduled tasks log and keep their schedule
                broker_log.error("scheduled task %s failed: %s", threading.current_thread().name, e)
            if self._cancel.wait(self._period()):
                return

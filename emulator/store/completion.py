"""A small CompletableFuture: `complete` once, callbacks run on the completing thread (as `thenApply` does when the
flush or replica future completes), `combine` for `thenCombine`. Each completion has its own lock, so the threads
completing different sends (flush, group transfer, send threads) never wait for each other here."""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any


class Completion:
    __slots__ = ("value", "done", "_callbacks", "_lock")

    def __init__(self) -> None:
        self.value: Any = None
        self.done = False
        self._callbacks: list[Callable[[Any], None]] | None = []
        self._lock = threading.Lock()

    @classmethod
    def completed(cls, value: Any) -> Completion:
        c = cls()
        c.value, c.done, c._callbacks = value, True, None
        return c

    def complete(self, value: Any) -> bool:
        with self._lock:
            if self.done:
                return False
            self.value, self.done = value, True
            callbacks, self._callbacks = self._callbacks, None
        for cb in callbacks or ():
            cb(value)
        return True

    def then(self, callback: Callable[[Any], None]) -> None:
        with self._lock:
            if not self.done:
                self._callbacks.append(callback)  # type: ignore[union-attr]
                return
        callback(self.value)


def combine(a: Completion, b: Completion, fn: Callable[[Any, Any], Any]) -> Completion:
    """A completion of `fn(a.value, b.value)` once both are done."""
    out = Completion()
    if a.done and b.done:
        out.complete(fn(a.value, b.value))
        return out
    remaining = [2]
    lock = out._lock

    def one(_value: Any) -> None:
        with lock:
            remaining[0] -= 1
            last = remaining[0] == 0
        if last:
            out.complete(fn(a.value, b.value))

    a.then(one)
    b.then(one)
    return out

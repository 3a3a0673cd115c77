"""`Wakeup`: the flag a service thread waits on and other threads raise, as Java's `ServiceThread.wakeup()` (a
compare-and-set of `hasNotified`, the latch counted down only when the flag was not raised yet): raising a flag that
is already raised costs one attribute read, not a lock round trip and a `notify_all`. The waiter clears it before
it looks for work, so a raise between its look and its wait is never lost."""
from __future__ import annotations

import threading


class Wakeup(threading.Event):
    def set(self) -> None:
        if not self._flag:
            super().set()

"""The tests' one way to wait for something: `poll` calls a condition until it returns something truthy and hands
that value back, or fails the test naming what it waited for. A deadline only bounds a wait that went wrong; no
test asserts how long a wait took (speed belongs in `benchmarks/`)."""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def poll(condition: Callable[[], Any], timeout_s: float = 10.0, what: str = "", interval_s: float = 0.02) -> Any:
    """The first truthy value of `condition()`; AssertionError naming `what` (and the last value) at the deadline."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what or 'the condition'} "
                                 f"(last: {value!r})")
        time.sleep(interval_s)

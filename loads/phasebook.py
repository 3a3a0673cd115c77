"""`PhaseBook`: when each phase began, so a request row carries the phase current when the request was intended.

The harness says "phase X from `at_ns`" (wall-clock ns taken when it called `set_phase`); the message reaches the
workers a few milliseconds later, so the phase of a row is looked up by its intended time when the row is written,
not when it is sent.
"""
from __future__ import annotations

import bisect


class PhaseBook:
    """Phase boundaries in time order. Take `snapshot()` in the thread that calls `begin()`; hand the copy on."""

    def __init__(self, initial: str | None = None) -> None:
        self._starts: list[int] = [0]
        self._names: list[str | None] = [initial]

    def begin(self, name: str, at_ns: int) -> None:
        """Phase `name` is current from `at_ns` on (a boundary earlier than the last one is moved up to it)."""
        at_ns = max(at_ns, self._starts[-1])
        self._starts.append(at_ns)
        self._names.append(name)

    @property
    def current(self) -> str | None:
        return self._names[-1]

    def snapshot(self) -> PhaseBook:
        copy = PhaseBook.__new__(PhaseBook)
        copy._starts, copy._names = list(self._starts), list(self._names)
        return copy

    def at(self, ns: int) -> str | None:
        """The phase current at wall-clock `ns`."""
        return self._names[bisect.bisect_right(self._starts, ns) - 1]

    def starts(self) -> list[int]:
        return list(self._starts)

    def name(self, index: int) -> str | None:
        """The phase that began at boundary `index` (-1: the one before the first boundary, i.e. the first)."""
        return self._names[max(index, 0)]

    def boundaries(self) -> list[tuple[int, str | None]]:
        return list(zip(self._starts, self._names, strict=True))

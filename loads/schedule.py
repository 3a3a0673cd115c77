"""`OpenSchedule`: the intended start times of one user of an open-model client.

A user owns one slot every `1/rate` seconds from an anchor. Slots are never dropped: when the broker stalls, the
slots that came due meanwhile stay owed and are sent as soon as the user is free, each keeping its intended time,
so latency counted from it shows the stall (no coordinated omission). A rate change at `at_ns` ends the current
run of slots there (slots before `at_ns` stay owed) and starts a new run at `at_ns`. Pure arithmetic, no clock
reads: callers pass times in wall-clock ns (`time.time_ns()`).

Example::

    s = OpenSchedule(rate_per_user=10.0, start_ns=t0)   # slots at t0, t0+100ms, ...
    due = s.due_ns        # when the next send is meant to start
    s.advance()           # that slot is taken
"""
from __future__ import annotations

import bisect
import math
from collections import deque

NS_PER_S = 1_000_000_000
GOLDEN = (math.sqrt(5) - 1) / 2


def stagger(index: int) -> float:
    """A fraction in [0, 1) for the `index`-th user, spread evenly whatever the number of users (golden ratio)."""
    return (index * GOLDEN) % 1.0


class OpenSchedule:
    """Slots of one user. `offset` (a fraction of the period) staggers users so they do not fire together."""

    __slots__ = ("_anchor", "_period", "_k", "_offset", "_owed", "taken", "__weakref__")

    def __init__(self, rate_per_user: float, start_ns: int, offset: float = 0.0) -> None:
        if not 0.0 <= offset < 1.0:
            raise ValueError(f"offset {offset} must be in [0, 1)")
        self._offset = offset
        self._owed: deque[list] = deque()  # earlier runs with slots still owed: [anchor, period, k, k_end]
        self.taken = 0
        """Slots taken so far."""
        self._start_run(rate_per_user, start_ns)

    def _start_run(self, rate: float, at_ns: int) -> None:
        if rate < 0:
            raise ValueError(f"rate {rate} must be >= 0")
        self._period = NS_PER_S / rate if rate > 0 else math.inf
        self._anchor = at_ns + (round(self._offset * self._period) if rate > 0 else 0)  # int: exact at 1e18 ns
        self._k = 0

    @property
    def rate(self) -> float:
        return NS_PER_S / self._period if self._period != math.inf else 0.0

    @property
    def due_ns(self) -> int | None:
        """The intended start of the next slot (possibly in the past: owed), or None when the rate is 0 and
        nothing is owed."""
        if self._owed:
            anchor, period, k, _ = self._owed[0]
            return anchor + round(k * period)
        if self._period == math.inf:
            return None
        return self._anchor + round(self._k * self._period)

    def advance(self) -> int:
        """Take the next slot; returns its intended start."""
        due = self.due_ns
        if due is None:
            raise RuntimeError("no slot is due: the rate is 0")
        if self._owed:
            run = self._owed[0]
            run[2] += 1
            if run[2] >= run[3]:
                self._owed.popleft()
        else:
            self._k += 1
        self.taken += 1
        return due

    def take_before(self, limit_ns: int) -> list[tuple[int, float, int, int]]:
        """Take every slot due before `limit_ns` at once (never sent: dropped by the caller); returns the runs they
        came from as `(anchor, period, k_from, k_to)`: slot k is due at `anchor + round(k * period)`."""
        taken = []
        while self._owed:
            anchor, period, k, k_end = self._owed[0]
            k_stop = min(k_end, _first_at_or_after(anchor, period, limit_ns))
            if k_stop <= k:
                return taken
            taken.append((anchor, period, k, k_stop))
            self.taken += k_stop - k
            if k_stop < k_end:
                self._owed[0][2] = k_stop
                return taken
            self._owed.popleft()
        if self._period != math.inf:
            k_stop = _first_at_or_after(self._anchor, self._period, limit_ns)
            if k_stop > self._k:
                taken.append((self._anchor, self._period, self._k, k_stop))
                self.taken += k_stop - self._k
                self._k = k_stop
        return taken

    def owed(self, now_ns: int) -> int:
        """How many slots are due at `now_ns` and not taken yet (the user's backlog)."""
        n = sum(int(run[3] - run[2]) for run in self._owed)
        if self._period != math.inf and now_ns >= self._anchor:
            n += max(0, math.floor((now_ns - self._anchor) / self._period) + 1 - self._k)
        return n

    def set_rate(self, rate_per_user: float, at_ns: int) -> None:
        """From `at_ns` on, slots come at the new rate; slots of the old rate before `at_ns` stay owed."""
        if self._period != math.inf and at_ns > self._anchor:
            k_end = math.ceil((at_ns - self._anchor) / self._period)
            if k_end > self._k:
                self._owed.append([self._anchor, self._period, self._k, k_end])
        self._start_run(rate_per_user, at_ns)


def _first_at_or_after(anchor: int, period: float, t_ns: int) -> int:
    """The first k with `anchor + round(k * period) >= t_ns` (k >= 0)."""
    if t_ns <= anchor:
        return 0
    k = max(0, math.floor((t_ns - anchor) / period) - 1)
    while anchor + round(k * period) < t_ns:
        k += 1
    return k


def split_by(run: tuple[int, float, int, int], starts: list[int]) -> list[tuple[int, int, int, int]]:
    """A run of slots `(anchor, period, k_from, k_to)` cut at the boundary times `starts` (ascending): per piece
    `(index of the boundary it lies after (-1: before the first), count, first_ns, last_ns)`."""
    anchor, period, k0, k1 = run
    pieces = []
    while k0 < k1:
        first = anchor + round(k0 * period)
        i = bisect.bisect_right(starts, first) - 1
        k_end = k1 if i + 1 >= len(starts) else min(k1, _first_at_or_after(anchor, period, starts[i + 1]))
        pieces.append((i, k_end - k0, first, anchor + round((k_end - 1) * period)))
        k0 = k_end
    return pieces

"""`LogHistogram`: counts of millisecond values in log-spaced buckets, for progress figures.

Buckets are 1/64 of an octave wide (about 1.1 %), starting at 1 microsecond, so a quantile read from the histogram
is the upper edge of the bucket that holds it: never below the true value and at most 1.1 % above it. Histograms
of different workers merge by adding counts, and travel as JSON (`{"index": count}`). The exact figures are in the
request rows; this is only what the terminal shows while a run goes.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

import numpy as np

BUCKETS_PER_OCTAVE = 64
US_PER_MS = 1000.0


class LogHistogram:
    """Sparse bucket counts; bucket i holds values in [2**(i/64), 2**((i+1)/64)) microseconds (i=0 also below)."""

    __slots__ = ("counts", "max_ms")

    def __init__(self, counts: Mapping[int, int] | None = None, max_ms: float = 0.0) -> None:
        self.counts: dict[int, int] = dict(counts or {})
        self.max_ms = max_ms

    @classmethod
    def of(cls, values_ms: Iterable[float] | np.ndarray) -> LogHistogram:
        arr = np.asarray(values_ms, dtype=np.float64)
        if arr.size == 0:
            return cls()
        us = np.maximum(arr * US_PER_MS, 1.0)
        idx = np.floor(np.log2(us) * BUCKETS_PER_OCTAVE).astype(np.int64)
        keys, counts = np.unique(idx, return_counts=True)
        return cls(dict(zip(keys.tolist(), counts.tolist(), strict=True)), float(arr.max()))

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def merge(self, other: LogHistogram) -> LogHistogram:
        for k, v in other.counts.items():
            self.counts[k] = self.counts.get(k, 0) + v
        self.max_ms = max(self.max_ms, other.max_ms)
        return self

    def minus(self, earlier: LogHistogram) -> LogHistogram:
        """The values added since `earlier` (a snapshot of the same running histogram). The maximum is the running
        one: an upper bound of the difference's."""
        counts = {k: v - earlier.counts.get(k, 0) for k, v in self.counts.items()}
        return LogHistogram({k: v for k, v in counts.items() if v > 0}, self.max_ms)

    def quantile(self, q: float) -> float | None:
        """The value (ms) at quantile `q`, as the upper edge of its bucket (capped at the maximum seen)."""
        total = self.total
        if total == 0:
            return None
        rank = max(1, math.ceil(q * total))
        seen = 0
        for k in sorted(self.counts):
            seen += self.counts[k]
            if seen >= rank:
                return min(2.0 ** ((k + 1) / BUCKETS_PER_OCTAVE) / US_PER_MS, self.max_ms)
        return self.max_ms

    def to_json(self) -> dict:
        return {"counts": {str(k): v for k, v in self.counts.items()}, "max_ms": self.max_ms}

    @classmethod
    def from_json(cls, doc: Mapping) -> LogHistogram:
        return cls({int(k): int(v) for k, v in doc.get("counts", {}).items()}, float(doc.get("max_ms", 0.0)))

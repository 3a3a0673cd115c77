"""`LocustFeed`: Locust's own request statistics (its console table, web UI, CSV files and a worker's reports to its
master) made from the send rows in batches, instead of one `request` event per send.

The request recorder hands it every row it takes, once, in its writer's native thread (`digest`); the rows become
one detached `StatsEntry` per client and the failures counted per (client, outcome, response code), and the function
`digest` returns adds them to the environment's statistics in the event loop's thread with `StatsEntry.extend`, the
merge Locust's master uses for its workers' reports. Locust then shows what the rows say, at most a flush interval
late: a send counts in the second it completed, its response time is its latency from the intended start (bucketed
by `locust.stats.bucket_response_time`, looked up for each batch, so a bucketing a locustfile installs applies), its
size is the client's message size, and a send that did not end in SEND_OK is a failure named by its outcome word
(`SendFailure`). The event cost about a sixth of a send's CPU (benchmarks/loads_throughput.py); Locust's request
listeners of other plugins no longer see each send.
"""
from __future__ import annotations

from locust import stats as locust_stats
from locust.stats import StatsEntry, StatsError

from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from analysis.contract import SEND_OK
from loads.recorder import FIELDS

REQUEST_TYPE = "SEND"
NS_PER_S = 1_000_000_000
NS_PER_MS = 1_000_000
CLIENT, INTENDED, END, OUTCOME, CODE, REMARK = (FIELDS.index(f) for f in ("client", "intended_ns", "end_ns", "outcome",
                                                                         "response_code", "remark"))


class SendFailure(Exception):
    """What Locust's failure table shows for a send that did not end in SEND_OK: its outcome word (and response
    code), so failures group by outcome rather than by every remark."""

    def __init__(self, outcome: str, response_code: int | None, remark: str | None) -> None:
        super().__init__(outcome)
        self.outcome, self.response_code, self.remark = outcome, response_code, remark

    def __repr__(self) -> str:
        return self.outcome if self.response_code is None else f"{self.outcome}({self.response_code})"

    __str__ = __repr__


class LocustFeed:
    """Feeds one Locust environment's statistics from batches of request rows."""

    def __init__(self, environment: Any, sizes: dict[str, int]) -> None:
        self.environment = environment
        self.sizes = sizes
        """Message size of each client (Locust's response length)."""

    def digest(self, rows: Sequence[tuple]) -> Callable[[], None] | None:
        """The rows' statistics (call it in any thread); returns what adds them to Locust's, to be called in the
        event loop's thread (None for no rows)."""
        if not rows:
            return None
        clients = {row[CLIENT] for row in rows}
        parts = [(client, self._entry(client, rows if len(clients) == 1 else [r for r in rows if r[CLIENT] == client]))
                 for client in sorted(clients)]
        return lambda: self._add(parts)

    def _entry(self, client: str, rows: Sequence[tuple]) -> tuple[StatsEntry, list[list]]:
        """The client's rows as a detached entry, and its failures: [SendFailure, count, first, last seen]."""
        n = len(rows)
        intended = np.fromiter((r[INTENDED] for r in rows), np.int64, n)
        end = np.fromiter((r[END] for r in rows), np.int64, n)
        latency = (end - intended) / NS_PER_MS
        entry = StatsEntry(self.environment.stats, client, REQUEST_TYPE)
        entry.num_requests = n
        entry.total_response_time = float(latency.sum())
        entry.min_response_time, entry.max_response_time = float(latency.min()), float(latency.max())
        entry.response_times = defaultdict(int, Counter(map(locust_stats.bucket_response_time, latency.tolist())))
        entry.num_reqs_per_sec = _per_second(end)
        entry.total_content_length = n * self.sizes.get(client, 0)
        entry.start_time = int(end.min()) / NS_PER_S
        entry.last_request_timestamp = int(end.max()) / NS_PER_S
        failed = [i for i, r in enumerate(rows) if r[OUTCOME] != SEND_OK]
        failures: list[list] = []
        if failed:
            entry.num_failures = len(failed)
            entry.num_fail_per_sec = _per_second(end[failed])
            kinds: dict[tuple[str, int | None], list] = {}
            for i in failed:
                row = rows[i]
                at = row[END] / NS_PER_S
                kind = kinds.get((row[OUTCOME], row[CODE]))
                if kind is None:
                    kinds[(row[OUTCOME], row[CODE])] = [SendFailure(row[OUTCOME], row[CODE], row[REMARK]), 1, at, at]
                else:
                    kind[1] += 1
                    kind[2], kind[3] = min(kind[2], at), max(kind[3], at)
            failures = list(kinds.values())
        return entry, failures

    def _add(self, parts: list[tuple[str, tuple[StatsEntry, list[list]]]]) -> None:
        stats = self.environment.stats
        for client, (entry, failures) in parts:
            stats.get(client, REQUEST_TYPE).extend(entry)
            stats.total.extend(entry)
            for failure, count, first, last in failures:
                key = StatsError.create_key(REQUEST_TYPE, client, failure)
                known = stats.errors.get(key)
                if known is None:
                    stats.errors[key] = StatsError(REQUEST_TYPE, client, failure, count, first, last)
                else:
                    known.occurrences += count
                    known.first_seen = first if known.first_seen is None else min(known.first_seen, first)
                    known.last_seen = last if known.last_seen is None else max(known.last_seen, last)


def _per_second(end_ns: np.ndarray) -> defaultdict[int, int]:
    seconds, counts = np.unique(end_ns // NS_PER_S, return_counts=True)
    return defaultdict(int, zip(seconds.tolist(), counts.tolist(), strict=True))

"""LocustFeed: a batch of request rows gives Locust's statistics what one `request` event per send gave them (the
same counts, failures, response time buckets, sums and error table), in the second each send completed."""
from __future__ import annotations

from locust import stats as locust_stats
from locust.env import Environment
from locust.stats import RequestStats, StatsError

import pytest

from loads.locust_feed import REQUEST_TYPE, LocustFeed, SendFailure

S = 1_000_000_000
MS = 1_000_000
T0 = 1_700_000_000 * S
SIZES = {"flood": 128, "probe": 4000}


def row(client: str, seq: int, end: int, latency_ms: float, outcome: str = "SEND_OK", code: int | None = 0,
        remark: str | None = None) -> tuple:
    intended = end - int(latency_ms * MS)
    return (client, seq, f"MSG{seq}", intended, intended, end, outcome, code, remark, "broker-a", 0, seq, 1, False)


ROWS = [
    row("flood", 0, T0 + 100 * MS, 3.4),
    row("flood", 1, T0 + 200 * MS, 99.6),
    row("flood", 2, T0 + 1200 * MS, 147.0),
    row("flood", 3, T0 + 1300 * MS, 3432.0, "FLUSH_SLAVE_TIMEOUT", 0),
    row("flood", 4, T0 + 2100 * MS, 58760.0, "RemotingTooMuchRequestException", None, "sendDefaultImpl call timeout"),
    row("flood", 5, T0 + 2200 * MS, 3000.0, "RemotingTooMuchRequestException", None, "sendDefaultImpl call timeout"),
    row("probe", 6, T0 + 2300 * MS, 12.0, "SLAVE_NOT_AVAILABLE", 0),
    row("probe", 7, T0 + 2400 * MS, 0.2),
]


def one_event_per_send(rows: list[tuple]) -> RequestStats:
    """What Locust's own request listener made of one event per send."""
    stats = RequestStats()
    for client, _, _, intended, _, end, outcome, code, remark, *_ in rows:
        stats.log_request(REQUEST_TYPE, client, (end - intended) / MS, SIZES[client])
        if outcome != "SEND_OK":
            stats.log_error(REQUEST_TYPE, client, SendFailure(outcome, code, remark))
    return stats


def fed(rows: list[tuple], batches: int = 1) -> RequestStats:
    env = Environment()
    feed = LocustFeed(env, SIZES)
    for i in range(batches):
        apply = feed.digest(rows[i::batches])
        apply()
    return env.stats


@pytest.mark.parametrize("batches", [1, 3])
def test_rows_give_locust_what_one_event_per_send_gave(batches):
    want, got = one_event_per_send(ROWS), fed(ROWS, batches)
    for key in [*want.entries, None]:
        w, g = (want.total, got.total) if key is None else (want.entries[key], got.entries[key])
        assert (g.num_requests, g.num_failures, g.total_content_length) == \
               (w.num_requests, w.num_failures, w.total_content_length)
        assert dict(g.response_times) == dict(w.response_times)
        assert (g.min_response_time, g.max_response_time) == (w.min_response_time, w.max_response_time)
        assert g.total_response_time == pytest.approx(w.total_response_time)
        assert g.median_response_time == w.median_response_time
        assert g.get_response_time_percentile(0.99) == w.get_response_time_percentile(0.99)
    assert {k: e.occurrences for k, e in got.errors.items()} == {k: e.occurrences for k, e in want.errors.items()}
    assert sorted(StatsError.parse_error(e.error) for e in got.errors.values()) == [
        "FLUSH_SLAVE_TIMEOUT(0)", "RemotingTooMuchRequestException", "SLAVE_NOT_AVAILABLE(0)"]


def test_a_send_counts_in_the_second_it_completed():
    stats = fed(ROWS)
    flood = stats.entries[("flood", REQUEST_TYPE)]
    second = T0 // S
    assert dict(flood.num_reqs_per_sec) == {second: 2, second + 1: 2, second + 2: 2}
    assert dict(flood.num_fail_per_sec) == {second + 1: 1, second + 2: 2}
    assert stats.total.last_request_timestamp == (T0 + 2400 * MS) / S
    assert flood.start_time == (T0 + 100 * MS) / S
    timeout = next(e for e in stats.errors.values() if e.error.outcome == "RemotingTooMuchRequestException")
    assert (timeout.first_seen, timeout.last_seen) == ((T0 + 2100 * MS) / S, (T0 + 2200 * MS) / S)


def test_a_bucketing_the_locustfile_installs_applies(monkeypatch):
    monkeypatch.setattr(locust_stats, "bucket_response_time", lambda rt: 7)
    assert dict(fed(ROWS).total.response_times) == {7: len(ROWS)}


def test_no_rows_no_change():
    assert LocustFeed(Environment(), SIZES).digest([]) is None

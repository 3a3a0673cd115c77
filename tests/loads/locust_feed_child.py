"""Child of test_locust_feed.py (Locust monkey-patches gevent into the process that imports it, so it is imported
here, never in the test process): prints, as JSON, Locust's statistics from the rows of `ROWS` fed in 1 and in 3
batches, from one `request` event per send as Locust's own listener logged them, and with a bucketing a locustfile
installed."""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from locust import stats as locust_stats  # noqa: E402
from locust.env import Environment  # noqa: E402
from locust.stats import StatsError  # noqa: E402

from loads.locust_feed import REQUEST_TYPE, LocustFeed, SendFailure  # noqa: E402

S = 1_000_000_000
MS = 1_000_000
T0 = 1_700_000_000 * S
SIZES = {"flood": 128, "probe": 4000}


def row(client: str, seq: int, end: int, latency_ms: float, outcome: str = "SEND_OK", code: int | None = 0,
        remark: str | None = None) -> tuple:
    intended = end - int(latency_ms * MS)
    return (client, seq, f"MSG{seq}", intended, intended, end, outcome, code, remark, "broker-a", 0, seq, 1, False)


TIMEOUT = ("RemotingTooMuchRequestException", None, "sendDefaultImpl call timeout")
ROWS = [
    row("flood", 0, T0 + 100 * MS, 3.4),
    row("flood", 1, T0 + 200 * MS, 99.6),
    row("flood", 2, T0 + 1200 * MS, 147.0),
    row("flood", 3, T0 + 1300 * MS, 3432.0, "FLUSH_SLAVE_TIMEOUT", 0),
    row("flood", 4, T0 + 2100 * MS, 58760.0, *TIMEOUT),
    row("flood", 5, T0 + 2200 * MS, 3000.0, *TIMEOUT),
    row("probe", 6, T0 + 2300 * MS, 12.0, "SLAVE_NOT_AVAILABLE", 0),
    row("probe", 7, T0 + 2400 * MS, 0.2),
]


def one_event_per_send(env: Environment) -> None:
    """What Locust's own request listener made of one event per send."""
    for client, _, _, intended, _, end, outcome, code, remark, *_ in ROWS:
        env.events.request.fire(request_type=REQUEST_TYPE, name=client, response_time=(end - intended) / MS,
                                response_length=SIZES[client], response=None, context={},
                                exception=None if outcome == "SEND_OK" else SendFailure(outcome, code, remark))


def fed(env: Environment, batches: int) -> None:
    feed = LocustFeed(env, SIZES)
    for i in range(batches):
        feed.digest(ROWS[i::batches])()


def figures(env: Environment) -> dict:
    stats = env.stats
    entries = {name: stats.entries[(name, REQUEST_TYPE)] for name in SIZES}
    entries["Aggregated"] = stats.total
    return {
        "entries": {name: {
            "num_requests": e.num_requests, "num_failures": e.num_failures,
            "total_content_length": e.total_content_length, "total_response_time": e.total_response_time,
            "min_response_time": e.min_response_time, "max_response_time": e.max_response_time,
            "response_times": sorted(e.response_times.items()), "median": e.median_response_time,
            "p99": e.get_response_time_percentile(0.99), "reqs_per_sec": sorted(e.num_reqs_per_sec.items()),
            "fail_per_sec": sorted(e.num_fail_per_sec.items()), "start_time": e.start_time,
            "last_request_timestamp": e.last_request_timestamp} for name, e in entries.items()},
        "errors": sorted([StatsError.parse_error(e.error), e.name, e.occurrences, e.first_seen, e.last_seen]
                         for e in stats.errors.values()),
    }


def environment() -> Environment:
    env = Environment()
    env.create_local_runner()  # its listener logs the request events into env.stats, as in a load
    return env


def main() -> None:
    report = {}
    env = environment()
    one_event_per_send(env)
    report["events"] = figures(env)
    for batches in (1, 3):
        env = environment()
        fed(env, batches)
        report[f"fed_{batches}"] = figures(env)
    locust_stats.bucket_response_time = lambda response_time: 7  # a locustfile's own bucketing
    env = environment()
    fed(env, 1)
    report["fed_custom_buckets"] = figures(env)
    report["digest_of_no_rows"] = repr(LocustFeed(env, SIZES).digest([]))
    report["t0_s"], report["rows"] = T0 // S, len(ROWS)
    print(json.dumps(report))


if __name__ == "__main__":
    main()

"""LocustFeed: a batch of request rows gives Locust's statistics what one `request` event per send gave them (the
same counts, failures, response time buckets, sums, percentiles and error table), each send in the second it
completed. Locust runs in a child interpreter (locust_feed_child.py): importing it here would monkey-patch gevent
into every other test of the session."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

CHILD = Path(__file__).with_name("locust_feed_child.py")
REPO = Path(__file__).resolve().parents[2]
SAME_AS_EVENTS = ("num_requests", "num_failures", "total_content_length", "min_response_time", "max_response_time",
                  "response_times", "median", "p99")


@pytest.fixture(scope="module")
def report() -> dict:
    done = subprocess.run([sys.executable, str(CHILD)], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("batches", [1, 3])
def test_rows_give_locust_what_one_event_per_send_gave(report, batches):
    want, got = report["events"], report[f"fed_{batches}"]
    assert set(got["entries"]) == {"flood", "probe", "Aggregated"}
    for name, entry in got["entries"].items():
        assert {k: entry[k] for k in SAME_AS_EVENTS} == {k: want["entries"][name][k] for k in SAME_AS_EVENTS}, name
        assert entry["total_response_time"] == pytest.approx(want["entries"][name]["total_response_time"])
    assert [e[:3] for e in got["errors"]] == [e[:3] for e in want["errors"]] == [
        ["FLUSH_SLAVE_TIMEOUT(0)", "flood", 1], ["RemotingTooMuchRequestException", "flood", 2],
        ["SLAVE_NOT_AVAILABLE(0)", "probe", 1]]


def test_a_send_counts_in_the_second_it_completed(report):
    t0 = report["t0_s"]
    flood = report["fed_1"]["entries"]["flood"]
    assert flood["reqs_per_sec"] == [[t0, 2], [t0 + 1, 2], [t0 + 2, 2]]
    assert flood["fail_per_sec"] == [[t0 + 1, 1], [t0 + 2, 2]]
    assert flood["start_time"] == t0 + 0.1
    assert report["fed_1"]["entries"]["Aggregated"]["last_request_timestamp"] == t0 + 2.4
    timeouts = next(e for e in report["fed_3"]["errors"] if e[0] == "RemotingTooMuchRequestException")
    assert timeouts[3:] == [t0 + 2.1, t0 + 2.2]  # first and last seen, across batches


def test_a_bucketing_the_locustfile_installs_applies(report):
    assert report["fed_custom_buckets"]["entries"]["Aggregated"]["response_times"] == [[7, report["rows"]]]


def test_no_rows_give_nothing_to_add(report):
    assert report["digest_of_no_rows"] == "None"

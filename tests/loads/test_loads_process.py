"""LoadProcess end to end: Locust in a child process, the real remoting Producer, real sockets to a scripted broker,
rows in Parquet. Records equal requests (every send fired has exactly one row, also when the run is stopped by
SIGTERM or SIGINT, by the harness going away, or by a drain timeout), phases and rates reach the rows by intended time,
outcomes and Locust's own statistics agree with the rows."""
from __future__ import annotations

import os
import signal
import socket
from pathlib import Path

import pytest
from loads_support import assert_contiguous_seqs, read_rows, rows_by_key
from scripted_broker import ScriptedBroker
from waiting import poll

from loads.process import LoadError, LoadProcess
from loads.spec import SpecError

S = 1_000_000_000


def spec_of(broker, **extra):
    return {"topic": "LoadTopic", "namesrv": broker.addr, **extra}


def test_records_equal_requests_and_phases_follow_intended_time(broker, run_dir, start_load):
    spec = spec_of(broker, model="open", rate=200, phases=[{"name": "warmup"}, {"name": "fault", "rate": 600}],
                   clients=[{"name": "flood", "users": 16, "tags": "TagA", "keys": ["extra"]},
                            {"name": "probe", "model": "closed", "users": 1, "think_time_s": 0.05,
                             "send_timeout_ms": 30000}])
    load = start_load(spec)
    poll(lambda: load.stats()["rows_written"] > 0, 10, "the first rows on disk")
    # a schedule never fires ahead of itself: 240 sends at 200/s (+ the probe's ~20/s) mean more than 1 s of warmup
    poll(lambda: load.stats()["fired"] >= 240, 20, "1 s of the warmup's schedule")
    change = load.set_phase("fault")  # the spec's rate for the phase: 600/s
    assert change["phase"] == "fault" and change["target_rate"] == pytest.approx(600)
    fired_at_change = load.stats()["fired"]
    # likewise 960 more sends at 600/s (+ ~20/s) mean more than 1.5 s of the fault phase's schedule
    live = poll(lambda: (lambda st: st if st["fired"] >= fired_at_change + 960 and st["phase"] == "fault"
                             and st["p99_ms"] is not None else None)(load.stats()), 30, "1.5 s of the fault phase")
    assert live["phase"] == "fault" and live["outcomes"]["SEND_OK"] > 0 and live["p99_ms"] is not None
    result = load.stop()

    assert result["reason"] == "stop"
    rows = rows_by_key(run_dir)
    assert set(rows) == set(broker.keys()), "rows and the sends the broker got differ"
    assert len(rows) == result["result"]["fired"] == result["result"]["rows"]
    assert assert_contiguous_seqs(read_rows(run_dir)) == {"w0": len(rows)}
    assert {r["outcome"] for r in rows.values()} == {"SEND_OK"}
    assert result["result"]["locust"] == {"requests": len(rows), "failures": 0, "errors": {}}

    at = change["at_ns"]
    for r in rows.values():
        assert r["phase"] == ("warmup" if r["intended_ns"] < at else "fault"), r
        assert r["latency_ms"] == pytest.approx((r["end_ns"] - r["intended_ns"]) / 1e6)
        assert r["service_ms"] == pytest.approx((r["end_ns"] - r["start_ns"]) / 1e6)
        assert r["msg_id"] and r["broker"] == "broker-a" and r["attempts"] == 1 and r["queue_offset"] >= 0
    flood = [r for r in rows.values() if r["client"] == "flood"]
    probe = [r for r in rows.values() if r["client"] == "probe"]
    assert probe and all(r["intended_ns"] == r["start_ns"] for r in probe)  # closed: intended = actual start
    # the open client's schedule: 200/s before the change, 600/s after (1 s windows away from the edges)
    before = sum(1 for r in flood if at - 1 * S <= r["intended_ns"] < at)
    after = sum(1 for r in flood if at + S // 2 <= r["intended_ns"] < at + 3 * S // 2)
    assert before == pytest.approx(200, rel=0.1)
    assert after == pytest.approx(600, rel=0.1)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_signal_midway_leaves_every_completed_request_in_readable_parts(broker, run_dir, start_load, sig):
    load = start_load(spec_of(broker, model="open", rate=500, clients=[{"name": "flood", "users": 32}]))
    poll(lambda: load.stats()["rows_written"] > 200, 10, "rows on disk")
    os.kill(load.pids[0], sig)
    poll(lambda: load.master.poll() is not None, 30, f"the load process to exit after {sig.name}")
    result = load.stop()
    assert result["reason"] == sig.name and load.master.returncode == 0
    table = read_rows(run_dir)
    n = assert_contiguous_seqs(table)["w0"]
    assert n == result["result"]["fired"] and set(rows_by_key(run_dir)) == set(broker.keys())
    assert not list((run_dir / "requests").glob(".*")), "a temporary part file was left behind"


def test_harness_going_away_drains_the_load(broker, run_dir, start_load):
    load = start_load(spec_of(broker, model="closed", users=4, clients=[{"name": "flood"}]))
    poll(lambda: load.stats()["rows_written"] > 0, 10, "rows on disk")
    # what the children read lies in the run directory, so a harness killed by SIGKILL leaves nothing elsewhere
    args = Path(f"/proc/{load.master.pid}/cmdline").read_bytes().split(b"\0")
    spec_file = Path(args[args.index(b"--spec") + 1].decode())
    assert spec_file.parent == run_dir / "logs" / "load" and spec_file.is_file()
    load.master.stdin.close()  # what the child sees when the harness process dies
    poll(lambda: load.master.poll() is not None, 30, "the load process to exit")
    assert load.stop()["reason"] == "control pipe closed"
    assert set(rows_by_key(run_dir)) == set(broker.keys())
    assert_contiguous_seqs(read_rows(run_dir))


def test_sends_in_flight_past_the_drain_timeout_are_recorded_as_abandoned(broker, run_dir, start_load):
    load = start_load(spec_of(broker, model="closed", users=4, drain_timeout_s=1.0,
                              clients=[{"name": "flood", "send_timeout_ms": 20000}]))
    poll(lambda: load.stats()["rows_written"] > 0, 10, "rows on disk")
    stall_start, _ = broker.stall(60)  # every send from now on hangs
    poll(lambda: sum(r.recv_ns >= stall_start for r in broker.received) == 4, 10,
             "all four users stuck in a send")
    result = load.stop()
    rows = rows_by_key(run_dir)
    abandoned = [r for r in rows.values() if r["outcome"] == "MQClientException"]
    assert len(abandoned) == 4
    assert all("abandoned" in r["remark"] and r["msg_id"] for r in abandoned)
    assert len(rows) == result["result"]["fired"]
    assert_contiguous_seqs(read_rows(run_dir))


def test_broker_rejections_become_rows_and_locust_failures_named_by_outcome(run_dir, start_load):
    remark = "[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: 206ms"
    with ScriptedBroker(send_code=2, send_remark=remark) as busy:
        load = start_load(spec_of(busy, model="closed", users=2, clients=[{"name": "flood"}]))
        poll(lambda: load.stats()["rows_written"] >= 20, 10, "rows on disk")
        result = load.stop()
    rows = list(rows_by_key(run_dir).values())
    assert {(r["outcome"], r["response_code"], r["remark"]) for r in rows} == {("MQBrokerException", 2, remark)}
    assert all(r["attempts"] == 1 for r in rows)  # java-4.9.1 does not retry code 2 in a sync send
    assert result["result"]["locust"] == {"requests": len(rows), "failures": len(rows),
                                          "errors": {"MQBrokerException(2)": len(rows)}}
    assert result["stats"]["outcomes"] == {"MQBrokerException": len(rows)}


def test_closed_users_whose_sends_fail_at_once_still_let_the_load_answer_and_stop(run_dir, start_load):
    """A closed user without think time sends again within its task, without Locust's wait in between: sends
    that fail fast (no name server listens, every connection is refused) must still let the event loop run, or
    the process would push no figures and never read its control pipe again."""
    with socket.socket() as s:  # a port on which nothing listens
        s.bind(("127.0.0.1", 0))
        dead = f"127.0.0.1:{s.getsockname()[1]}"
    load = start_load({"topic": "LoadTopic", "namesrv": dead, "model": "closed", "users": 4,
                       "clients": [{"name": "flood"}]})
    poll(lambda: load.stats()["rows_written"] >= 20, 10, "rows of failed sends on disk")  # figures pushed
    result = load.stop()  # answered on the control pipe
    assert result["reason"] == "stop"
    rows = list(rows_by_key(run_dir).values())
    assert len(rows) == result["result"]["fired"] and rows
    assert {r["outcome"] for r in rows} <= {"MQClientException", "RemotingConnectException"}, \
        {r["outcome"] for r in rows}


def test_bad_spec_is_refused_before_anything_starts(tmp_path):
    with pytest.raises(SpecError, match=r"^load spec: model: Input should be 'open' or 'closed'$"):
        LoadProcess({"topic": "T", "namesrv": "127.0.0.1:1", "model": "bursty"}, tmp_path / "run", "r")
    assert not (tmp_path / "run").exists()
    load = LoadProcess({"topic": "T", "namesrv": "127.0.0.1:1", "rate": 1}, tmp_path / "run", "r")
    with pytest.raises(LoadError, match="not running"):
        load.set_phase("x")

"""The consumer processes (`python -m loads.consumer`, one per instance) through `ConsumerFleet`, with a stand-in
push consumer (`consumer_fake`) that commits an offset only after its listener returned: rows == deliveries after
SIGTERM; after SIGKILL the journal's salvage loses no delivery whose offset was committed and the restarted process
shows the redeliveries as duplicates; a stuck share blocks consume threads until a release; the control file turns
it on and off. The same process against a real broker is in test_consumer_broker.py."""
from __future__ import annotations

import json
import signal
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from consumer_fake import committed
from waiting import poll

from analysis.contract import CONSUME_SCHEMA
from loads.consume_recorder import journal_path, read_journal
from loads.consumer_spec import parse_groups
from loads.consumers import ConsumerFleet

RUN = "run-1"
HERE = Path(__file__).parent


@pytest.fixture
def fake_env(tmp_path, monkeypatch):
    d = tmp_path / "broker"
    d.mkdir()
    monkeypatch.setenv("FAKE_CONSUMER_DIR", str(d))
    monkeypatch.setenv("FAKE_RUN_ID", RUN)
    monkeypatch.setenv("PYTHONPATH", f"{HERE}:{Path.cwd()}")
    return d


@pytest.fixture
def fleet_of(tmp_path, fake_env):
    fleets: list[ConsumerFleet] = []

    def make(groups, **kw):
        fleet = ConsumerFleet(parse_groups(groups), "fake:0", "ChaosTopic", tmp_path / "run", RUN,
                              factory="consumer_fake:FakePushConsumer", **kw)
        fleets.append(fleet)
        fleet.start()
        return fleet

    yield make
    for f in fleets:
        f.kill_all()


def rows_of(run_dir: Path) -> list[dict]:
    parts = sorted((run_dir / "consumes").glob("part-*.parquet"))
    if not parts:
        return []
    table = pa.concat_tables([pq.read_table(p, schema=CONSUME_SCHEMA) for p in parts])
    return table.to_pylist()


def open_in_journal(run_dir: Path, worker: str) -> int:
    return sum(1 for r in read_journal(journal_path(run_dir, worker)).values() if r["done_ns"] is None)


def test_sigterm_every_delivery_recorded_and_stuck_rows_abandoned(fleet_of, fake_env, monkeypatch, tmp_path):
    monkeypatch.setenv("FAKE_MESSAGES", "150")
    fleet = fleet_of([{"name": "fast", "threads": 4},
                      {"name": "held", "threads": 2, "stuck": {"share": 1.0, "hold_s": 600}}], drain_s=0.5)
    run = tmp_path / "run"
    assert set(fleet.workers) == {"fast.c0", "held.c0"} and all(w.client_id for w in fleet.workers.values())
    poll(lambda: len(committed(fake_env, "fast.c0")) == 150, 30, "150 deliveries committed")
    poll(lambda: open_in_journal(run, "held.c0") == 2, 30, "both threads of `held` blocked")
    result = fleet.stop()
    assert fleet.stop() == result  # idempotent
    assert {w.name: w.proc.returncode for w in fleet.history} == {"fast.c0": 0, "held.c0": 0}
    assert fleet.workers["held.c0"].result["abandoned"] == 2

    rows = rows_of(run)
    assert result == {"fast": 150, "held": 2} == dict(Counter(r["group"] for r in rows))
    fast = [r for r in rows if r["group"] == "fast"]
    assert sorted(r["queue_offset"] for r in fast) == list(range(150))
    r0 = min(fast, key=lambda r: r["queue_offset"])
    assert (r0["run_id"], r0["worker"], r0["consumer"], r0["topic"], r0["pulled_topic"], r0["key"], r0["msg_id"],
            r0["broker"], r0["broker_id"], r0["queue_id"], r0["result"], r0["body_size"]) == (
        RUN, "fast.c0", "127.0.0.1@fast.c0", "ChaosTopic", "ChaosTopic", f"{RUN}:w0:0", "U00000000", "broker-a",
        0, 0, "CONSUME_SUCCESS", 16)
    assert all(r["pulled_ns"] <= r["delivered_ns"] <= r["done_ns"] for r in fast)
    held = [r for r in rows if r["group"] == "held"]
    assert {(r["result"], r["done_ns"]) for r in held} == {("ABANDONED", None)}
    assert fleet.salvage("held.c0") == 0  # every journal row is in a part already


def test_sigkill_salvage_loses_no_committed_delivery_and_restart_shows_duplicates(fleet_of, fake_env, tmp_path):
    fleet = fleet_of([{"name": "g", "threads": 8, "stuck": {"share": 0.01, "hold_s": 600}}], drain_s=0.5)
    run = tmp_path / "run"
    poll(lambda: open_in_journal(run, "g.c0") >= 1 and len(committed(fake_env, "g.c0")) >= 100, 60,
             "a blocked thread and 100 commits")
    fleet.kill("g.c0", signal.SIGKILL)  # waits and salvages
    dead = fleet.worker("g.c0")
    assert dead.proc.returncode == -signal.SIGKILL and dead.salvaged > 0
    rows = rows_of(run)
    done = {r["queue_offset"] for r in rows if r["done_ns"] is not None}
    assert set(committed(fake_env, "g.c0")) <= done, "a committed delivery has no row"
    assert len(rows) == len(read_journal(journal_path(run, "g.c0"))), "rows != journaled deliveries"
    blocked = {r["queue_offset"] for r in rows if r["result"] == "ABANDONED"}
    assert blocked and not blocked & done

    again = fleet.restart("g.c0")
    assert again.name == "g.c0.r1" and again.index == 0 and fleet.pids("g") == [again.pid]
    fleet.clear_stuck("g")
    poll(lambda: blocked <= {r["queue_offset"] for r in rows_of(run) if r["worker"] == "g.c0.r1"}, 30,
             "the blocked offsets delivered again to the restarted process")
    fleet.stop()
    rows = rows_of(run)
    by_offset = Counter(r["queue_offset"] for r in rows)
    assert all(by_offset[o] >= 2 for o in blocked), "redeliveries are rows of their own"
    assert {r["worker"] for r in rows} == {"g.c0", "g.c0.r1"}


def test_control_file_turns_stuck_on_and_release_frees_the_threads(fleet_of, fake_env, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_INTERVAL_S", "0.01")
    fleet = fleet_of([{"name": "g", "threads": 3}], drain_s=5)
    run = tmp_path / "run"
    poll(lambda: len(committed(fake_env, "g.c0")) >= 20, 30, "deliveries before the fault")
    assert open_in_journal(run, "g.c0") <= 3
    fleet.set_stuck("g", share=1.0, hold_s=600)
    poll(lambda: open_in_journal(run, "g.c0") == 3, 30, "all 3 consume threads blocked")
    status = Path(f"{fleet.workers['g.c0'].control_path}.status")
    poll(lambda: json.loads(status.read_text()).get("blocked") == 3, 30, "the process reports 3 blocked threads")
    n = len(committed(fake_env, "g.c0"))
    poll(lambda: open_in_journal(run, "g.c0") == 3 and len(committed(fake_env, "g.c0")) == n, 5,
             "no commit while every thread is blocked")
    fleet.clear_stuck("g", release=True)
    poll(lambda: len(committed(fake_env, "g.c0")) >= n + 20, 30, "consuming again after the release")
    assert json.loads(status.read_text())["released"] >= 3
    result = fleet.stop()
    rows = rows_of(run)
    assert result == {"g": len(rows)} and {r["result"] for r in rows} == {"CONSUME_SUCCESS"}
    assert all(r["done_ns"] is not None for r in rows)


def test_a_consumer_whose_harness_is_gone_still_ends(fake_env, tmp_path, monkeypatch):
    """The harness ended at once (a second Ctrl-C) and closed its end of the consumer's stdout: the consumer, told to
    stop with listeners still held, cannot say "stopped" any more and must end anyway with 0. It raised
    BrokenPipeError instead (exit 1 here); with the real push consumer the interpreter's exit then joined the held
    consume threads and the orphan never ended (seen on a CI run ended with two signals)."""
    import subprocess
    import sys

    from loads.consumer_spec import GroupSpec

    monkeypatch.setenv("FAKE_MESSAGES", "10")
    group = GroupSpec.model_validate({"name": "held", "threads": 2, "stuck": {"share": 1.0, "hold_s": 600}})
    run = tmp_path / "run"
    argv = [sys.executable, "-m", "loads.consumer", "--spec", group.model_dump_json(), "--run-dir", str(run),
            "--run-id", RUN, "--worker", "held.c0", "--namesrv", "fake:0", "--topic", "ChaosTopic", "--drain-s",
            "0.5", "--factory", "consumer_fake:FakePushConsumer"]
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        assert proc.stdout is not None
        assert json.loads(proc.stdout.readline())["type"] == "ready"
        poll(lambda: open_in_journal(run, "held.c0") == 2, 30, "both threads of `held` blocked")
        proc.stdout.close()  # the harness is gone
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=120) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()

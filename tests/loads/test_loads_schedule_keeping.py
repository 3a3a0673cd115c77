"""An open-model load keeps its schedule or counts where it did not (`loads.keeper`), end to end: Locust in a child
process, the real Producer, a scripted broker that stalls every answer for 2 s in a 1000 sends/s run.

- With a lag bound (`max_lag_s`) shorter than the stall and no spare senders, the slots the busy users could not
  start in time are dropped: never sent, counted in `schedule/` under the phase of their intended time, and no row
  starts later than the bound after its intended time (nothing slides into a later phase). Rows plus dropped slots
  account for the whole schedule.
- With spare senders (`max_users` well above the stall's need), every slot starts on time and nothing is dropped.
- A load the machine cannot deliver at all (far more than one process sends) drops slots and says so in its live
  figures (`dropped`, `lag_ms`)."""
from __future__ import annotations

import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from loads_support import rows_by_key
from waiting import poll

S = 1_000_000_000
RATE = 1000
STALL_S = 2.0
USERS = 16


def schedule_rows(run_dir) -> list[dict]:
    parts = sorted((run_dir / "schedule").glob("part-*.parquet"))
    return pa.concat_tables([pq.read_table(p) for p in parts]).to_pylist() if parts else []


def stalled_run(broker, start_load, run_dir, spec):
    """Steady load, a phase change to `stall` when the broker stalls, `after` once it answers again, stop."""
    load = start_load(spec, directory=run_dir)
    poll(lambda: load.stats()["rows_written"] >= RATE, 15, "a second of steady load")
    change = load.set_phase("stall")
    broker.stall(STALL_S)
    stall_start, stall_end = broker.stalls[-1]
    poll(lambda: time.time_ns() > stall_end + S, 10, "the stall and a second after it")
    after = load.set_phase("after")
    poll(lambda: time.time_ns() > after["at_ns"] + S, 10, "a second of the after phase")
    result = load.stop()
    return load, result, change["at_ns"], after["at_ns"], stall_start, stall_end


def spec_of(broker, **extra):
    return {"topic": "LoadTopic", "namesrv": broker.addr, "model": "open", "rate": RATE,
            "phases": [{"name": "steady"}, {"name": "stall"}, {"name": "after"}],
            "clients": [{"name": "flood", "users": USERS, "send_timeout_ms": 10000, **extra.pop("client", {})}],
            **extra}


def test_slots_later_than_the_bound_are_dropped_and_counted_in_their_phase(broker, start_load, tmp_path):
    run_dir = tmp_path / "bounded"
    load, result, stall_at, after_at, stall_start, stall_end = stalled_run(
        broker, start_load, run_dir, spec_of(broker, max_lag_s=0.5))
    rows = list(rows_by_key(run_dir).values())
    drops = schedule_rows(run_dir)
    late = [d for d in drops if d["reason"] == "late"]
    assert late, "slots of the stall were not dropped"
    bounds = {"steady": (0, stall_at), "stall": (stall_at, after_at), "after": (after_at, 1 << 62)}
    for d in late:  # counted under the phase of their intended time (a busy machine may drop some outside the stall)
        assert d["client"] == "flood" and d["worker"] == "w0"
        lo, hi = bounds[d["phase"]]
        assert lo <= d["first_intended_ns"] <= d["last_intended_ns"] < hi, d
    assert sum(d["dropped"] for d in late if d["phase"] == "stall") >= RATE * (STALL_S - 0.5) * 0.9
    for r in rows:  # every send started within the bound of its intended time, and carries that time's phase
        assert r["start_ns"] - r["intended_ns"] <= 0.5 * S + 50_000_000, r
        expected = "steady" if r["intended_ns"] < stall_at else "stall" if r["intended_ns"] < after_at else "after"
        assert r["phase"] == expected
    assert result["result"]["fired"] == len(rows)
    assert result["result"]["workers"][0]["dropped"] == sum(d["dropped"] for d in drops)
    # slots due at the stop and not yet late are counted apart, in the phase the stop came in
    assert all(d["phase"] == "after" for d in drops if d["reason"] == "stopped")
    assert load.stats()["dropped"] == sum(d["dropped"] for d in late)


def test_spare_senders_keep_the_schedule_through_the_stall(broker, start_load, tmp_path):
    run_dir = tmp_path / "spares"
    _, result, stall_at, after_at, stall_start, stall_end = stalled_run(
        broker, start_load, run_dir, spec_of(broker, max_lag_s=0.5, client={"max_users": 3000}))
    rows = list(rows_by_key(run_dir).values())
    assert not [d for d in schedule_rows(run_dir) if d["reason"] == "late" and d["phase"] == "stall"]
    assert result["result"]["workers"][0]["spares_started"] >= RATE * STALL_S * 0.9
    during = [r for r in rows if stall_start + S // 10 <= r["intended_ns"] < stall_end - S // 10]
    assert len(during) == pytest.approx(RATE * (STALL_S - 0.2), rel=0.05)  # sent on schedule, each by a spare
    assert max(r["start_ns"] - r["intended_ns"] for r in during) <= 0.5 * S
    for r in during:  # each waited for the broker: the stall is in the data
        assert r["end_ns"] >= stall_end - S // 100


def test_a_rate_no_process_sends_is_dropped_and_said_live(broker, start_load, tmp_path):
    run_dir = tmp_path / "too-fast"
    load = start_load({"topic": "LoadTopic", "namesrv": broker.addr, "model": "open", "rate": 400_000,
                       "max_lag_s": 0.2, "clients": [{"name": "flood", "users": 64}]}, directory=run_dir)
    live = poll(lambda: (lambda st: st if st["dropped"] > 0 else None)(load.stats()), 20, "dropped slots")
    assert live["lag_ms"] >= 0 and live["dropped"] > 0
    load.stop()
    late = sum(d["dropped"] for d in schedule_rows(run_dir) if d["reason"] == "late")
    assert late >= live["dropped"]

"""Unit tests of the harness's small parts: units, the effective-config comparison, the timeline, runtime figures,
free ports, the load spec conversion, the run directory writer."""
from __future__ import annotations

import socket
from pathlib import Path

import pytest

from harness.backends.ports import PortPicker, is_free
from harness.collectors.broker_figures import broker_figures
from harness.rundir import RunDir
from harness.scenario import (
    Scenario,
    effective_differences,
    format_duration,
    format_size,
    load_spec,
    parse_duration,
    parse_size,
)
from harness.timeline import Clock, build_timeline

SCENARIO = {"name": "u", "load": {"model": "open", "rate": 100, "clients": [
    {"name": "flood", "users": 4}, {"name": "probe", "model": "closed", "users": 1, "timeout": "30s"}]},
    "phases": [{"name": "a", "duration": "2s"}, {"name": "b", "duration": "1500ms", "rate": 50}]}


@pytest.mark.parametrize(("text", "seconds"), [("30s", 30), ("2m", 120), ("1h", 3600), ("500ms", 0.5), ("1.5s", 1.5)])
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds
    assert parse_duration(format_duration(seconds)) == seconds


@pytest.mark.parametrize("bad", ["30", 30, "5 minutes", "-1s", "s", True, None])
def test_bad_durations(bad: object) -> None:
    with pytest.raises(ValueError, match="allowed: a number with a unit"):
        parse_duration(bad)


@pytest.mark.parametrize(("text", "n"), [("128B", 128), ("4KiB", 4096), ("64MiB", 64 << 20), ("2GiB", 2 << 30)])
def test_sizes(text: str, n: int) -> None:
    assert parse_size(text) == n
    assert format_size(n) == text


@pytest.mark.parametrize("bad", ["2GB", "64", 64, "1.5B", "MiB"])
def test_bad_sizes(bad: object) -> None:
    with pytest.raises(ValueError):
        parse_size(bad)


def test_effective_differences() -> None:
    asked = {"haSlaveFallbehindMax": 1048576, "slaveReadEnable": True, "haMaxGapNotInSync": 5}
    effective = {"haSlaveFallbehindMax": "268435456", "slaveReadEnable": "true"}
    assert effective_differences(asked, effective, {"haMaxGapNotInSync"}) == [
        "haSlaveFallbehindMax: asked 1048576, the broker has 268435456"]
    assert effective_differences(asked, effective, set())[1] == \
        "haMaxGapNotInSync: asked 5, the broker does not have this key"


def test_timeline_and_load_spec() -> None:
    s = Scenario.model_validate(SCENARIO)
    windows = build_timeline(s)
    assert [(w.name, w.start_s, w.end_s, w.rate) for w in windows] == [
        ("warmup", 0, 5, 100), ("a", 5, 7, 100), ("b", 7, 8.5, 50)]
    spec = load_spec(s, "127.0.0.1:9876")
    assert spec.initial_phase == "warmup"
    assert [c.send_timeout_ms for c in spec.clients] == [3000, 30000]
    assert spec.phase("b").rate == 50


def test_clock_waits_until_and_stops_early() -> None:
    import threading

    clock = Clock()
    ticks: list[float] = []
    assert clock.wait_until(0.3, tick=lambda: ticks.append(clock.now()), tick_s=0.05)
    assert clock.now() >= 0.3 and len(ticks) >= 3
    stop = threading.Event()
    stop.set()
    assert clock.wait_until(60, stop) is False


def test_broker_figures_from_a_recorded_table(wire_dir: Path) -> None:
    import json

    from remoting import fastjson
    frames = json.loads((wire_dir / "28_GET_BROKER_RUNTIME_INFO.json").read_text())
    body = next(f for f in frames if f["direction"] == "response")["body_text"]
    figures = broker_figures(fastjson.loads(body)["table"])
    assert figures == {"put_tps": 0.0, "commitlog_max_offset": 370, "send_queue_size": 0, "page_cache_lock_ms": 0.0}
    assert broker_figures(None) == {k: None for k in figures}
    assert broker_figures({"putTps": "  "})["put_tps"] is None


def test_port_picker_gives_free_distinct_blocks() -> None:
    picker = PortPicker(seed=7)
    listen, ha = picker.broker()
    assert ha == listen + 1 and all(is_free(p) for p in (listen - 2, listen, ha))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        assert not is_free(s.getsockname()[1])
    assert len({picker.one() for _ in range(20)} | {listen, ha}) == 22


def test_port_picker_keeps_to_its_range_and_forgets_the_oldest_past_its_memory() -> None:
    picker = PortPicker(seed=3, low=31990, high=32000, remember=4)
    pairs = [picker.block((0, 1)) for _ in range(2)]
    assert all(31990 <= p and p + 1 < 32000 for p in pairs) and len({*pairs, *(p + 1 for p in pairs)}) == 4
    with pytest.raises(OSError, match="31990-31991"):
        PortPicker(seed=3, low=31990, high=31991).block((0, 1))
    drawn = {picker.block((0,)) for _ in range(40)}  # 10 ports, 4 remembered: the oldest come back
    assert drawn <= set(range(31990, 32000)) and len(drawn) > 4


def test_run_directory_writer(tmp_path: Path) -> None:
    s = Scenario.model_validate(SCENARIO)
    rd = RunDir.create(tmp_path, s, run_id="r1")
    again = RunDir.create(tmp_path, s, run_id="r1")
    assert rd.run_id == "r1" and again.run_id == "r1-2"
    rd.event("phase_start", phase="a", index=1, duration_s=2.0, rate=100)
    with pytest.raises(ValueError, match="unknown event"):
        rd.event("no_such_event")
    with open(rd.layout.events, "a") as f:
        f.write('{"torn')
    (e,) = rd.events()
    assert e["event"] == "phase_start" and e["wall_ns"] > 0 and e["mono_ns"] > 0
    assert (rd.root / "requests").is_dir() and (rd.root / "readback").is_dir()
    assert Scenario.model_validate(__import__("yaml").safe_load(rd.layout.scenario.read_text())).name == "u"


def test_matrix_run_ids_are_safe_names(tmp_path: Path) -> None:
    """A matrix combination is named `<name>.<axis>=<value>`; its run id (a directory, cgroup and compose project
    name) keeps letters, digits, '-', '_' and '.' only, and still tells the combinations apart."""
    from harness.scenario import load_scenarios

    combos = load_scenarios(Path(__file__).resolve().parents[2] / "scenarios" / "transient-store-pool.yaml")
    ids = [RunDir.create(tmp_path, s).run_id for s in combos]
    assert [s.name for s in combos] == ["transient-store-pool.pool=on", "transient-store-pool.pool=off"]
    assert [i.split("-", 1)[1] for i in ids] == ["transient-store-pool.pool_on", "transient-store-pool.pool_off"]


def test_apache_gc_logs_are_found_by_the_pids_a_node_had(tmp_path: Path, monkeypatch) -> None:
    from harness.backends import programs

    monkeypatch.setattr(programs, "JVM_GC_LOG_DIR", str(tmp_path))
    for name in ("rmq_broker_gc_4242_2026-11-23_15-06-40.log", "rmq_srv_gc_4343_2026-11-23_15-06-37.log",
                 "rmq_broker_gc_42_2026-11-23_15-06-40.log", "rmq_broker_gc_4242_x.log.0"):
        (tmp_path / name).write_text("[safepoint] ...")
    apache = programs.Program("apache", tmp_path)
    assert [p.name for p in apache.gc_logs([4242, 4343])] == [
        "rmq_broker_gc_4242_2026-11-23_15-06-40.log", "rmq_broker_gc_4242_x.log.0",
        "rmq_srv_gc_4343_2026-11-23_15-06-37.log"]
    assert programs.Program("emulator").gc_logs([4242]) == []

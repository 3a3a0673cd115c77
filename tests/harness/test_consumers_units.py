"""Consumers in the harness, without a broker: the scenario's `consumers:` section and its one-line errors, the lag
collector's rows (fed by a fake GET_CONSUME_STATS), the progress line, and the `consumer_stuck` fault on a real
process's real control file (apply journaled with its undo, verify, revert, the undo replayed as cleanup would)."""
from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from analysis.contract import CONSUMER_LAG_SCHEMA
from faults.errors import FaultNotEffective, FaultRefused
from faults.journal import Journal
from faults.system.procs import ProcId
from faults.target import NodeTarget, StaticPids
from faults.undo import run_ops
from harness.cli import main
from harness.collectors.consumer_lag import ConsumerLagCollector, stats_rows
from harness.progress import consumer_line
from harness.scenario import load_scenarios
from loads.consumer_control import ControlFiles

SCENARIO = """\
name: cons
consumers:
  drain: 20s
  groups:
    - {name: healthy, consumers: 2}
    - {name: stuck, consumers: 1, processing: 5}
phases:
  - name: steady
    duration: 5s
  - name: stuck
    duration: 5s
    faults:
      - {kind: consumer_stuck, target: consumer:stuck, params: {share: 0.1, hold_s: 600}}
      - {kind: kill, target: healthy.c1, params: {restart_after_s: 2}}
"""


def _validate(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    path = tmp_path / "s.yaml"
    path.write_text(text, encoding="utf-8")
    code = main(["validate", str(path)])
    return code, capsys.readouterr().err.splitlines()


def test_scenario_with_consumers_resolves(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO, encoding="utf-8")
    scenario = load_scenarios(path)[0]
    resolved = scenario.resolved()
    assert resolved["consumers"]["drain"] == "20s"
    assert [g["name"] for g in resolved["consumers"]["groups"]] == ["healthy", "stuck"]
    assert scenario.consumers.workers() == ["healthy.c0", "healthy.c1", "stuck.c0"]
    assert [f.target for _, f in scenario.faults] == ["consumer:stuck", "healthy.c1"]


def test_scenario_without_consumers_resolves_as_before(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("name: plain\nphases:\n  - {name: a, duration: 1s}\n", encoding="utf-8")
    assert "consumers" not in load_scenarios(path)[0].resolved()


@pytest.mark.parametrize(("old", "new", "line", "key", "says"), [
    ("- {name: stuck, consumers: 1, processing: 5}", "- {name: healthy, consumers: 1}", 6,
     "consumers.groups[1].name", "'healthy' is used twice"),
    ("target: healthy.c1,", "target: healthy.c2,", 14, "phases[1].faults[1].target",
     "allowed: consumer:healthy, consumer:stuck, healthy.c0, healthy.c1, stuck.c0"),
    ("target: consumer:stuck,", "target: consumer:nosuch,", 13, "phases[1].faults[0].target",
     "'nosuch' is not a consumer group"),
    ("target: consumer:stuck,", "target: master,", 13, "phases[1].faults[0].target", "allowed: consumer"),
    ("drain: 20s", "drain: 20", 3, "consumers.drain", "a number with a unit"),
    ("consumers: 2}", "consumers: 2, threds: 4}", 5, "consumers.groups[0]", "threds"),
    ("consumers: 2}", "consumers: 0}", 5, "consumers.groups[0].consumers", "1"),
    ("share: 0.1,", "share: 2,", 13, "phases[1].faults[0].params.share", "1"),
])
def test_consumer_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], old: str, new: str,
                                      line: int, key: str, says: str) -> None:
    assert old in SCENARIO
    code, err = _validate(tmp_path, SCENARIO.replace(old, new, 1), capsys)
    assert code != 0
    assert len(err) == 1, err
    assert err[0].startswith(f"{tmp_path / 's.yaml'}:{line}:"), err[0]
    assert key in err[0] and says in err[0], err[0]


@dataclass(frozen=True)
class _MQ:
    topic: str
    broker_name: str
    queue_id: int


@dataclass(frozen=True)
class _OW:
    broker_offset: int
    consumer_offset: int
    last_timestamp: int


@dataclass
class _Stats:
    offsets: dict
    consume_tps: float


def test_lag_collector_writes_rows_per_group_per_queue(tmp_path: Path) -> None:
    answers = {"healthy": _Stats({_MQ("T", "broker-a", 1): _OW(10, 10, 5), _MQ("T", "broker-a", 0): _OW(7, 3, 4),
                                  _MQ("%RETRY%healthy", "broker-a", 0): _OW(2, 0, 0)}, 12.5),
               "stuck": None}

    def fetch(group: str) -> list[dict] | None:
        stats = answers[group]
        return None if stats is None else stats_rows(group, stats, 1_000)

    lag_dir = tmp_path / "metrics" / "lag"
    collector = ConsumerLagCollector("r1", lag_dir, ["healthy", "stuck"], fetch)
    assert collector.collect_once() == {"healthy": 6, "stuck": None}
    collector.stop()
    table = pq.read_table(sorted(lag_dir.glob("part-*.parquet")))
    assert table.schema.equals(CONSUMER_LAG_SCHEMA, check_metadata=False)
    rows = table.to_pylist()
    assert [(r["topic"], r["queue_id"], r["lag"]) for r in rows] == [("%RETRY%healthy", 0, 2), ("T", 0, 4),
                                                                     ("T", 1, 0)]
    assert {r["group"] for r in rows} == {"healthy"} and {r["consume_tps"] for r in rows} == {12.5}
    assert collector.lags() == {"healthy": 6, "stuck": None}


def test_progress_line() -> None:
    assert consumer_line({"tps": 120.4, "lag": 35}) == "120 consumed/s, lag 35"
    assert consumer_line({"tps": None, "lag": None}) == "- consumed/s, lag -"


@pytest.fixture
def consumer_process(tmp_path: Path):
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield proc
    proc.kill()
    proc.wait()


def _target(tmp_path: Path, proc: subprocess.Popen, role: str = "consumer") -> NodeTarget:
    control = tmp_path / "control" / "stuck.c0.json"
    return NodeTarget(name="stuck.c0", role=role, run_id="r1", pids=StaticPids([ProcId.of(proc.pid)]),
                      extras={"group": "stuck", "listeners": ControlFiles([str(control)]).to_json()})


def test_consumer_stuck_writes_the_control_file_and_reverts(tmp_path: Path, consumer_process) -> None:
    from faults.consumer_stuck import ConsumerStuck

    journal = Journal(tmp_path / "state")
    target = _target(tmp_path, consumer_process)
    fault = ConsumerStuck(target, {"share": 0.25, "hold_s": 120}, journal=journal)
    fault.apply()
    control = Path(target.extras["listeners"]["files"][0])
    assert json.loads(control.read_text())["stuck"] == {"share": 0.25, "hold_s": 120.0}
    entry = journal.get(fault.entry_id)
    assert entry is not None and not entry.done
    assert entry.undo == [{"op": "consumer_release", "listeners": {"factory": "loads.consumer_control:ControlFiles."
                                                                              "from_json", "files": [str(control)]}}]
    with pytest.raises(FaultNotEffective):  # no status yet: no thread measured blocked
        fault.verify(timeout_s=0.2)
    Path(str(control) + ".status").write_text(json.dumps({"blocked": 0}))
    with pytest.raises(FaultNotEffective):
        fault.verify(timeout_s=0.2)
    Path(str(control) + ".status").write_text(json.dumps({"blocked": 2}))
    assert fault.verify(timeout_s=2)["blocked"] == {str(control): 2}
    fault.revert()
    doc = json.loads(control.read_text())
    assert doc["stuck"] is None and doc["release"] is True
    assert journal.get(fault.entry_id).done


def test_consumer_stuck_undo_replays_without_the_fault(tmp_path: Path) -> None:
    """What `rmq-chaos cleanup` does with the journaled undo of a crashed run."""
    control = tmp_path / "control" / "g.c0.json"
    control.parent.mkdir()
    results = run_ops([{"op": "consumer_release", "listeners": ControlFiles([str(control)]).to_json()}])
    assert results == [{"op": "consumer_release", "result": "released 1 consumer(s)"}]
    assert json.loads(control.read_text())["release"] is True


def test_consumer_stuck_restored_from_the_journal_verifies_and_reverts(tmp_path: Path, consumer_process) -> None:
    """What `rmq-chaos fault verify|revert <id>` does: the fault rebuilt from its journal entry alone."""
    from faults.consumer_stuck import ConsumerStuck

    journal = Journal(tmp_path / "state")
    applied = ConsumerStuck(_target(tmp_path, consumer_process), {"share": 0.5, "hold_s": 60}, journal=journal)
    applied.apply()
    control = Path(applied.target.extras["listeners"]["files"][0])
    Path(str(control) + ".status").write_text(json.dumps({"blocked": 1}))
    restored = ConsumerStuck.restore(journal.get(applied.entry_id), journal)
    assert restored.verify(timeout_s=1)["blocked"] == {str(control): 1}
    assert restored.revert()["control"] == {str(control): None}
    assert json.loads(control.read_text())["release"] is True
    assert journal.get(applied.entry_id).done


def test_consumer_stuck_refuses_a_broker(tmp_path: Path, consumer_process) -> None:
    from faults.consumer_stuck import ConsumerStuck

    target = _target(tmp_path, consumer_process, role="master")
    fault = ConsumerStuck(target, {"share": 0.5}, journal=Journal(tmp_path / "state"))
    with pytest.raises(FaultRefused, match="allowed: consumer:<group>"):
        fault.apply()

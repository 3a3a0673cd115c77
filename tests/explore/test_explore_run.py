"""`rmq-chaos explore scenarios/explore/quick-5.1.4.yaml` as a user runs it, on the emulator: RocketMQ 5.1.4 in
controller mode with three controllers, a space whose every schedule kills the controller leader and the master in
one window (acknowledged sends lost: apache/rocketmq#7689, and with the master alone killed the slave's election
loses what the master acknowledged alone, `inSyncReplicas=1`). The first run fails the `inv-nothing-acked-lost`
invariant; shrinking (three runs allowed) keeps a schedule that still loses; `minimal.yaml` is a plain scenario file
with that invariant as its only expectation; the page lists every run; nothing of any run is left on the machine.
About 2.5 minutes (four runs of about 37 s each, with their analyses; measured 2m29s)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from harness.explore.schedule import Schedule
from harness.scenario import load_scenarios

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "harness"))  # runsupport: running rmq-chaos, proving nothing is left
from runsupport import assert_nothing_left, end_run, full_only, rmq_chaos  # noqa: E402

pytestmark = pytest.mark.long
FLAKY = ("~2.5 min, and the space is not certain to fail: on 2026-11-28 two runs of this test in a row found no loss in "
         "their two schedules (the 5.1.4 loss needs acknowledged sends past the confirm offset at the kill); in the "
         "default run again once a space that always fails replaces it")
SPACE = REPO / "scenarios" / "explore" / "quick-5.1.4.yaml"
INVARIANT = "inv-nothing-acked-lost"


@pytest.mark.parametrize("program", [pytest.param("emulator", marks=full_only(FLAKY))])
def test_explore_finds_the_loss_and_shrinks_it_to_a_minimal_scenario(tmp_path: Path, program: str) -> None:
    state, out = tmp_path / "state", tmp_path / "explore"
    proc = rmq_chaos(["explore", str(SPACE), "--out", str(out), "--program", "emulator"], state)
    try:
        assert proc.wait(900) == 1  # a failure found
        (root,) = [d for d in out.iterdir() if d.is_dir()]
        records = [json.loads(line) for line in (root / "schedules.jsonl").read_text().splitlines()]
        first = records[0]
        assert first["stage"] == "explore" and first["verdict"] == "fail" and INVARIANT in first["failed"]
        shrinking = [r for r in records if r["stage"] == "shrink"]
        assert 1 <= len(shrinking) <= 3 and all(r["step"] for r in shrinking)
        assert all((root / "runs" / r["run_id"] / "report" / "verdict.json").exists() for r in records)

        summary = json.loads((root / "summary.json").read_text())
        assert summary["failures"] == 1 and summary["first_failure_run"] == 1 and summary["shrink_runs"] >= 1
        accepted = [r for r in shrinking if r["verdict"] == "fail"]
        assert accepted, "no shrinking step kept the failure"
        smallest = Schedule.from_json(accepted[-1]["schedule"])
        assert smallest.size() < Schedule.from_json(first["schedule"]).size() and smallest.fault_count <= 2

        (minimal,) = load_scenarios(root / "minimal.yaml")  # what `rmq-chaos run` takes
        assert [e.label() for e in minimal.expect] == [INVARIANT]
        assert len(minimal.faults) == smallest.fault_count
        assert minimal.cluster.version == "5.1.4" and minimal.cluster.controllers == 3
        page = (root / "index.html").read_text()
        assert all(r["run_id"] in page for r in records) and "Shrinking" in page and "minimal.yaml" in page
        for r in records:
            assert_nothing_left(state, r["run_id"])
    finally:
        end_run(proc, state)

"""A consumer group the scenario says must keep up (`keep_up: true`) and whose clients held pulls back (flow
control: more than `pull_threshold_for_queue` messages cached in a queue) in a phase without a fault on the group:
the harness says so on the terminal while the run goes on, writes `consumers_behind`, and every expectation over
that phase is unknown with the reason, so the run is never valid. The same consumer in a phase where a fault acts on
its group, and a group as slow that the scenario lets fall behind, change nothing. The run goes without its report
(Spark's minute); the gaps are read from its directory by `analysis.delivery`, what the analysis takes them from (an
expectation over a phase with a gap is unknown there: tests/harness/test_harness_shortfalls.py through Spark)."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from runsupport import assert_nothing_left, end_run, events, rmq_chaos, run_dir_of

from analysis.delivery import delivery
from analysis.rundir import open_run_dir

pytestmark = pytest.mark.root
SCENARIO = """\
name: keep-up
cluster:
  version: "4.9.1"
  store_size: 64MiB
  broker: {common: {mappedFileSizeCommitLog: 4194304}}
topic: {name: ChaosTopic, queues: 4}
warmup: 1s
load:
  model: open
  rate: 60
  clients: [{name: flood, users: 4, timeout: 3s}]
consumers:
  drain: 1s
  groups:
    # one thread of 40 ms a message: 25 messages/s under 60/s, a cache of 10 per queue
    - {name: slow, threads: 1, processing: 40, pull_threshold_for_queue: 10, keep_up: true}
    - {name: lazy, threads: 1, processing: 40, pull_threshold_for_queue: 10}
    - {name: quick, keep_up: true}
phases:
  - name: calm
    duration: 5s
  - name: stuck
    duration: 5s
    faults:
      - {id: stuck-slow, kind: consumer_stuck, target: "consumer:slow", params: {share: 1.0, hold_s: 60}}
readback: {enabled: false}
"""


@pytest.mark.long
def test_a_group_that_must_keep_up_and_does_not_makes_its_phase_unknown(tmp_path: Path) -> None:
    scenario = tmp_path / "keep-up.yaml"
    scenario.write_text(SCENARIO, encoding="utf-8")
    state, out = tmp_path / "state", tmp_path / "runs"
    proc = rmq_chaos(["run", str(scenario), "--out", str(out), "--program", "emulator", "--no-report"], state,
                     stderr=subprocess.PIPE, text=True)
    try:
        _, err = proc.communicate(timeout=300)
        run_dir = run_dir_of(out)
        behind = [e for e in events(run_dir) if e["event"] == "consumers_behind"]
        assert {(e["group"], e["phase"]) for e in behind} >= {("slow", "calm")}, behind
        assert all(e["group"] == "slow" and e["phase"] != "stuck" and e["flow_control"] > 0 for e in behind), behind
        assert "calm: consumer group slow did not keep up" in err, err
        assert proc.returncode == 0, err
        gaps = delivery(open_run_dir(run_dir), {"warmup": 1, "calm": 1, "stuck": 1}).gaps
        assert "'slow' did not keep up in phase 'calm'" in gaps["calm"] and "stuck" not in gaps, gaps
        for sub in ("requests", "consumes"):  # the run's end merged each directory's parts (analysis.contract.compact)
            assert [p.name for p in (run_dir / sub).glob("part-*")] == ["part-compacted-000000.parquet"], sub
        assert_nothing_left(state, run_dir.name)
    finally:
        end_run(proc, state)

"""`explore.cluster: reuse` (harness/cluster_reuse.py). End to end, as a user runs it on the emulator: two schedules
of a short slave freeze on a 4.9.1 pair; the first run stands the cluster up, the second gets it after the harness
proved it healthy again (cluster.json's `reused_from`, `cluster_up` with `reused`), each run's loss check counts only
its own keys (the first run's messages in the stores are `foreign`), and when the exploration ends the cluster is
taken down: nothing of it is left. The holder's refusals (another cluster asked for, a node not running) in units
with a stand-in backend."""
from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.cluster_reuse import FRESH, REUSED, HeldCluster
from harness.scenario import load_scenarios

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "harness"))  # runsupport: running rmq-chaos, proving nothing is left
from runsupport import assert_nothing_left, end_run, rmq_chaos  # noqa: E402

SPACE = """\
name: reuse-pair
scenario: {scenario}
override: {{warmup: 2s}}
explore:
  seed: 1
  cluster: reuse
  budget: {{runs: 2, time: 6m, shrink_runs: 0}}
  windows: {{min: 1, max: 1}}
  faults_per_window: {{min: 1, max: 1}}
  lead: {{min: 2s, max: 3s}}
  duration: {{min: 1s, max: 2s}}
  after: 4s
  faults:
    - {{kind: freeze, targets: [slave]}}
  invariants: {{producers_back_s: null}}
"""


@pytest.mark.long
def test_a_second_run_gets_the_first_runs_cluster_proven_healthy(tmp_path: Path) -> None:
    space = tmp_path / "reuse.yaml"
    space.write_text(SPACE.format(scenario=REPO / "scenarios" / "slave-frozen.yaml"))
    state, out = tmp_path / "state", tmp_path / "explore"
    proc = rmq_chaos(["explore", str(space), "--out", str(out), "--program", "emulator"], state)
    try:
        assert proc.wait(600) == 0  # no failure: a 1-2 s freeze stays within the producers' 3 s timeout
        (root,) = [d for d in out.iterdir() if d.is_dir()]
        first, second = [json.loads(line) for line in (root / "schedules.jsonl").read_text().splitlines()]
        assert (first["cluster"], second["cluster"]) == (FRESH, REUSED)
        assert first["verdict"] == second["verdict"] == "pass"
        run1, run2 = (root / "runs" / r["run_id"] for r in (first, second))
        cluster2 = json.loads((run2 / "cluster.json").read_text())
        assert cluster2["reused_from"] == first["run_id"] == cluster2["cluster_id"]
        events = [json.loads(line) for line in (run2 / "events.jsonl").read_text().splitlines()]
        up = next(e for e in events if e["event"] == "cluster_up")
        assert up["reused"] == first["run_id"] and up["started_ns"] < up["wall_ns"]
        loss1, loss2 = (json.loads((r / "report" / "verdict.json").read_text())["loss"] for r in (run1, run2))
        assert loss1["foreign"] == 0 and loss2["foreign"] == loss1["read_master"] > 0
        assert loss2["lost"] == 0 and loss2["read_master"] == loss2["acknowledged"] + loss2["foreign"]
        assert "reused" in (root / "index.html").read_text()
        assert_nothing_left(state, first["run_id"])
    finally:
        end_run(proc, state)


class _Backend(SimpleNamespace):
    """What the holder asks of a backend: a stand-in whose health is set by the test."""

    def __init__(self, scenario, healthy: str | None = None) -> None:
        super().__init__(scenario=scenario, cluster_id="run-1", name="local", up_ns=1, downs=0, healthy=healthy,
                         mode=SimpleNamespace(stop_samplers=lambda: None, start_samplers=lambda: None))

    def use_relay(self) -> bool:
        return False

    def reattach(self, rd) -> None:
        self.rd = rd

    def prove_healthy(self, say) -> dict:
        if self.healthy:
            raise RuntimeError(self.healthy)
        return {"cluster_id": self.cluster_id}

    def node_addrs(self) -> dict:
        return {}

    def down(self) -> None:
        self.downs += 1


def _scenario(**cluster):
    (s,) = load_scenarios(REPO / "scenarios" / "slave-frozen.yaml")
    return s.model_copy(update={"cluster": s.cluster.model_copy(update=cluster)}) if cluster else s


def test_the_holder_lends_only_a_fitting_healthy_cluster_and_takes_the_rest_down() -> None:
    said: list[str] = []
    rd = SimpleNamespace(write_cluster=lambda info: None, event=lambda *a, **k: {})
    held = HeldCluster()
    assert held.lend(_scenario(), rd, said.append) is None and held.note == FRESH  # nothing held yet

    sick = _Backend(_scenario(), healthy="slave not running")
    held.take(sick)
    assert held.lend(_scenario(), rd, said.append) is None
    assert held.note == "fresh: not healthy: slave not running" and sick.downs == 1

    other = _Backend(_scenario())
    held.take(other)
    assert held.lend(_scenario(version="4.9.3"), rd, said.append) is None
    assert held.note == "fresh: this run asks for another cluster" and other.downs == 1

    good = _Backend(_scenario())
    held.take(good)
    assert held.lend(_scenario(), rd, said.append) is good and held.note == REUSED and good.downs == 0
    held.take(good)
    held.down(said.append)
    assert good.downs == 1 and held.backend is None

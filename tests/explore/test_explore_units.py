"""`rmq-chaos explore` without a cluster: the same seed draws the same schedules, a window never hits one target
twice, schedules become scenarios the schema takes, the shrinking candidates get smaller, the k-of-n rule, greedy
shrinking against a fake run, a run's verdict from its verdict.json, and bad explore files refused in one line
naming the file, the key and the allowed values, with nothing made on disk."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from harness.explore.draw import draw
from harness.explore.invariants import FAIL, PASS, UNKNOWN, Judgement, judge
from harness.explore.load import load_exploration
from harness.explore.schedule import DrawnFault, Schedule, Window
from harness.explore.shrink import candidates, k_of_n, shrink
from harness.scenario import SourceError, load_scenario_text

REPO = Path(__file__).resolve().parents[2]
QUICK = REPO / "scenarios" / "explore" / "quick-5.1.4.yaml"
EXAMPLES = sorted((REPO / "scenarios" / "explore").glob("*.yaml"))

SPACE = {
    "scenario": str(REPO / "scenarios" / "controller-and-master-killed.yaml"),
    "override": {"cluster": {"version": "5.1.4"}},
    "explore": {
        "seed": 7,
        "budget": {"runs": 5},
        "windows": {"min": 1, "max": 3},
        "faults_per_window": {"min": 1, "max": 3},
        "rate": {"min": 20, "max": 200},
        "faults": [
            {"kind": "kill", "targets": ["controller-leader", "master", "slave"],
             "params": {"restart_after_s": {"min": 1, "max": 5}}},
            {"kind": "freeze", "targets": ["slave", "namesrv"], "params": {"method": ["signal", "cgroup"]}},
            {"kind": "disk_throttle", "targets": ["master", "slave"],
             "params": {"write_bps": {"min": 1048576, "max": 8388608}}},
        ],
    },
}


def write(tmp_path: Path, data: dict, name: str = "space.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def exploration(tmp_path_factory):
    return load_exploration(write(tmp_path_factory.mktemp("space"), SPACE))


def test_the_same_seed_draws_the_same_schedules_and_another_seed_others(exploration):
    space = exploration.space
    first = [draw(space, i) for i in range(20)]
    assert first == [draw(space, i) for i in range(20)]
    assert [draw(space, i) for i in range(20, 25)] == [draw(space, i) for i in range(20, 25)]  # alone, out of order
    other = space.model_copy(update={"seed": 8})
    assert [draw(other, i) for i in range(20)] != first


def test_drawn_schedules_stay_in_the_space_and_never_hit_one_target_twice_in_a_window(exploration):
    space = exploration.space
    for i in range(200):
        s = draw(space, i)
        assert space.windows.min <= len(s.windows) <= space.windows.max
        assert space.rate.min <= s.rate <= space.rate.max
        for j, w in enumerate(s.windows):
            low = space.lead if j == 0 else space.gap
            assert low.min <= w.gap_s <= low.max and space.duration.min <= w.duration_s <= space.duration.max
            assert 1 <= len(w.faults) <= 3 and len({f.target for f in w.faults}) == len(w.faults)
            for f in w.faults:
                assert f.target in space.faults[f.choice].targets and f.kind == space.faults[f.choice].kind
                if f.kind == "kill":
                    assert 1 <= f.params["restart_after_s"] <= 5 and isinstance(f.params["restart_after_s"], int)


def test_a_drawn_schedule_is_a_scenario_the_schema_takes_with_the_invariants(exploration):
    s = draw(exploration.space, 3)
    data = exploration.data(s, "x-s3")
    again = load_scenario_text("again.yaml", yaml.safe_dump(data, sort_keys=False))[0]  # what minimal.yaml is
    assert [p.name for p in again.phases][:2] == ["warmup", "steady"] and again.phases[-1].name == "after"
    assert sum(len(p.faults) for p in again.phases) == s.fault_count
    names = [e.label() for e in again.expect]
    assert names == ["inv-nothing-acked-lost", "inv-nodes-back", "inv-producers-back"]
    assert again.cluster.version == "5.1.4" and all(p.rate == s.rate for p in again.phases[1:])


def test_every_candidate_is_smaller_and_still_in_the_space(exploration):
    space = exploration.space
    for i in range(50):
        s = draw(space, i)
        for step, c in candidates(s, space):
            assert c.size() < s.size() or any(
                c.windows[k].faults != s.windows[k].faults for k in range(len(c.windows))), step
            assert c.fault_count >= 1 and c.windows
            assert all(w.duration_s >= space.duration.min for w in c.windows)
            assert c.windows[0].gap_s >= space.lead.min


def test_k_of_n_stops_as_soon_as_the_answer_is_known_and_discards_unknown_runs():
    target = frozenset({"lost"})

    def runs(*verdicts):
        it = iter(verdicts)
        calls = []

        def run():
            v = next(it)
            calls.append(v)
            return Judgement(v, ("lost",) if v == FAIL else ())
        return run, calls

    run, calls = runs(FAIL, FAIL, PASS)
    assert k_of_n(run, 2, 3, target).failing and calls == [FAIL, FAIL]
    run, calls = runs(PASS, PASS, FAIL)
    assert not k_of_n(run, 2, 3, target).failing and calls == [PASS, PASS]  # 2 of 3 out of reach
    run, calls = runs(UNKNOWN, FAIL, UNKNOWN, FAIL)
    t = k_of_n(run, 2, 2, target)
    assert t.failing and len(t.runs) == 4 and t.failed == target
    run, calls = runs(UNKNOWN, UNKNOWN, UNKNOWN)
    assert not k_of_n(run, 1, 2, target).failing and len(calls) == 3  # no more than n discarded


def test_a_run_failing_another_invariant_does_not_count():
    t = k_of_n(lambda: Judgement(FAIL, ("other",)), 1, 2, frozenset({"lost"}))
    assert not t.failing and len(t.runs) == 2


def test_greedy_shrinking_keeps_only_what_the_failure_needs(exploration):
    """A fake cluster that loses messages whenever the controller leader and the master are killed in one window."""
    space = exploration.space
    kill = lambda t: DrawnFault("kill", t, {"restart_after_s": 5}, 0)  # noqa: E731
    start = Schedule((Window(9.0, 18.0, (kill("slave"),)),
                      Window(7.0, 15.0, (kill("controller-leader"), DrawnFault("freeze", "namesrv", {}, 1),
                                         kill("master"))),
                      Window(4.0, 6.0, (DrawnFault("freeze", "slave", {}, 1),))), 20.0, 150.0)
    tried = []

    def trial(step, cand, target):
        tried.append(step)
        fails = any({"controller-leader", "master"} <= {f.target for f in w.faults} for w in cand.windows)
        j = Judgement(FAIL if fails else PASS, ("inv-nothing-acked-lost",) if fails else ())
        return k_of_n(lambda: j, 1, 1, target)

    out = shrink(start, frozenset({"inv-nothing-acked-lost"}), space, trial)
    assert out.complete
    (w,) = out.schedule.windows
    assert sorted(f.target for f in w.faults) == ["controller-leader", "master"]
    assert w.duration_s == space.duration.min and w.gap_s == space.lead.min and out.schedule.rate == space.rate.min
    assert all(f.params["restart_after_s"] == 1 for f in w.faults)
    assert out.steps[-1][2].failing is False  # the last tries were of a minimal schedule


def test_shrinking_stops_when_the_runs_are_spent(exploration):
    s = draw(exploration.space, 0)
    out = shrink(s, frozenset({"x"}), exploration.space, lambda step, cand, target: None)
    assert out.schedule == s and not out.complete and not out.steps


def test_a_runs_verdict_for_explore():
    held = {"name": "a", "status": "held"}
    assert judge("completed", None, {"expectations": [held]}).verdict == PASS
    j = judge("completed", None, {"expectations": [held, {"name": "b", "status": "failed", "measured": 3},
                                                   {"name": "c", "status": "unknown"}]})
    assert j.verdict == FAIL and j.failed == ("b",)
    assert judge("completed", None, {"expectations": [held, {"name": "c", "status": "unknown"}]}).verdict == UNKNOWN
    assert judge("failed", "fault not verified", None).verdict == UNKNOWN
    assert judge("completed", None, None).verdict == UNKNOWN
    # a run its revert ended (the node did not come back): the cluster's failure, yet no other failure counts
    not_back = {"name": "inv-nodes-back", "metric": "nodes_not_back", "status": "failed", "note": "slave: exit 255"}
    lost = {"name": "inv-nothing-acked-lost", "metric": "lost", "status": "failed"}
    j = judge("failed", "revert faults: node slave exited", {"expectations": [lost, not_back]})
    assert j.verdict == FAIL and j.failed == ("inv-nodes-back",) and "exit 255" in j.why
    assert judge("failed", "revert faults: ...", {"expectations": [lost]}).verdict == UNKNOWN


def test_the_example_files_load():
    assert len(EXAMPLES) >= 2
    for path in EXAMPLES:
        load_exploration(path)


def bad(tmp_path: Path, change) -> str:
    data = yaml.safe_load(yaml.safe_dump(SPACE))
    change(data["explore"])
    path = write(tmp_path, data)
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "harness.cli", "explore", str(path), "--out", str(out)],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert not out.exists()  # nothing left behind
    assert lines[0].startswith(f"{path}:")
    return lines[0]


@pytest.mark.parametrize("change, key, words", [
    (lambda e: e.update(faults=[]), "explore.faults", "the fault space is empty"),
    (lambda e: e["faults"][1]["targets"].append("controller-7"), "explore.faults[1].targets[2]",
     "'controller-7' is not a target of this cluster; allowed: namesrv, controller-0"),
    (lambda e: e["budget"].update(runs=0), "explore.budget.runs", "allowed: at least 1"),
    (lambda e: e.update(rerun={"k": 3, "n": 2}), "explore.rerun.k", "allowed: 1..2"),
    (lambda e: e["faults"][0]["params"].update(restart_after_s={"min": -1, "max": 2}),
     "explore.faults[0].params.restart_after_s", "allowed"),
    (lambda e: e["faults"][2].update(targets=["controller-leader"]), "explore.faults[2].targets[0]",
     "cannot act on 'controller-leader'"),
])
def test_bad_input_is_one_line_naming_file_key_and_allowed_values(tmp_path, change, key, words):
    line = bad(tmp_path, change)
    assert f": {key}: " in line and words in line, line


def test_a_target_no_node_has_in_master_slave_mode(tmp_path):
    data = {"scenario": str(REPO / "scenarios" / "slave-readonly-default.yaml"),
            "explore": {"budget": {"runs": 1}, "faults": [{"kind": "kill", "targets": ["controller-leader"]}]}}
    with pytest.raises(SourceError) as err:
        load_exploration(write(tmp_path, data))
    assert "explore.faults[0].targets[0]" in err.value.one_line() and "allowed: namesrv, broker-a/master" in \
        err.value.one_line()


def test_the_page_lists_runs_and_steps_and_escapes_what_it_shows():
    from harness.explore.page import render

    summary = {"id": "x", "seed": 1, "runs": 2, "steps": [{"step": "drop <w1>", "failing": True, "describe": "d",
                                                          "runs": ["fail"]}]}
    records = [{"n": 1, "stage": "explore", "describe": "@1s 2s [kill master]", "faults": 1, "verdict": "fail",
                "failed": ["inv-nothing-acked-lost"], "run_id": "r1"},
               {"n": 2, "stage": "shrink", "step": "drop <w1>", "describe": "d", "faults": 1, "verdict": "unknown",
                "why": "run failed: <fault not verified>", "run_id": None}]
    page = render(summary, records, "name: a & b")
    assert 'href="runs/r1/report/index.html"' in page and "&lt;fault not verified&gt;" in page
    assert "drop &lt;w1&gt;" in page and "name: a &amp; b" in page and "<script" not in page


def test_the_tally_says_runs_failures_discarded_stage_and_time_left():
    from harness.explore.progress import Tally

    t = Tally(budget_runs=10, budget_s=600.0, started=0.0, runs=3, explored=2, failures=1, discarded=1,
              stage="shrinking", shrink_step=2, trying="drop kill on master (window 1)")
    line = t.line()
    assert "runs 3 (explored 2/10), failures 1, discarded 1" in line
    assert "shrinking step 2: drop kill on master (window 1)" in line and "s left" in line


def test_reuse_with_consumer_groups_is_refused_in_one_line(tmp_path):
    """Consumer groups' committed offsets would carry over from one run to the next on a reused cluster."""
    data = {"scenario": str(REPO / "scenarios" / "master-killed-consumers.yaml"),
            "explore": {"budget": {"runs": 1}, "cluster": "reuse", "faults": [{"kind": "kill", "targets": ["slave"]}]}}
    with pytest.raises(SourceError) as err:
        load_exploration(write(tmp_path, data))
    line = err.value.one_line()
    assert "explore.cluster" in line and "consumer groups" in line and "allowed: restart" in line, line

"""Transition slices (issue 41, analysis/transitions.py): the sends started while a fault is applied and verified or
reverted are a slice of their own in the report and left out of their phase's expectations unless asked for.

Pure-Python bounds of a fault's transitions (events missing included); the expectation filter `transitions`; the
Spark column by map and by join; then the partition run of `transition_runs.py` analysed by the real job: a send
started during the revert is not in the phase's count, `transitions: include` counts it, the page shows the slices,
the fault timings keep working; and a run directory made before slices existed gets them from its events."""
from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
from known_runs import T0, transition_of
from transition_runs import ANSWERS, MEASURED, partition_run

from analysis.expectations import Expectation, parse_expectations
from analysis.timeline import build_timeline
from analysis.transitions import Transition, overlap_ns, slice_name, transitions_of

MS = 1_000_000


def fault(ms: int, action: str, status: str, fid: str = "f") -> dict:
    return {"wall_ns": T0 + ms * MS, "event": "fault", "fault_id": fid, "kind": "partition", "target": "master",
            "action": action, "status": status}


def bounds(events) -> list[tuple[str, int, int | None]]:
    return [(t.label, (t.start_ns - T0) // MS, None if t.end_ns is None else (t.end_ns - T0) // MS)
            for t in transitions_of(build_timeline(events))]


def test_a_faults_transitions_are_apply_to_verify_and_revert_to_its_ok():
    whole = [fault(100, "apply", "started"), fault(110, "apply", "ok"), fault(150, "verify", "ok"),
             fault(900, "revert", "started"), fault(986, "revert", "ok")]
    assert bounds(whole) == [("f apply", 100, 150), ("f revert", 900, 986)]
    # events a cut or failed run leaves: what ends a transition then
    assert bounds([fault(100, "apply", "started"), fault(120, "apply", "failed")]) == [("f apply", 100, 120)]
    assert bounds([fault(100, "apply", "started"), fault(110, "apply", "ok"), fault(400, "verify", "failed"),
                   fault(500, "revert", "started")]) == [("f apply", 100, 400), ("f revert", 500, None)]
    assert bounds([fault(100, "apply", "started")]) == [("f apply", 100, None)]
    assert bounds([fault(110, "apply", "ok"), fault(150, "verify", "ok"), fault(986, "revert", "ok")]) == [
        ("f apply", 110, 150)]  # no `started` events: from the apply's ok, and no revert slice
    again = whole + [fault(2000, "apply", "started"), fault(2050, "verify", "ok")]
    assert bounds(again)[-1] == ("f#2 apply", 2000, 2050)


def test_overlap_counts_the_union_within_the_window():
    trs = [Transition("a", "apply", 100, 200), Transition("b", "apply", 150, 260), Transition("a", "revert", 900, None)]
    assert overlap_ns(trs, 0, 1000) == 160 + 100
    assert overlap_ns(trs, 180, 950) == 80 + 50
    assert overlap_ns([], 0, 10) == 0
    assert slice_name("cut", "f revert") == "cut (transition: f revert)" and slice_name("cut", None) == "cut"


def test_the_transitions_filter_and_its_default():
    e = Expectation(phase="cut", outcome="SEND_OK", metric="count", max=0)
    assert e.transition_rows == "exclude" and "transitions" not in e.filters
    assert Expectation(outcome="SEND_OK", metric="count", max=0).transition_rows == "include"
    inc = Expectation(phase="cut", outcome="SEND_OK", metric="count", max=0, transitions="include")
    assert inc.transition_rows == "include" and inc.label() == "phase=cut outcome=SEND_OK transitions=include count max=0"
    for item, message in (({"metric": "count", "max": 0, "transitions": "all"},
                           "expect[0].transitions: transitions 'all' is not one of: exclude, include, only"),
                          ({"fault": "f", "metric": "recovery_s", "max": 1, "transitions": "only"},
                           "key 'transitions' does not apply to metric recovery_s")):
        with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
            parse_expectations([item])


@pytest.mark.spark
def test_transition_column_by_map_and_by_join_agree(spark):
    """Up to 64 runs the transitions are a literal map lookup, above a broadcast join: the same labels; rows
    labelled `interrupted` and runs without transitions get none."""
    from analysis.frames import MAP_LOOKUP_RUNS, with_transitions

    rows = [(f"run{i}", "p", t) for i in range(MAP_LOOKUP_RUNS + 2) for t in (5, 15, 25, 40)]
    rows += [("run0", "interrupted", 15), ("bare", "p", 15)]
    df = spark.createDataFrame(rows, "run_id string, phase string, start_ns long")
    trs = {f"run{i}": [Transition("f", "apply", 10, 20), Transition("g", "apply", 18, 30),
                       Transition("f", "revert", 35, None)] for i in range(MAP_LOOKUP_RUNS + 2)}
    want = {5: None, 15: "f apply", 25: "g apply", 40: "f revert"}
    for chosen in (trs, dict(list(trs.items())[:2])):
        got = {(r["run_id"], r["phase"], r["start_ns"]): r["transition"]
               for r in with_transitions(df, chosen).collect()}
        assert len(got) == len(rows)
        for (run, phase, t), label in got.items():
            assert label == (want[t] if run in chosen and phase != "interrupted" else None), (run, phase, t)


@pytest.mark.spark
def test_slice_percentiles_agree_both_ways(spark):
    from analysis import stats

    rows = [("r", "p", None if i % 3 else "f apply", float(i % 17), float(i % 5)) for i in range(300)]
    df = spark.createDataFrame(rows, "run_id string, phase string, transition string, latency_ms double, "
                                     "service_ms double")
    ways = [{(r["basis"], r["level"], r["phase"], r["transition"]): r.asDict()
             for r in stats.latency_percentiles(df, jvm).collect()} for jvm in (True, False)]
    assert ways[0] == ways[1]
    sliced = sorted(float(i % 17) for i in range(0, 300, 3))
    assert ways[0][("intended", stats.LEVEL_PHASE, "p", "f apply")]["p50"] == sliced[49]
    assert ways[0][("intended", stats.LEVEL_RUN, None, None)]["p99"] == 16.0


@pytest.fixture(scope="module")
def partition(spark, tmp_path_factory):
    from analysis.job import analyze

    path, answers = partition_run(tmp_path_factory.mktemp("transitions"))
    job = analyze([path], spark=spark, progress=False)
    return path, answers, job.results[0], job


@pytest.mark.spark
def test_a_send_started_during_the_revert_is_not_in_its_phase(partition):
    path, answers, res, job = partition
    rows = pq.read_table(path / "requests").to_pylist()
    slices = {p["slice"]: (p["sends"], p["send_ok"], p["seconds"]) for p in res.per_phase if not p["whole_run"]}
    assert slices.keys() == ANSWERS.keys()
    for name, (sends, ok, seconds) in ANSWERS.items():
        assert slices[name][:2] == (sends, ok) and slices[name][2] == pytest.approx(seconds), name
    for p in res.per_phase:  # the same slices from the rows, by the known transitions
        mine = rows if p["whole_run"] else [r for r in rows if r["phase"] == p["phase"]
                                            and transition_of(answers, r["start_ns"]) == p["transition"]]
        assert p["sends"] == len(mine), p["slice"]
    whole = next(p for p in res.per_phase if p["whole_run"])
    assert whole["sends"] == len(rows) == sum(s for s, _, _ in ANSWERS.values())


@pytest.mark.spark
def test_expectations_leave_transitions_out_unless_asked(partition):
    _, _, res, job = partition
    measured = {r.name: r for r in res.verdict.results}
    for name, value in MEASURED.items():
        assert measured[name].measured == pytest.approx(value), name
        assert measured[name].status == "held", (name, measured[name].note)
    assert job.exit_code == 0


@pytest.mark.spark
def test_the_fault_timings_count_the_transitions(partition):
    """fault_to_first_error_s from the apply's start; recovery_s counts the revert's send that ended after it."""
    _, _, res, _ = partition
    (f,) = res.faults
    assert (f["fault_to_first_error_s"], f["recovery_s"]) == (pytest.approx(0.1), 1.0)
    assert [(t["label"], t["start_s"], t["end_s"], t["sends"]) for t in f["transitions"]] == [
        ("cut apply", 2.0, 2.05, 10), ("cut revert", 5.914, 6.04, 25)]


@pytest.mark.spark
def test_the_report_shows_the_transition_slices(partition):
    path, _, res, _ = partition
    html = (path / "report" / "index.html").read_text()
    phases = html.split("<h2>Phases</h2>")[1].split("</table>")[0]
    order = [s for s in ANSWERS if f'data-slice="{s}"' in phases]
    assert order == ["warmup", "cut", "cut (transition: cut apply)", "cut (transition: cut revert)", "after",
                     "after (transition: cut revert)"]
    assert phases.count('class="transition"') == 3
    matrix = html.split("<h2>Outcomes per phase</h2>")[1].split("</table>")[0]
    assert "<th>cut (transition: cut revert)</th>" in matrix
    assert "revert 5.914–6.04 s: 25 sends" in html and "transitions: include" in html
    per_phase = pq.read_table(path / "report" / "per_phase.parquet").to_pylist()
    counts = pq.read_table(path / "report" / "outcome_counts.parquet").to_pylist()
    for p in per_phase:  # the aggregates agree: a slice's row is the sum of its outcome-count rows
        if not p["whole_run"]:
            assert p["sends"] == sum(c["sends"] for c in counts
                                     if (c["phase"], c["transition"]) == (p["phase"], p["transition"]))
    summary = json.loads((path / "report" / "summary.json").read_text())
    assert [p["slice"] for p in summary["phases"]] == [p["slice"] for p in res.per_phase]


@pytest.mark.spark
def test_a_run_directory_made_before_gets_its_slices_from_its_events(analysed):
    """The known runs are written as any run was before slices existed (no column, no event added): the incident
    run's fault `ro` still splits its phase, from events.jsonl alone."""
    run = analysed.paths["ro-run"]
    assert "transition" not in pq.read_schema(next((run / "requests").glob("*.parquet"))).names
    res = analysed.result("ro-run")
    slices = {p["slice"]: p["sends"] for p in res.per_phase}
    assert slices["readonly"] + slices["readonly (transition: ro apply)"] + slices[
        "readonly (transition: ro revert)"] == 1010
    cut = {p["slice"]: p["sends"] for p in analysed.result("cut-run").per_phase}
    assert (cut["readonly"], cut["readonly (transition: ro apply)"]) == (250, 50)

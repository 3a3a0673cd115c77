"""Opening run directories (no Spark): the timeline from events, what an interrupted run leaves, and bad input
refused with one line naming file, key and allowed values, before anything is written."""
from __future__ import annotations

import json
import sys

import pytest
import yaml
from known_runs import MS, T0, clean_run, incident_run, interrupted_run
from process_group import run_group

from analysis.errors import RunDirError
from analysis.job import EXIT_BAD_INPUT, open_runs
from analysis.rundir import open_run_dir
from analysis.timeline import build_timeline


def test_timeline_of_the_incident_run(tmp_path):
    path, _ = incident_run(tmp_path)
    tl = open_run_dir(path).timeline
    assert tl.status == "completed" and tl.run_id == "ro-run"
    assert tl.t0_ns == T0
    assert [(p.name, (p.start_ns - T0) // MS, (p.end_ns - T0) // MS, p.complete) for p in tl.phases] == [
        ("healthy", 0, 10_000, True), ("readonly", 10_000, 20_000, True), ("recovery", 20_000, 30_000, True)]
    f = tl.fault("ro")
    assert ((f.apply_started_ns - T0) // MS, (f.verified_ns - T0) // MS, (f.reverted_ns - T0) // MS) == (
        10_000, 10_500, 20_000)
    assert f.status == "reverted" and f.evidence == {"errno": "EROFS"}
    assert tl.readback_ended and tl.readback_nodes == ["master", "slave"]
    assert tl.fault("slave-readonly") is f  # a kind matches when one fault has it


def test_a_fault_applied_twice_gets_two_windows():
    ev = [{"wall_ns": t, "event": "fault", "fault_id": "kill", "kind": "process-kill", "action": a, "status": s}
          for t, a, s in ((1, "apply", "started"), (2, "verify", "ok"), (3, "revert", "ok"),
                          (10, "apply", "started"), (12, "verify", "ok"), (13, "revert", "ok"))]
    tl = build_timeline(ev)
    assert [(f.fault_id, f.verified_ns, f.reverted_ns) for f in tl.faults] == [("kill", 2, 3), ("kill#2", 12, 13)]


def test_readback_nodes_as_the_harness_writes_them():
    tl = build_timeline([{"wall_ns": 1, "event": "readback_end", "rows": 5, "nodes": {"master": 5, "slave": 0}}])
    assert tl.readback_nodes == ["master", "slave"] and tl.readback_rows == 5


def test_interrupted_run_is_accepted_with_warnings(tmp_path):
    path, answers = interrupted_run(tmp_path)
    run = open_run_dir(path)
    assert run.timeline.status == "unknown"
    ro = run.timeline.phase("readonly")
    assert ro is not None and not ro.complete and ro.end_ns is None
    assert run.timeline.phase("healthy").complete
    assert len(run.parts["requests"]) == 2 and not run.requests_complete
    assert [s.split(":")[0] for s in run.skipped["requests"]] == [answers.numbers["truncated_part"]]
    assert not run.has_readback and not run.readback_complete
    text = " | ".join(run.warnings)
    assert "events.jsonl line 9: not JSON (truncated last line)" in text
    assert "readback/: no read-back rows" in text


def _with_scenario(tmp_path, **changes):
    path, _ = clean_run(tmp_path)
    scenario = yaml.safe_load((path / "scenario.yaml").read_text())
    scenario.update(changes)
    (path / "scenario.yaml").write_text(yaml.safe_dump(scenario))
    return path


@pytest.mark.parametrize("changes, message", [
    ({"expect": [{"metric": "lost", "max": 0, "maximum": 1}]}, "scenario.yaml: expect[0]: unknown key 'maximum'; "
                                                               "allowed keys: name, phase"),
    ({"expect": [{"metric": "count", "phase": "stedy", "min": 1}]}, "scenario.yaml: expect[0].phase: 'stedy' is not "
                                                                    "one of: warmup, steady"),
    ({"expect": [{"metric": "p99", "max": 1}]}, "scenario.yaml: expect[0].metric: metric 'p99' is not one of: count"),
    ({"phases": [{"name": "a", "duration_s": "long"}]}, "scenario.yaml: phases[0].duration_s: must be a number"),
    ({"expect": {"metric": "lost"}}, "scenario.yaml: expect: must be a list of expectations"),
])
def test_bad_scenario_is_one_line_naming_file_and_key(tmp_path, changes, message):
    path = _with_scenario(tmp_path, **changes)
    with pytest.raises(RunDirError) as err:
        open_run_dir(path)
    assert str(err.value).startswith(str(path / "scenario.yaml"))
    assert message in str(err.value) and "\n" not in str(err.value)


def test_other_bad_input(tmp_path):
    with pytest.raises(RunDirError, match="not a directory"):
        open_run_dir(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(RunDirError, match="not a run directory"):
        open_run_dir(tmp_path / "empty")
    path, _ = clean_run(tmp_path)
    with pytest.raises(RunDirError, match="is also the run id of"):
        open_runs([path, path])
    (path / "scenario.yaml").write_text("name: [unclosed\n")
    with pytest.raises(RunDirError, match=r"scenario.yaml: line \d+ not valid YAML"):
        open_run_dir(path)


def test_wrong_column_type_in_a_part_is_refused(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path, _ = clean_run(tmp_path)
    bad = pa.table({"run_id": ["clean-run"], "worker": ["w"], "seq": ["1"], "key": ["k"], "start_ns": [1],
                    "end_ns": [2], "outcome": ["SEND_OK"]})
    pq.write_table(bad, path / "requests" / "part-bad-000000.parquet")
    with pytest.raises(RunDirError, match="part-bad-000000.parquet: column 'seq' has type string, the contract "
                                          "says int64"):
        open_run_dir(path)


def test_cli_refuses_bad_input_with_one_line_and_writes_nothing(tmp_path):
    path = _with_scenario(tmp_path, expect=[{"metric": "loss", "max": 0}])
    before = sorted(p.name for p in tmp_path.rglob("*"))
    proc = run_group([sys.executable, "-m", "harness.cli", "report", str(path)], timeout=60)
    assert proc.returncode == EXIT_BAD_INPUT
    lines = [x for x in proc.stderr.splitlines() if x.strip()]
    assert lines == [f"rmq-chaos report: error: {path / 'scenario.yaml'}: expect[0].metric: metric 'loss' is not "
                     f"one of: count, share, rate, latency_p50_ms, latency_p90_ms, latency_p99_ms, latency_p999_ms, "
                     f"latency_max_ms, fault_to_first_error_s, recovery_s, lost, not_on_slave, duplicated, "
                     f"recovered, unexpected, unseen_master, unseen_slave, consume_count, consume_rate, consume_from_slave, "
                     f"consume_latency_p50_ms, consume_latency_p90_ms, consume_latency_p99_ms, "
                     f"consume_latency_p999_ms, consume_latency_max_ms, consumer_lost, consumer_duplicated, "
                     f"consumer_reordered, lag_max, lag_end, offset_stall_s, offset_rewind, pagecache_put_p99_ms, failover_election_s, failover_route_s, "
                     f"failover_first_ok_s, failover_unavailable_s, sustainable_rate, group_share, group_leave_s, "
                     f"nodes_not_back"]
    assert sorted(p.name for p in tmp_path.rglob("*")) == before  # no report/, no temp dir


def test_events_with_garbage_lines_in_the_middle(tmp_path):
    path, _ = clean_run(tmp_path)
    lines = (path / "events.jsonl").read_text().splitlines()
    lines.insert(3, "not json")
    lines.insert(5, json.dumps(["a list"]))
    (path / "events.jsonl").write_text("\n".join(lines) + "\n")
    run = open_run_dir(path)
    assert run.timeline.status == "completed"
    assert any("line 4: not JSON (skipped)" in w for w in run.warnings)
    assert any("line 6: not an event object" in w for w in run.warnings)


def test_a_crash_is_not_a_failed_expectation(monkeypatch, tmp_path, capsys):
    """Unit test of the CLI wrapper: an exception inside the job exits 255 (1 would read as a failed expectation)."""
    import argparse

    import analysis.job as job

    def boom(*a, **k):
        raise RuntimeError("Spark could not start")

    monkeypatch.setattr(job, "analyze", boom)
    args = argparse.Namespace(run_dirs=[str(tmp_path)], out=None, master=None, no_progress=True)
    assert job.run_from_args(args) == job.EXIT_CRASH == 255
    assert "the analysis crashed: RuntimeError: Spark could not start" in capsys.readouterr().err


def test_an_earlier_comparison_page_among_the_runs_is_passed_over(tmp_path):
    """`rmq-chaos report runs/*` run twice: the first wrote runs/report-compare/, the second is given it too."""
    a, _ = clean_run(tmp_path / "a")
    compare = tmp_path / "report-compare"
    compare.mkdir()
    (compare / "runs.json").write_text('{"runs": []}')
    (compare / "index.html").write_text("<html></html>")
    assert [r.path for r in open_runs([a, compare])] == [open_run_dir(a).path]
    with pytest.raises(RunDirError, match="not a run directory"):
        open_runs([compare])  # alone, it is still refused

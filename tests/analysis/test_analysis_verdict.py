"""Fault timings, expectation verdicts, verdict.json and junit.xml of the known-answer runs; the exit code of the
real `rmq-chaos report` and of spark-submit."""
from __future__ import annotations

import json
import math
import os
import shutil
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from known_runs import INCIDENT_FAILING, INCIDENT_UNKNOWN
from process_group import run_group

import analysis.job

pytestmark = pytest.mark.spark
REPO = Path(__file__).resolve().parents[2]
SPARK_SUBMIT = Path(sys.executable).parent / "spark-submit"


def test_fault_timings(analysed):
    (f,) = analysed.result("ro-run").faults
    nums = analysed.answers["ro-run"].numbers
    assert f["fault_to_first_error_s"] == pytest.approx(nums["fault_to_first_error_s"], abs=1e-9)
    assert f["first_error_outcome"] == nums["first_error_outcome"]
    assert f["recovery_s"] == nums["recovery_s"]
    assert (f["apply_s"], f["verified_s"], f["reverted_s"]) == (10.0, 10.5, 20.0)


def test_measured_values_of_the_incident(analysed):
    res = {r.name: r for r in analysed.result("ro-run").verdict.results}
    assert res["ok-before"].measured == 1.0
    assert res["phase=readonly client=probe outcome=RemotingTooMuchRequestException count min=1"].measured == 5
    assert res["phase=readonly outcome=SLAVE_NOT_AVAILABLE latency_p99_ms[actual] max=100"].measured == 7.0
    assert res["no-ok-late"].measured == 0.0
    assert res["fault=ro fault_to_first_error_s max=30"].measured == pytest.approx(4.5)
    assert res["fault=ro recovery_s max=60"].measured == 3.0
    assert res["probe-first-sna"].measured == pytest.approx(4.507)
    assert res["healthy-p99"].measured == 990.0 and res["healthy-rate"].measured == 100.0
    assert res["lost-in-ro"].measured == 4 and res["lost-in-ro"].status == "held"  # loss over filtered rows
    assert res["busy-count"].measured == 200 and res["code-11"].measured == 305
    assert res["ro-max"].measured == 3000.5
    assert res["ro-p50-late"].measured == 210.0  # sends started 18-19 s: all MQBrokerException at 210 ms
    failed = {r.name: r.measured for r in res.values() if r.status == "failed"}
    assert failed.keys() == INCIDENT_FAILING.keys()
    assert {r.name: r.note for r in res.values() if r.status == "unknown"} == INCIDENT_UNKNOWN
    for name, value in INCIDENT_FAILING.items():
        assert failed[name] == pytest.approx(value) if math.isfinite(value) else math.isinf(failed[name])


def test_verdicts_and_exit_codes(analysed):
    by_run = {r.run.run_id: r.verdict for r in analysed.job.results}
    assert (by_run["ro-run"].valid, by_run["ro-run"].exit_code) == (False, 1)
    assert (by_run["clean-run"].valid, by_run["clean-run"].exit_code) == (True, 0)
    assert (by_run["cut-run"].valid, by_run["cut-run"].exit_code) == ("unknown", 2)
    assert analysed.job.exit_code == 1  # false beats unknown beats true


def test_interrupted_run_measures_what_it_can(analysed):
    res = {r.name: r for r in analysed.result("cut-run").verdict.results}
    assert res["healthy-ok"].status == "held" and res["healthy-ok"].measured == 1.0
    assert res["healthy-count"].status == "unknown" and "truncated" in res["healthy-count"].note
    assert res["cut-lost"].status == "unknown" and "read-back" in res["cut-lost"].note
    assert res["cut-recovery"].status == "unknown" and "never reverted" in res["cut-recovery"].note
    (f,) = analysed.result("cut-run").faults
    assert f["status"] == "active" and f["fault_to_first_error_s"] == pytest.approx(3.5)


def test_verdict_json(analysed):
    v = json.loads((analysed.paths["ro-run"] / "report" / "verdict.json").read_text())
    assert v["valid"] is False and v["exit_code"] == 1
    lost = next(e for e in v["expectations"] if e["name"] == "nothing-lost")
    assert (lost["held"], lost["measured"], lost["limit"], lost["status"]) == (False, 7.0, {"max": 0.0}, "failed")
    never = next(e for e in v["expectations"] if e["name"] == "probe-never-flush")
    assert never["measured"] is None and never["measured_text"] == "never" and never["held"] is False
    assert v["loss"]["lost"] == 7 and v["faults"][0]["recovery_s"] == 3.0
    cut = json.loads((analysed.paths["cut-run"] / "report" / "verdict.json").read_text())
    assert cut["valid"] == "unknown" and cut["counts"] == {"held": 1, "failed": 0, "unknown": 3}


def test_junit_names_the_failing_expectation_and_value(analysed):
    root = ET.parse(analysed.paths["ro-run"] / "report" / "junit.xml").getroot()
    suite = root.find("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("22", "3", "1")
    failures = {case.get("name"): case.find("failure").get("message") for case in suite.iter("testcase")
                if case.find("failure") is not None}
    assert failures["nothing-lost"] == "nothing-lost: measured 7 (lost), limit max 0"
    assert failures["ok-during-ro"].startswith("ok-during-ro: measured 0.164835 (share), limit min 0.9")
    cut = ET.parse(analysed.paths["cut-run"] / "report" / "junit.xml").getroot().find("testsuite")
    assert cut.get("errors") == "3"


def test_comparison_page_is_written_beside_the_runs(analysed):
    compare = analysed.job.compare_dir
    assert compare == analysed.root / "report-compare"
    html = (compare / "index.html").read_text()
    for run_id in ("ro-run", "clean-run", "cut-run"):
        assert f'href="../{run_id}/report/index.html"' in html
    assert "haSlaveFallbehindMax" in html and 'class="diff"' in html  # config difference highlighted
    runs = json.loads((compare / "runs.json").read_text())
    assert [r["run_id"] for r in runs["runs"]] == ["ro-run", "clean-run", "cut-run"]


def _env():
    return {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}


@pytest.mark.long
def test_rmq_chaos_report_exits_1_and_names_the_failure(fresh_runs):
    run = fresh_runs["ro-run"]
    proc = run_group([sys.executable, "-m", "harness.cli", "report", "--no-progress", str(run)], timeout=300,
                     env=_env(), cwd=fresh_runs["ro-run"].parent)
    assert proc.returncode == 1, proc.stderr[-3000:]
    out = " ".join(proc.stdout.split())
    assert "FAILED ro-run: nothing-lost: measured 7 (lost), limit max 0" in out
    assert "FAILED ro-run: ok-during-ro: measured 0.164835 (share), limit min 0.9" in out
    assert "HELD ro-run: healthy-p99: measured 990" in out
    assert (run / "report" / "index.html").exists() and (run / "report" / "junit.xml").exists()
    leftovers = [p.name for p in run.iterdir() if p.name.startswith(".")]
    assert leftovers == []


@pytest.mark.long
def test_spark_submit_runs_the_same_job(fresh_runs, tmp_path):
    if not SPARK_SUBMIT.exists():
        pytest.skip("spark-submit is not in the venv")
    runs = [fresh_runs["clean-run"], fresh_runs["cut-run"]]
    out = tmp_path / "compare"
    job = Path(analysis.job.__file__)
    proc = run_group([str(SPARK_SUBMIT), "--master", "local[2]", "--conf", "spark.ui.enabled=false",
                      "--conf", "spark.sql.shuffle.partitions=8",
                      "--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.driver.bindAddress=127.0.0.1",
                      str(job), "--no-progress", "--out", str(out), *map(str, runs)],
                     timeout=300, env={**_env(), "SPARK_LOCAL_IP": "127.0.0.1"}, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr[-3000:]  # clean is valid, cut is unknown
    assert (out / "index.html").exists()
    assert json.loads((runs[0] / "report" / "verdict.json").read_text())["valid"] is True


def test_a_second_report_replaces_the_first(analysed, spark, tmp_path):
    run = tmp_path / "clean-run"
    shutil.copytree(analysed.paths["clean-run"], run)
    (run / "report" / "stale-marker").write_text("from the first report")
    job = analysis.job.analyze([run], spark=spark, progress=False)
    assert job.exit_code == 0 and job.compare_dir is None
    assert (run / "report" / "index.html").exists() and not (run / "report" / "stale-marker").exists()
    assert sorted(p.name for p in run.iterdir() if p.name.startswith(".")) == []


def test_an_incomplete_run_is_never_valid(analysed):
    """Every expectation of the interrupted run that can be measured held; the run is still only `unknown`."""
    from analysis.verdict import RunVerdict

    cut = analysed.result("cut-run").verdict
    assert cut.incomplete and "run status 'unknown'" in cut.incomplete
    held_only = RunVerdict(cut.run_id, cut.scenario, [r for r in cut.results if r.status == "held"], cut.incomplete)
    assert held_only.valid == "unknown" and held_only.exit_code == 2
    assert RunVerdict("x", "y", held_only.results).valid is True

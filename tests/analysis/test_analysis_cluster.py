"""`rmq-chaos report --master spark://...`: the same job on a real Spark standalone cluster (master and worker on
127.0.0.1) gives the same verdicts and figures as local mode."""
from __future__ import annotations

import json
import os
import sys

import pytest
from process_group import run_group
from spark_cluster import StandaloneCluster

pytestmark = pytest.mark.spark


@pytest.fixture
def cluster(tmp_path):
    c = StandaloneCluster(tmp_path / "spark").start()
    yield c
    c.stop()


@pytest.mark.long
def test_report_on_a_standalone_cluster(cluster, fresh_runs, analysed):
    runs = [fresh_runs["clean-run"], fresh_runs["cut-run"]]
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
    proc = run_group([sys.executable, "-m", "harness.cli", "report", "--no-progress", "--master", cluster.url,
                      "--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.sql.shuffle.partitions=4",
                      "--conf", "spark.executor.memory=1g", *map(str, runs)], timeout=300, env=env)
    assert proc.returncode == 2, proc.stderr[-3000:]  # clean-run valid, cut-run unknown
    assert "app-" in "".join(p.name for p in (cluster.workdir / "work").iterdir())  # executors ran on the worker
    for run in runs:
        on_cluster = json.loads((run / "report" / "verdict.json").read_text())
        local = analysed.result(run.name).verdict.to_json()
        assert on_cluster["valid"] == local["valid"]
        assert [(e["name"], e["status"], e["measured"]) for e in on_cluster["expectations"]] == [
            (e["name"], e["status"], e["measured"]) for e in local["expectations"]]
        assert on_cluster["loss"] == json.loads(json.dumps(local["loss"]))

"""How `rmq-chaos report` takes a run directory that executors on other hosts read: a path, or a `file:` URI of an
absolute path (a mount every host has at that path); any other scheme (`hdfs:`, `s3a:`, a typo) is refused before
Spark starts, in one line naming the argument and the allowed forms, exit 254. The URI form on a real two-worker
cluster is tests/analysis/test_analysis_cluster.py; these need no Spark."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from known_runs import clean_run

from analysis.errors import RunDirError
from analysis.job import EXIT_BAD_INPUT
from analysis.rundir import open_run_dir, part_uri, run_dir_location

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("uri, path", [
    ("file:///mnt/runs/ro-run", "/mnt/runs/ro-run"),
    ("file:/mnt/runs/ro-run", "/mnt/runs/ro-run"),
    ("file://localhost/mnt/runs/ro-run", "/mnt/runs/ro-run"),
    ("file:///mnt/runs%20on%20nfs/ro-run", "/mnt/runs on nfs/ro-run"),
    ("runs/ro-run", "runs/ro-run"),
])
def test_a_path_or_a_file_uri_names_a_local_path(uri, path):
    assert run_dir_location(uri) == Path(path)


@pytest.mark.parametrize("arg, words", [
    ("hdfs://namenode:8020/runs/ro-run", "no file system for hdfs:"),
    ("s3a://bucket/runs/ro-run", "no file system for s3a:"),
    ("ftp://host/runs/ro-run", "unknown scheme ftp:"),
    ("file://nfs-server/runs/ro-run", "names host 'nfs-server'"),
    ("file:runs/ro-run", "is not an absolute path"),
    ("file:///runs/ro-run?x=1", "has a query or fragment"),
])
def test_other_forms_are_refused_in_one_line_naming_the_argument(arg, words):
    with pytest.raises(RunDirError) as err:
        run_dir_location(arg)
    text = str(err.value)
    assert "\n" not in text and text.startswith(f"RUN_DIR {arg}: ") and words in text
    assert "allowed: a path, or a file: URI of an absolute path (file:///" in text


def test_a_directory_whose_name_looks_like_a_uri_is_a_path(tmp_path, monkeypatch):
    path, _ = clean_run(tmp_path, run_id="ro:1")
    monkeypatch.chdir(tmp_path)
    assert open_run_dir("ro:1").path == Path("ro:1")


def test_a_file_uri_opens_the_run_and_spark_is_given_its_parts_as_file_uris(tmp_path):
    path, _ = clean_run(tmp_path / "runs on nfs")
    run = open_run_dir(path.as_uri())
    assert run.path == path and run.run_id == "clean-run"
    parts = [p for files in run.parts.values() for p in files]
    assert parts and all(part_uri(p) == f"file://{p}" for p in parts)  # unescaped: Hadoop's Path escapes itself


def test_the_report_refuses_an_unknown_file_system_before_spark_starts():
    env = {**os.environ, "RMQ_CHAOS_CLASS_ARCHIVE": "off"}
    proc = subprocess.run([sys.executable, "-m", "harness.cli", "report", "--no-progress", "s3a://bucket/runs/x"],
                          capture_output=True, text=True, timeout=120, cwd=REPO, env=env)
    assert proc.returncode == EXIT_BAD_INPUT, proc.stderr[-2000:]
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert lines == ["rmq-chaos report: error: RUN_DIR s3a://bucket/runs/x: no file system for s3a: in this job (the "
                     "driver reads the run's scenario, events and part footers from a local path); allowed: a path, "
                     "or a file: URI of an absolute path (file:///mnt/runs/<run-id>) on a mount that the driver and "
                     "every executor host have at that path"]

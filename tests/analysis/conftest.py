"""Fixtures of the analysis tests: one local[2] Spark session for all of them (stopped at the end), and the three
known-answer run directories analysed once by the real job (`analysis.job.analyze`) into a temporary directory."""
from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from known_runs import Answers, clean_run, incident_run, interrupted_run

from analysis.job import JobResult, analyze


@pytest.fixture(scope="session")
def spark():
    """The session every Spark test shares; stopped (JVM ended) when the session ends, even after failures."""
    from analysis.session import get_session

    session = get_session()
    yield session
    session.stop()
    # and the JVM this test process started for it (PySpark keeps it until the interpreter exits)
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    proc = getattr(gateway, "proc", None)
    if gateway is not None:
        gateway.shutdown()
        SparkContext._gateway = SparkContext._jvm = None
    if proc is not None and proc.poll() is None:
        proc.terminate()
        proc.wait(timeout=30)


@dataclass
class Analysed:
    root: Path
    paths: dict[str, Path]
    answers: dict[str, Answers]
    job: JobResult

    def result(self, run_id: str):
        return next(r for r in self.job.results if r.run.run_id == run_id)


@pytest.fixture(scope="session")
def analysed(spark, tmp_path_factory) -> Analysed:
    """incident (ro-run), clean (clean-run) and interrupted (cut-run) runs, analysed together."""
    root = tmp_path_factory.mktemp("runs")
    made = [incident_run(root), clean_run(root), interrupted_run(root)]
    paths = {p.name: p for p, _ in made}
    answers = {p.name: a for p, a in made}
    job = analyze(list(paths.values()), spark=spark, progress=False)
    yield Analysed(root, paths, answers, job)
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def fresh_runs(tmp_path) -> dict[str, Path]:
    """Newly generated copies of the three runs (for tests that write their own reports)."""
    return {p.name: p for p, _ in (incident_run(tmp_path), clean_run(tmp_path), interrupted_run(tmp_path))}

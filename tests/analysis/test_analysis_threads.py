"""The job's side threads (`analysis.compute._compute`): a step that fails in one of them fails the job with its own
error (not a hang, not a half-written report), and the session is still usable after it."""
from __future__ import annotations

import pytest
from known_runs import clean_run

from analysis import compute
from analysis.job import analyze


def test_a_failure_in_a_side_thread_fails_the_job_and_leaves_the_session_usable(spark, tmp_path, monkeypatch):
    run, _ = clean_run(tmp_path)

    def broken(*_args):
        raise RuntimeError("per-second series broke")

    monkeypatch.setattr(compute, "_series", broken)
    with pytest.raises(RuntimeError, match="per-second series broke"):
        analyze([run], spark=spark, progress=False)
    assert not (run / "report" / "verdict.json").exists()
    assert spark.range(3).count() == 3

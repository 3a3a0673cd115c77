"""`rmq-chaos explore --backend compose`: explore drives the compose backend as it drives the local one. The space
of scenarios/explore/pair-4.9.1.yaml (a 4.9.1 SYNC_MASTER pair; every schedule makes a send error reach the
application), with one explored run and one shrinking run, on the locally built emulator image: the first run fails
the file's invariant, the shrinking step drops a fault and still fails, every run's cluster was a compose project of
its own, `minimal.yaml` is written, and nothing of any run is left."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from compose_support import REPO, assert_nothing_left, rmq_chaos, rmq_chaos_run

sys.path.insert(0, str(REPO / "tests" / "harness"))
from runsupport import explored_and_shrunk, full_only, one_shrink_pair_space  # noqa: E402

pytestmark = [pytest.mark.root, pytest.mark.docker, pytest.mark.spark, *full_only("~2.5 min (two compose runs)")]


def test_explore_through_compose_finds_and_shrinks(tmp_path: Path, test_image: str) -> None:
    space = one_shrink_pair_space(tmp_path, "8m")
    state, out = tmp_path / "state", tmp_path / "explore"
    proc = rmq_chaos(["explore", str(space), "--out", str(out), "--backend", "compose", "--program", "emulator",
                      "--image", test_image.replace("{version}", "4.9.1")], state)
    try:
        assert proc.wait(900) == 1
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
            rmq_chaos_run(["cleanup"], state, timeout_s=180)
    for run_dir in explored_and_shrunk(out):
        cluster = json.loads((run_dir / "cluster.json").read_text())
        assert cluster["backend"] == "compose"
        assert_nothing_left(state, cluster["compose_project"])

"""`rmq-chaos cluster up --detach`, `status`, `fault` on the held cluster, `down`: the cluster lives as long as its
holder, and `down` leaves nothing behind."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from runsupport import assert_nothing_left, rmq_chaos

pytestmark = pytest.mark.root
SCENARIO = """\
name: held
cluster:
  version: "4.9.1"
  store_size: 64MiB
  broker:
    common: {mappedFileSizeCommitLog: 4194304}
phases:
  - {name: idle, duration: 1s}
"""


def test_cluster_up_status_down(tmp_path: Path) -> None:
    scenario = tmp_path / "held.yaml"
    scenario.write_text(SCENARIO, encoding="utf-8")
    state = tmp_path / "state"
    try:
        up = rmq_chaos(["cluster", "up", str(scenario), "--detach", "--out", str(tmp_path / "runs")], state,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        out, err = up.communicate(timeout=120)
        assert up.returncode == 0, err
        (state_file,) = (state / "clusters").glob("*.json")
        cluster_id = state_file.stem
        assert cluster_id in out
        nodes = json.loads(state_file.read_text())["nodes"]
        assert [n["name"] for n in nodes] == ["namesrv", "master", "slave"]
        status = rmq_chaos(["cluster", "status"], state, stdout=subprocess.PIPE, text=True)
        shown = status.communicate(timeout=60)[0]
        assert status.returncode == 0 and cluster_id in shown and "alive" in shown
        down = rmq_chaos(["cluster", "down", cluster_id], state)
        assert down.wait(120) == 0
        assert not list((state / "clusters").glob("*.json"))
        assert_nothing_left(state, cluster_id)
    finally:
        rmq_chaos(["cluster", "down", "--all"], state).wait(120)
        rmq_chaos(["cleanup"], state).wait(120)

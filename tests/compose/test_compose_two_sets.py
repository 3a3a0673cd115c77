"""`scenarios/master-killed-two-sets.yaml` through `--backend compose` (issue 42: controller mode with two broker sets
on compose), its phases shortened as the local test's (tests/harness/test_controller_two_sets_scenario.py), on the
locally built emulator image: every expectation holds and the run shows what the local one shows (broker-a's slave
elected in a new epoch, broker-b's master unchanged, every set's master and slave read back, nothing lost); every
broker of both sets was a container of the run's project, the kill stopped broker-a-0's container, and nothing is
left."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from compose_support import REPO, assert_nothing_left, valid_compose_run

sys.path.insert(0, str(REPO / "tests" / "harness"))
from runsupport import full_only, shortened  # noqa: E402
from test_controller_two_sets_scenario import SCENARIO, SHORTER, check_two_sets  # noqa: E402

pytestmark = [pytest.mark.root, pytest.mark.docker, pytest.mark.spark, pytest.mark.long,
              *full_only("~2 min (the default run takes the same file across hosts: tests/hosts/test_ssh_controller.py)")]


def test_a_master_killed_in_one_of_two_sets_through_compose(tmp_path: Path, test_image: str) -> None:
    run_dir, verdict, state = valid_compose_run(shortened(SCENARIO, tmp_path, SHORTER), tmp_path,
                                                test_image.replace("{version}", "5.3.0"), 900)
    evs = check_two_sets(run_dir, verdict)
    cluster = json.loads((run_dir / "cluster.json").read_text())
    project = cluster["compose_project"]
    nodes = {n["name"]: n for n in cluster["nodes"]}
    assert set(nodes) == {"namesrv", "broker-a-0", "broker-a-1", "broker-b-0", "broker-b-1"}
    assert all(n["container_name"] == f"{project}-{name}-1" for name, n in nodes.items())
    verify = next(e for e in evs if e["event"] == "fault" and e["action"] == "verify" and e["status"] == "ok")
    assert verify["evidence"]["docker_status"] == "exited" and verify["evidence"]["died_ns"] > 0
    assert_nothing_left(state, project)

"""Controller mode on the compose backend, as a user runs it: `rmq-chaos run scenarios/master-killed-controller.yaml
--backend compose` (its phases shortened for the suite's time, and with three standalone controllers instead of the
embedded one, so the image's `mqcontroller` runs too) on the locally built emulator image. Every expectation holds
(election, producers' unavailability, nothing acknowledged lost); every node (name server, controller-0..2,
broker-0, broker-1) ran as a container of the run's project (the checked-in file plus the run's controller file);
the `master` target killed the container of the broker that held the role (broker-0, started first); the role
sampler saw the controller name broker-1 master afterwards; nothing is left (containers, the namespace holder,
mounts, loop devices, cgroups, journal entries)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from compose_support import REPO, assert_nothing_left, events, valid_compose_run

from harness.backends.compose.layout import project_name

sys.path.insert(0, str(REPO / "tests" / "harness"))  # runsupport: the scenario files' shortening helper, shared
from runsupport import shortened  # noqa: E402

pytestmark = [pytest.mark.root, pytest.mark.docker, pytest.mark.spark, pytest.mark.long]
RUN_TIMEOUT_S = 600
SCENARIO = REPO / "scenarios" / "master-killed-controller.yaml"
SHORTER = (("controllers: embedded", "controllers: 3"),
           ("duration: 10s\n  - name: failover", "duration: 5s\n  - name: failover"),
           ("duration: 60s", "duration: 30s"), ("restart_after_s: 20", "restart_after_s: 8"),
           ("  - name: after\n    duration: 10s", "  - name: after\n    duration: 5s"))
"""The local test's proportions (tests/harness/test_controller_scenario.py), the fault phase 30 s: the election
(within the 10 s heartbeat timeout) and the producers' route refresh fit in it."""
NODES = ("namesrv", "controller-0", "controller-1", "controller-2", "broker-0", "broker-1")


def test_master_killed_controller_through_compose(tmp_path: Path, test_image: str) -> None:
    run_dir, verdict, state = valid_compose_run(shortened(SCENARIO, tmp_path, SHORTER), tmp_path,
                                                test_image.replace("{version}", "5.3.0"), RUN_TIMEOUT_S)

    cluster = json.loads((run_dir / "cluster.json").read_text())
    project = cluster["compose_project"]
    assert project == project_name(run_dir.name) and cluster["backend"] == "compose"
    nodes = {n["name"]: n for n in cluster["nodes"]}
    assert tuple(nodes) == NODES
    for name, node in nodes.items():  # each node a container of the project, named by its compose service
        assert node["container"] and node["container_name"] == f"{project}-{name}-1", node
    assert [nodes[n]["role"] for n in NODES[1:]] == ["controller"] * 3 + ["broker"] * 2
    assert cluster["effective_config"]["broker-1"]["enableControllerMode"] == "true"
    up = (run_dir / "logs" / "compose" / "compose.log").read_text()
    assert "compose.controller.yml" in up and " up --no-start " in up

    evs = events(run_dir)
    kill = next(e for e in evs if e["event"] == "fault" and e["action"] == "apply" and e["status"] == "ok")
    assert (kill["target"], kill["node"]) == ("master", "broker-0")
    roles = [e for e in evs if e["event"] == "roles" and "route_master" in e]
    assert roles[0]["master"] == "broker-0" and any(e["master"] == "broker-1" for e in roles), roles
    assert verdict["failover"]["node"] == "broker-0"
    readback = next(e for e in evs if e["event"] == "readback_end")
    assert readback["nodes"]["master"] > 0 and readback["nodes"]["slave"] > 0
    assert verdict["loss"]["lost"] == 0
    assert_nothing_left(state, project)

"""`scenarios/slave-readonly-two-groups.yaml` through `--backend compose` (issue 42: the read-only-slave seed pair
on broker-a of a two-group cluster, on compose), its outage shortened as the local test's
(tests/harness/test_readonly_two_groups_scenario.py), on the locally built emulator image: each half's expectations
hold, with the same checks as the local run, the read-only fault struck the container of broker-a's slave, and
nothing is left."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from compose_support import REPO, assert_nothing_left, events, valid_compose_run

sys.path.insert(0, str(REPO / "tests" / "harness"))
from runsupport import full_only, shortened  # noqa: E402
from test_readonly_two_groups_scenario import SCENARIO, SHORTER, check_retry, only  # noqa: E402

pytestmark = [pytest.mark.root, pytest.mark.docker, pytest.mark.spark, pytest.mark.long]


@pytest.mark.parametrize("switch", [pytest.param(s, marks=full_only("~90 s")) for s in ("off", "on")])
def test_the_seed_pair_on_broker_a_through_compose(tmp_path: Path, test_image: str, switch: str) -> None:
    run_dir, verdict, state = valid_compose_run(shortened(SCENARIO, tmp_path, SHORTER), tmp_path,
                                                test_image.replace("{version}", "4.9.1"), 900, "--only", only(switch))
    check_retry(run_dir, verdict, switch)
    applied = next(e for e in events(run_dir) if e["event"] == "fault" and e["action"] == "apply"
                   and e["status"] == "ok")
    assert (applied["target"], applied["node"]) == ("broker-a/slave", "broker-a-slave")
    assert_nothing_left(state, json.loads((run_dir / "cluster.json").read_text())["compose_project"])

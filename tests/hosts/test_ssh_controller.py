"""Controller mode across hosts (issue 42): `scenarios/master-killed-two-sets.yaml` (5.3.0, the controller in the
name server, two broker sets; phases shortened as the local backend's test shortens them) through `--backend ssh`
with the crosswise inventory of tests/hosts/test_ssh_two_groups.py: the name server and its controller on n1, each
set's first broker where its master would go (broker-a-0 on n2, broker-b-0 on n3) and the others where its slave
would. The controller's DLedger port and every broker's address are their hosts'; broker-a's master is killed on n2,
the controller elects broker-a-1 on n3, broker-b never changes, every expectation holds, every set is read back,
and nothing is left on any host."""
from __future__ import annotations

from pathlib import Path

import pytest
from runsupport import events, shortened
from test_controller_two_sets_scenario import SCENARIO, SHORTER
from test_ssh_two_groups import valid_crosswise_run

pytestmark = [pytest.mark.root, pytest.mark.spark]


@pytest.mark.long
def test_a_master_killed_in_one_of_two_sets_across_hosts(cluster, tmp_path: Path) -> None:
    run_dir, verdict, info = valid_crosswise_run(cluster, shortened(SCENARIO, tmp_path, SHORTER), tmp_path)
    assert {n["name"]: n["host"] for n in info["nodes"]} == {
        "namesrv": "n1", "broker-a-0": "n2", "broker-a-1": "n3", "broker-b-0": "n3", "broker-b-1": "n2"}
    n1, n2 = cluster.hosts.addr("n1"), cluster.hosts.addr("n2")
    assert info["effective_config"]["broker-a-0"]["brokerIP1"] == n2
    assert info["effective_config"]["broker-a-0"]["controllerAddr"].startswith(f"{n1}:")
    evs = events(run_dir)
    applied = next(e for e in evs if e["event"] == "fault" and e["action"] == "apply" and e["status"] == "ok")
    assert (applied["target"], applied["node"], applied["host"]) == ("broker-a/master", "broker-a-0", "n2")
    roles = [e for e in evs if e["event"] == "roles" and "route_master" in e]
    assert any(e["group"] == "broker-a" and e["master"] == "broker-a-1" for e in roles)
    assert all(e["master"] == "broker-b-0" for e in roles if e["group"] == "broker-b")
    readback = next(e for e in evs if e["event"] == "readback_end")
    assert set(readback["nodes"]) == {"broker-a/master", "broker-a/slave", "broker-b/master", "broker-b/slave"}
    assert verdict["loss"]["lost"] == 0

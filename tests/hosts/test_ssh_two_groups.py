"""Two broker groups across hosts (issue 42): `scenarios/group-master-killed-consumers.yaml` (phases shortened)
through `--backend ssh` with an inventory that lists two hosts in `master` and the same two crosswise in `slave`, the
usual two-group cross deployment: broker-a's master and broker-b's slave on n2, broker-b's master and broker-a's
slave on n3. The placement follows the inventory's groups, the kill lands on the node `broker-a/master` names on its
host, every expectation holds: the producer's retries move to broker-b; the consumer group rebalances over both
groups' queues, pulls broker-a's backlog from its slave while the master is down, its lag is asked of each group
and it delivers everything. Every member of both groups is read back, the load host's rows come home and nothing is
left on any host (RMQ_CHAOS_FULL_TESTS=1: the default run takes the same shortened file on the local backend with
the same checks, tests/harness/test_two_groups_scenarios.py, and several groups across hosts in controller mode,
tests/hosts/test_ssh_controller.py)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import inventory_text
from runsupport import events, full_only, rows, shortened
from test_readonly_two_groups_scenario import SCENARIO as READONLY
from test_readonly_two_groups_scenario import SHORTER as READONLY_SHORTER
from test_readonly_two_groups_scenario import check_retry, only
from test_ssh_seed import run_on_hosts
from test_two_groups_scenarios import CONSUMERS as SCENARIO
from test_two_groups_scenarios import CONSUMERS_SHORTER, check_consumers_around

pytestmark = [pytest.mark.root, pytest.mark.spark]
REPO = Path(__file__).resolve().parents[2]
CROSSWISE = {"namesrv": ("n1",), "master": ("n2", "n3"), "slave": ("n3", "n2"), "load": ("n4",)}


def valid_crosswise_run(cluster, scenario: Path, tmp_path: Path, *extra: str) -> tuple[Path, dict, dict]:
    """`scenario` run on the hosts with the CROSSWISE inventory, exit 0 with every expectation held (then nothing
    left on any host: `run_on_hosts`); (run dir, verdict.json, cluster.json)."""
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(inventory_text(cluster.hosts, cluster.base, groups=CROSSWISE), encoding="utf-8")
    code, run_dir, err = run_on_hosts(cluster, scenario, tmp_path, inventory, *extra)
    verdict = json.loads((run_dir / "report" / "verdict.json").read_text())
    bad = [(r["name"], r["status"], r["measured"]) for r in verdict["expectations"] if r["status"] != "held"]
    assert code == 0 and not bad, (bad, err[-3000:])
    return run_dir, verdict, json.loads((run_dir / "cluster.json").read_text())


@pytest.mark.parametrize("placement", [pytest.param("crosswise", marks=full_only(
    "~3.5 min (the default run takes the same file on the local backend: tests/harness/test_two_groups_scenarios.py)"))])
def test_group_master_killed_holds_across_hosts(cluster, tmp_path: Path, placement: str) -> None:
    run_dir, verdict, info = valid_crosswise_run(cluster, shortened(SCENARIO, tmp_path, CONSUMERS_SHORTER), tmp_path)
    assert {n["name"]: (n["host"], n["group"]) for n in info["nodes"]} == {
        "namesrv": ("n1", None), "broker-a-master": ("n2", "broker-a"), "broker-a-slave": ("n3", "broker-a"),
        "broker-b-master": ("n3", "broker-b"), "broker-b-slave": ("n2", "broker-b")}
    assert info["effective_config"]["broker-b-slave"]["brokerName"] == "broker-b"
    assert info["effective_config"]["broker-b-slave"]["brokerId"] == "1"
    applied = next(e for e in events(run_dir) if e["event"] == "fault" and e["action"] == "apply"
                   and e["status"] == "ok")
    assert applied["host"] == "n2"
    assert {r["worker"] for r in rows(run_dir / "requests")} == {"w0"}, "the rows came from the load host"
    check_consumers_around(run_dir, verdict)

@pytest.mark.long
@pytest.mark.parametrize("switch", [pytest.param(s, marks=full_only("~80 s")) for s in ("off", "on")])
def test_the_seed_pair_on_broker_a_across_hosts(cluster, tmp_path: Path, switch: str) -> None:
    """`scenarios/slave-readonly-two-groups.yaml` (the seed incident on broker-a's slave, read-only under load, the
    outage shortened) crosswise across hosts: each half's expectations hold as on the local backend, and the
    read-only fault struck broker-a's slave on n3, its host."""
    run_dir, verdict, info = valid_crosswise_run(cluster, shortened(READONLY, tmp_path, READONLY_SHORTER), tmp_path,
                                                 "--only", only(switch))
    check_retry(run_dir, verdict, switch)
    applied = next(e for e in events(run_dir) if e["event"] == "fault" and e["action"] == "apply"
                   and e["status"] == "ok")
    assert (applied["target"], applied["node"], applied["host"]) == ("broker-a/slave", "broker-a-slave", "n3")

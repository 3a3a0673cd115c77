"""Where an inventory's groups place a scenario's nodes (`placement_from_groups`, issue 42): one group as before
(the first host of `namesrv`, `master`, `slave`); with several broker groups the n-th group's master on the n-th host
of `master` (wrapping round), its slave likewise, and a group named after a node placing that node. The placement
then passes the scenario's check (every node of the topology, nothing else)."""
from __future__ import annotations

from pathlib import Path

from harness.hosts.inventory import load_inventory, placement_from_groups
from harness.scenario import ClusterSpec
from harness.topology import Topology


def _inventory(tmp_path: Path, children: str) -> Path:
    hosts = "".join(f"    {n}: {{ansible_host: 10.9.0.{i + 1}}}\n" for i, n in enumerate(("n1", "n2", "n3", "n4")))
    path = tmp_path / "inventory.yaml"
    path.write_text(f"all:\n  hosts:\n{hosts}  children:\n{children}", encoding="utf-8")
    return path


def _cluster(groups: int, placement: dict[str, str] | None = None) -> ClusterSpec:
    return ClusterSpec.model_validate({"backend": "ssh", "hosts": "inventory.yaml", "groups": groups,
                                       "placement": placement or {}})


CROSS = ("    namesrv: {hosts: {n1: {}}}\n    master: {hosts: {n2: {}, n3: {}}}\n"
         "    slave: {hosts: {n3: {}, n2: {}}}\n    load: {hosts: {n4: {}}}\n")


def test_one_group_takes_the_first_host_of_each_role(tmp_path: Path) -> None:
    inv = load_inventory(_inventory(tmp_path, CROSS))
    assert placement_from_groups(inv) == ({"namesrv": "n1", "master": "n2", "slave": "n3"}, ["n4"])
    assert placement_from_groups(inv, Topology.of(_cluster(1))) == placement_from_groups(inv)


def test_two_groups_are_placed_crosswise_and_pass_the_check(tmp_path: Path) -> None:
    inv = load_inventory(_inventory(tmp_path, CROSS))
    placement, load = placement_from_groups(inv, Topology.of(_cluster(2)))
    assert placement == {"namesrv": "n1", "broker-a-master": "n2", "broker-a-slave": "n3",
                         "broker-b-master": "n3", "broker-b-slave": "n2"}
    assert load == ["n4"]
    assert _cluster(2, placement).placement == placement


def test_three_groups_wrap_round_and_a_node_group_wins(tmp_path: Path) -> None:
    inv = load_inventory(_inventory(tmp_path, CROSS + "    broker-c-slave: {hosts: {n4: {}}}\n"))
    placement, _ = placement_from_groups(inv, Topology.of(_cluster(3)))
    assert placement["broker-c-master"] == "n2"
    assert placement["broker-c-slave"] == "n4"

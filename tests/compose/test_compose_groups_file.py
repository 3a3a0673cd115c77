"""The groups file of a compose run with several broker groups (harness/backends/compose/groups.py), checked with the
real `docker compose` v2 binary (`config`, which needs no engine) together with the checked-in file it extends: one
service per member of the topology, each with the checked-in `master` / `slave` underneath (image, command, network
mode, cgroup parent, environment) and its own store, logs, conf, limits, health check and dependency (a slave waits
for its own group's master only); the conf files name each member's group and broker id; one group renders none."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml
from compose_support import REPO

from faults.docker import engine
from harness.backends.compose import groups as compose_groups
from harness.backends.compose.layout import ComposeLayout
from harness.scenario import ClusterSpec
from harness.topology import Topology

COMPOSE = REPO / "compose"
NODES = ("broker-a-master", "broker-a-slave", "broker-b-master", "broker-b-slave")


def _layout(tmp_path: Path, cluster: ClusterSpec) -> ComposeLayout:
    top = Topology.of(cluster)
    ports = {n: (24000 + 10 * i, 24001 + 10 * i) for i, n in enumerate(top.broker_nodes)}
    return ComposeLayout(tmp_path, "rmq-chaos-groups", "rmq-chaos/rocketmq-emulator:4.9.1", cluster.version,
                         "-Xms128m -Xmx128m -Xmn64m", "/rmq-chaos/rmq-chaos-groups", 23456, ports,
                         network_mode="container:rmq-chaos-netns-test")


@pytest.mark.parametrize("major", ["4", "5"])
def test_the_groups_file_extends_the_checked_in_file_per_member(tmp_path: Path, major: str) -> None:
    cluster = ClusterSpec(backend="compose", groups=2, version="4.9.1" if major == "4" else "5.3.0")
    layout = _layout(tmp_path, cluster)
    base = COMPOSE / f"rocketmq-{major}.yml"
    groups = compose_groups.write(layout, Topology.of(cluster), base)
    proc = subprocess.run([engine.compose_binary(), "-p", layout.project, "-f", str(base), "-f", str(groups),
                           "config"], capture_output=True, text=True, env={"PATH": "/usr/bin:/bin", **layout.env()},
                          check=False, timeout=60)
    assert proc.returncode == 0, proc.stderr
    services = yaml.safe_load(proc.stdout)["services"]
    assert set(services) == {"namesrv", "master", "slave", *NODES}
    for i, node in enumerate(NODES):
        svc, role = services[node], node.rpartition("-")[2]
        for key in ("image", "command", "network_mode", "cgroup_parent", "environment", "stop_grace_period"):
            assert svc[key] == services[role][key], (node, key)
        assert svc["healthcheck"]["test"][-1] == f"exec 3<>/dev/tcp/127.0.0.1/{24000 + 10 * i}"
        assert svc["healthcheck"]["interval"] == "5s"
        assert {v["target"]: v["source"] for v in svc["volumes"]} == {
            "/home/rocketmq/store": str(tmp_path / node / "store"),
            "/home/rocketmq/logs": str(tmp_path / node / "logs"),
            f"/home/rocketmq/rocketmq-{cluster.version}/conf/broker.conf": str(tmp_path / "conf" / f"{node}.conf")}
        mem, swap = layout.limits(node)
        assert (int(svc["mem_limit"]), int(svc["memswap_limit"])) == (mem, swap)
        wanted = "namesrv" if role == "master" else node.replace("-slave", "-master")
        assert list(svc["depends_on"]) == [wanted], node
    # the checked-in services still resolve, with the first group's ports (they are not started)
    assert services["master"]["healthcheck"]["test"][-1].endswith("/24000")
    assert services["slave"]["healthcheck"]["test"][-1].endswith("/24010")


def test_each_member_conf_names_its_group_and_role(tmp_path: Path) -> None:
    cluster = ClusterSpec(backend="compose", groups=["east", "west"])
    layout = _layout(tmp_path, cluster)
    props = {n: layout.properties(cluster, n) for n in layout.nodes}
    assert list(props) == ["namesrv", "east-master", "east-slave", "west-master", "west-slave"]
    for node in layout.nodes[1:]:
        group, _, role = node.rpartition("-")
        assert (props[node]["brokerName"], props[node]["brokerId"]) == (group, 0 if role == "master" else 1)
        assert props[node]["brokerRole"] == ("SYNC_MASTER" if role == "master" else "SLAVE")
        assert props[node]["listenPort"] == layout.broker_ports[node][0]
        assert props[node]["storePathRootDir"] == "/home/rocketmq/store"


def test_one_group_keeps_the_checked_in_services(tmp_path: Path) -> None:
    cluster = ClusterSpec(backend="compose")
    top = Topology.of(cluster)
    assert top.single and top.node_order == ("namesrv", "master", "slave")
    layout = ComposeLayout(tmp_path, "p", "i", "4.9.1", "", "", 9876, {"master": (10911, 10912),
                                                                       "slave": (10921, 10922)})
    assert layout.nodes == ("namesrv", "master", "slave")
    assert layout.properties(cluster, "slave")["brokerName"] == cluster.broker_name

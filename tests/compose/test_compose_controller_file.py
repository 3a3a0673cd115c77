"""The controller file of a controller-mode compose run (harness/backends/compose/controller_layout.py), checked with
the real `docker compose` v2 binary (`config`, which needs no engine) together with the checked-in 5.x file it
extends: three standalone controllers, each the checked-in `namesrv` underneath with its own command
(`sh mqcontroller -c <conf>`), conf, logs and health check on its DLedger port; every broker of every set the
checked-in `master` underneath with its own store, logs and conf. The conf files are controller_conf's: the brokers
name every controller, the name server embeds the controller only with `controllers: embedded`."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml
from compose_support import REPO

from faults.docker import engine
from harness.backends import controller_conf as conf
from harness.backends.compose.controller_layout import ControllerComposeLayout
from harness.scenario import ClusterSpec
from harness.topology import Topology

BASE = REPO / "compose" / "rocketmq-5.yml"
CTL_PORTS = (25001, 25002, 25003)


def _layout(tmp_path: Path, cluster: ClusterSpec) -> ControllerComposeLayout:
    top = Topology.of(cluster)
    ports = {n: (24000 + 10 * i, 24001 + 10 * i) for i, n in enumerate(top.broker_nodes)}
    return ControllerComposeLayout(tmp_path, "rmq-chaos-ctl", "rmq-chaos/rocketmq-emulator:5.3.0", cluster.version,
                                   "-Xms128m -Xmx128m -Xmn64m", "/rmq-chaos/rmq-chaos-ctl", 23456, ports,
                                   network_mode="container:rmq-chaos-netns-test",
                                   ctl=conf.ControllerLayout(CTL_PORTS[:len(top.controllers) or 1]),
                                   controllers=top.controllers)


def test_three_controllers_and_two_sets_extend_the_checked_in_file(tmp_path: Path) -> None:
    cluster = ClusterSpec(backend="compose", version="5.3.0", mode="controller", controllers=3, groups=2)
    layout, top = _layout(tmp_path, cluster), Topology.of(cluster)
    layout.write(cluster)
    extra = layout.write_services(top, BASE)
    proc = subprocess.run([engine.compose_binary(), "-p", layout.project, "-f", str(BASE), "-f", str(extra),
                           "config"], capture_output=True, text=True, env={"PATH": "/usr/bin:/bin", **layout.env()},
                          check=False, timeout=60)
    assert proc.returncode == 0, proc.stderr
    services = yaml.safe_load(proc.stdout)["services"]
    assert set(services) == {"namesrv", "master", "slave", *top.controllers, *top.broker_nodes}
    target = "/home/rocketmq/rocketmq-5.3.0/conf/controller.conf"
    for i, node in enumerate(top.controllers):
        svc = services[node]
        for key in ("image", "network_mode", "cgroup_parent", "environment", "stop_grace_period"):
            assert svc[key] == services["namesrv"][key], (node, key)
        assert svc["command"] == ["sh", "mqcontroller", "-c", target]
        assert svc["healthcheck"]["test"][-1] == f"exec 3<>/dev/tcp/127.0.0.1/{CTL_PORTS[i]}"
        assert {v["target"]: v["source"] for v in svc["volumes"]} == {
            "/home/rocketmq/logs": str(tmp_path / node / "logs"), target: str(tmp_path / "conf" / f"{node}.conf")}
    for node in top.broker_nodes:
        assert services[node]["command"] == services["master"]["command"]
        assert {v["target"] for v in services[node]["volumes"]} >= {"/home/rocketmq/store", "/home/rocketmq/logs"}
    assert (top.broker_nodes[0], top.broker_nodes[1]) == ("broker-a-0", "broker-a-1")
    assert services["slave"]["healthcheck"]["test"][-1].endswith("/24010")  # the first set's second broker


@pytest.mark.parametrize("controllers", ["embedded", 3])
def test_the_conf_files_are_controller_modes(tmp_path: Path, controllers: object) -> None:
    cluster = ClusterSpec(backend="compose", version="5.3.0", mode="controller", controllers=controllers)
    layout = _layout(tmp_path, cluster)
    props = {n: layout.properties(cluster, n) for n in layout.nodes}
    standalone = [f"controller-{i}" for i in range(3)] if controllers == 3 else []
    assert list(props) == ["namesrv", *standalone, "broker-0", "broker-1"]
    assert props["namesrv"].get("enableControllerInNamesrv", False) is (controllers == "embedded")
    addrs = ";".join(f"127.0.0.1:{p}" for p in CTL_PORTS[:len(standalone) or 1])
    for node in ("broker-0", "broker-1"):
        assert (props[node]["brokerId"], props[node]["enableControllerMode"]) == (-1, True)
        assert props[node]["controllerAddr"] == addrs and props[node]["storePathRootDir"] == "/home/rocketmq/store"
    for i, node in enumerate(standalone):
        assert props[node]["controllerDLegerSelfId"] == f"n{i}"
        assert props[node]["controllerStorePath"] == "/home/rocketmq/controller-store"
        assert layout.addr(node) == f"127.0.0.1:{CTL_PORTS[i]}"

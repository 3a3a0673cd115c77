"""The compose files and conf files of compose/, checked with the real `docker compose` v2 binary (`config`, which
needs no engine): every file is valid with its defaults and with the variables the harness gives it; what they
resolve to (host networking by hand, the run's namespace holder for the harness, ports, cgroup parent, limits,
mounts); the 5.x file has the 4.x file's structure; the
checked-in conf files are what the harness renders for the default ports."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml
from compose_support import REPO

from faults.docker import engine
from harness.backends.brokerconf import render
from harness.backends.compose.layout import ComposeLayout
from harness.scenario import ClusterSpec

COMPOSE = REPO / "compose"
FILES = sorted(COMPOSE.glob("*.yml"))
DEFAULT_PORTS = {"master": (10911, 10912), "slave": (10921, 10922)}


def _config(file: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([engine.compose_binary(), "-f", str(file), "config"], capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", **(env or {})}, check=False, timeout=60)


def _layout(tmp_path: Path, version: str = "4.9.1") -> ComposeLayout:
    return ComposeLayout(tmp_path, "rmq-chaos-test", "rmq-chaos/rocketmq-emulator:4.9.1", version,
                         "-Xms128m -Xmx128m -Xmn64m", "/rmq-chaos/rmq-chaos-test", 23456,
                         {"master": (23460, 23461), "slave": (23470, 23471)}, "127.0.0.1:23480",
                         network_mode="container:rmq-chaos-netns-test")


def test_the_binary_is_the_real_one_with_a_real_exit_code(tmp_path: Path) -> None:
    binary = engine.compose_binary()
    assert Path(binary).name == "docker-compose" and not Path(binary).read_bytes()[:2] == b"#!"
    bad = _config(FILES[0], {"RMQ_MASTER_MEM_LIMIT": "lots"})
    assert bad.returncode != 0 and "mem_limit" in bad.stderr


@pytest.mark.parametrize("file", FILES, ids=[f.name for f in FILES])
def test_every_compose_file_is_valid_with_its_defaults(file: Path) -> None:
    proc = _config(file)
    assert proc.returncode == 0, proc.stderr
    services = yaml.safe_load(proc.stdout)["services"]
    assert set(services) == {"namesrv", "master", "slave"}
    for name, svc in services.items():
        assert svc["network_mode"] == "host", name
        assert svc["healthcheck"]["test"][:3] == ["CMD", "bash", "-c"]
        assert svc["healthcheck"]["interval"] == "1s", name
    assert services["master"]["depends_on"]["namesrv"]["condition"] == "service_healthy"
    assert services["slave"]["depends_on"]["master"]["condition"] == "service_healthy"
    major = file.stem.split("-")[1]
    assert services["master"]["image"].startswith(f"apache/rocketmq:{major}.")
    conf = next(v["source"] for v in services["master"]["volumes"] if v["target"].endswith("/conf/broker.conf"))
    assert Path(conf) == COMPOSE / "conf" / f"{major}.x" / "master.conf"


@pytest.mark.parametrize("file", FILES, ids=[f.name for f in FILES])
def test_every_compose_file_is_valid_with_the_harness_variables(file: Path, tmp_path: Path) -> None:
    layout = _layout(tmp_path)
    proc = _config(file, layout.env())
    assert proc.returncode == 0, proc.stderr
    services = yaml.safe_load(proc.stdout)["services"]
    master = services["master"]
    assert {svc["network_mode"] for svc in services.values()} == {"container:rmq-chaos-netns-test"}
    assert {svc["healthcheck"]["interval"] for svc in services.values()} == {"5s"}
    assert master["image"] == "rmq-chaos/rocketmq-emulator:4.9.1"
    assert master["cgroup_parent"] == "/rmq-chaos/rmq-chaos-test"
    assert master["environment"] == {"NAMESRV_ADDR": "127.0.0.1:23456", "HEAP_OPTS": "-Xms128m -Xmx128m -Xmn64m",
                                     "JAVA_OPT_EXT": "-Xms128m -Xmx128m -Xmn64m"}
    assert master["healthcheck"]["test"][-1] == "exec 3<>/dev/tcp/127.0.0.1/23460"
    assert services["slave"]["healthcheck"]["test"][-1] == "exec 3<>/dev/tcp/127.0.0.1/23470"
    mem, swap = layout.limits("master")
    assert (int(master["mem_limit"]), int(master["memswap_limit"])) == (mem, swap)
    mounts = {v["target"]: v["source"] for v in master["volumes"]}
    assert mounts == {"/home/rocketmq/store": str(tmp_path / "master" / "store"),
                      "/home/rocketmq/logs": str(tmp_path / "master" / "logs"),
                      "/home/rocketmq/rocketmq-4.9.1/conf/broker.conf": str(tmp_path / "conf" / "master.conf")}
    assert master["command"] == ["sh", "mqbroker", "-c", "/home/rocketmq/rocketmq-4.9.1/conf/broker.conf"]
    assert services["namesrv"]["command"][:2] == ["sh", "mqnamesrv"]


def test_the_5x_file_is_the_4x_file_with_other_defaults(tmp_path: Path) -> None:
    env = _layout(tmp_path, "5.3.0").env()
    resolved = [yaml.safe_load(_config(COMPOSE / f"rocketmq-{m}.yml", env).stdout) for m in ("4", "5")]
    for r in resolved:
        r.pop("name")
    assert resolved[0] == resolved[1]


@pytest.mark.parametrize("major", ["4.x", "5.x"])
def test_checked_in_conf_files_are_the_harness_rendering(major: str, tmp_path: Path) -> None:
    layout = ComposeLayout(tmp_path, "p", "i", "4.9.1", "", "", 9876, DEFAULT_PORTS)
    extra = {"namesrv": "", "master": "totalReplicas=2\ninSyncReplicas=2\n",
             "slave": "totalReplicas=2\ninSyncReplicas=2\n"}
    for node in ("namesrv", "master", "slave"):
        text = (COMPOSE / "conf" / major / f"{node}.conf").read_text()
        body = "".join(line + "\n" for line in text.splitlines() if not line.startswith("#"))
        expected = render(layout.properties(ClusterSpec(), node)) + (extra[node] if major == "5.x" else "")
        assert body == expected, node

"""The test image built by compose/image/ (debootstrap + docker import, no registry): the official image's layout and
entry commands, a build that is cached by fingerprint and refuses bad input in one line, and the compose file run
by hand (`docker compose -f compose/rocketmq-4.yml up -d --wait`) with its checked-in conf files."""
from __future__ import annotations

import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from compose_support import BUILD_SCRIPT, REPO
from waiting import poll

from faults.docker import engine
from faults.docker.ops import PROJECT_LABEL
from harness.backends.ports import PortPicker, is_free
from remoting.client import RemotingClient
from remoting.namesrv import NameServerClient

pytestmark = [pytest.mark.root, pytest.mark.docker]
IMAGE = "rmq-chaos/rocketmq-emulator:4.9.1"
HOME = "/home/rocketmq/rocketmq-4.9.1"
DEFAULT_PORTS = (9876, 10909, 10911, 10912, 10919, 10921, 10922)
READY_TIMEOUT_S = 60.0


def _run(args: list[str], **kw) -> str:
    out = engine.client().containers.run(IMAGE, args, remove=True, network_mode="host", **kw)
    return out.decode().strip()


def _wait_port(port: int, deadline_s: float) -> None:
    deadline = time.monotonic() + deadline_s
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise AssertionError(f"nothing listens on 127.0.0.1:{port} after {deadline_s:.0f} s") from None
            time.sleep(0.1)


def test_image_has_the_official_layout(test_image: str) -> None:
    config = engine.client().images.get(IMAGE).attrs["Config"]
    assert config["User"] == "rocketmq"
    assert config["WorkingDir"] == f"{HOME}/bin"
    assert config["Entrypoint"] == ["./docker-entrypoint.sh"]
    assert {"ROCKETMQ_VERSION=4.9.1", f"ROCKETMQ_HOME={HOME}"} <= set(config["Env"])
    assert _run(["sh", "-c", "id -u; id -g; echo $HOME; ls mqnamesrv mqbroker"]).split() == [
        "3000", "3000", "/home/rocketmq", "mqbroker", "mqnamesrv"]
    assert _run(["stat", "-c", "%u", "/home/rocketmq/store", "/home/rocketmq/logs"]).split() == ["3000", "3000"]
    five = engine.client().images.get("rmq-chaos/rocketmq-emulator:5.3.0").attrs["Config"]
    assert "ROCKETMQ_VERSION=5.3.0" in five["Env"] and five["WorkingDir"] == "/home/rocketmq/rocketmq-5.3.0/bin"


def test_entrypoint_runs_the_name_server_and_stop_reaches_it(test_image: str, tmp_path: Path) -> None:
    """`nameserver -c <conf>` as the official entrypoint takes it; the emulator replaces the shell, so `docker stop`'s
    SIGTERM ends it cleanly (exit 0, not SIGKILL's 137)."""
    port = PortPicker().one()
    (tmp_path / "namesrv.conf").write_text(f"listenPort={port}\n")
    ct = engine.client().containers.run(
        IMAGE, ["nameserver", "-c", f"{HOME}/conf/namesrv.conf"], detach=True, network_mode="host",
        volumes={str(tmp_path / "namesrv.conf"): {"bind": f"{HOME}/conf/namesrv.conf", "mode": "ro"}})
    try:
        _wait_port(port, READY_TIMEOUT_S)
        # the port opens just before the line is printed, and docker's log reader may not have it yet
        poll(lambda: "The Name Server boot success" in ct.logs().decode(), READY_TIMEOUT_S, "the boot line")
        ct.stop(timeout=20)
        assert ct.wait(timeout=30)["StatusCode"] == 0
    finally:
        ct.remove(force=True)


def test_build_is_cached_and_refuses_bad_input(test_image: str) -> None:
    again = subprocess.run([str(BUILD_SCRIPT), "4.9.1"], capture_output=True, text=True, timeout=120, check=False)
    assert again.returncode == 0 and "is up to date" in again.stdout, again
    bad = subprocess.run([str(BUILD_SCRIPT), "4.8.0"], capture_output=True, text=True, timeout=60, check=False)
    assert bad.returncode == 2
    assert bad.stderr.splitlines() == ["build-emulator-image.sh: version '4.8.0' not supported; allowed: "
                                       "4.9.0-4.9.8, 5.0.x-5.3.x"]


@pytest.fixture
def by_hand_project(tmp_path: Path, test_image: str) -> Iterator[tuple[str, Path]]:
    taken = [p for p in DEFAULT_PORTS if not is_free(p)]
    if taken:
        pytest.skip(f"the checked-in conf files use ports {DEFAULT_PORTS}; {taken} are in use on this machine")
    project = f"rmq-chaos-byhand-{uuid.uuid4().hex[:8]}"
    data = tmp_path / "data"
    for d in ("namesrv/logs", "master/logs", "master/store", "slave/logs", "slave/store"):
        (data / d).mkdir(parents=True)
    subprocess.run(["chown", "-R", "3000:3000", str(data)], check=True)
    try:
        yield project, data
    finally:
        engine.run_compose(["-p", project, "down", "-v", "-t", "10"], check=False)
        label = {"label": f"{PROJECT_LABEL}={project}"}
        assert not engine.client().containers.list(all=True, filters=label)


def test_compose_file_runs_by_hand(by_hand_project: tuple[str, Path]) -> None:
    project, data = by_hand_project
    env = {"ROCKETMQ_IMAGE": IMAGE, "RMQ_DATA_DIR": str(data)}
    engine.run_compose(["-p", project, "-f", str(REPO / "compose" / "rocketmq-4.yml"), "up", "-d", "--wait",
                        "--pull", "never"], env=env, timeout_s=120)
    client = RemotingClient("127.0.0.1:9876")
    try:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            info = NameServerClient(client).get_cluster_info()
            addrs = {k: v for b in info.broker_addr_table.values() for k, v in b.broker_addrs.items()}
            if addrs == {0: "127.0.0.1:10911", 1: "127.0.0.1:10921"} or time.monotonic() > deadline:
                break
            time.sleep(0.2)
    finally:
        client.shutdown()
    assert addrs == {0: "127.0.0.1:10911", 1: "127.0.0.1:10921"}, "master and slave registered from conf/4.x"
    assert (data / "master" / "store" / "commitlog").is_dir()
    assert (data / "slave" / "logs" / "rocketmqlogs" / "broker.log").is_file()

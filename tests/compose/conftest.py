"""Fixtures of the compose tests, which need nothing but what setup.sh installs: a Docker engine (when none answers,
one is started for the session with `--bridge=none --iptables=false --ip-masq=false --ip-forward=false`, a pidfile
and our own empty config file, and stopped at the end), the test image built locally with no registry (cached by
its tag and the fingerprint of its sources), and a check that iptables is left as it was found. A machine without
docker.io, debootstrap or the compose binary fails these tests with a message saying so; they never skip.

The JVM image (`jvm_image`) is built from the Apache RocketMQ binary distribution at `$ROCKETMQ_HOME`; where none is
set (CI) the tests that need it skip, saying so."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator

import pytest
from compose_support import BUILD_SCRIPT, JVM_BUILD_SCRIPT, JVM_BUILD_TIMEOUT_S, JVM_IMAGE, distribution

DOCKERD_FLAGS = ["--bridge=none", "--iptables=false", "--ip-masq=false", "--ip-forward=false"]
DOCKER_SOCKET = "unix:///var/run/docker.sock"
DOCKERD_PIDFILE = "/run/rmq-chaos-test-dockerd.pid"
ENGINE_START_TIMEOUT_S = 60.0
ENGINE_STOP_TIMEOUT_S = 30.0
IMAGE_VERSIONS = ("4.9.1", "5.3.0")
IMAGE_BUILD_TIMEOUT_S = 600.0
TOOLS = {"dockerd": "docker.io", "containerd": "docker.io", "runc": "docker.io", "debootstrap": "debootstrap"}


def _missing_tools() -> list[str]:
    from faults.system.tools import have_tool

    missing = [f"{tool} (Debian package {pkg})" for tool, pkg in TOOLS.items() if not have_tool(tool)]
    try:
        from faults.docker import engine
        engine.compose_binary()
    except Exception as err:  # noqa: BLE001 - reported below as what is missing
        missing.append(f"docker compose v2 ({err})")
    return missing


def _iptables() -> str:
    if not shutil.which("iptables"):
        return "no iptables"
    out = []
    for table in ("filter", "nat", "mangle"):
        proc = subprocess.run(["iptables", "-t", table, "-S"], capture_output=True, text=True, check=False)
        out.append(f"[{table}] {proc.returncode}\n{proc.stdout}")
    return "\n".join(out)


def _engine_answers() -> bool:
    from faults.docker import engine
    from faults.errors import FaultUnavailable

    engine.reset_client()
    try:
        engine.client()
        return True
    except FaultUnavailable:
        return False


@pytest.fixture(scope="session")
def docker_engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """A Docker engine for the session: the one that answers, else a dockerd started here (and stopped at the end,
    by its own pid). iptables must be the same at the end as at the start."""
    missing = _missing_tools()
    if missing:
        pytest.fail("the compose tests need " + ", ".join(missing) + "; run ./setup.sh (as root)", pytrace=False)
    if os.geteuid() != 0:
        pytest.fail("the compose tests need root (dockerd, loop mounts, cgroups)", pytrace=False)
    before = _iptables()
    started: subprocess.Popen | None = None
    if not _engine_answers():
        work = tmp_path_factory.mktemp("dockerd")
        (work / "daemon.json").write_text("{}\n")  # not /etc/docker/daemon.json: only the flags below apply
        log = open(work / "dockerd.log", "wb")  # noqa: SIM115 - closed at the end of the session
        started = subprocess.Popen(["dockerd", *DOCKERD_FLAGS, "-H", DOCKER_SOCKET, "--pidfile", DOCKERD_PIDFILE,
                                    "--config-file", str(work / "daemon.json")],
                                   stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + ENGINE_START_TIMEOUT_S
        while not _engine_answers():
            if started.poll() is not None or time.monotonic() > deadline:
                started.kill()
                pytest.fail(f"dockerd did not answer within {ENGINE_START_TIMEOUT_S:.0f} s (exit "
                            f"{started.poll()}); log: {work / 'dockerd.log'}", pytrace=False)
            time.sleep(0.2)
    try:
        yield
    finally:
        if started is not None:
            started.send_signal(signal.SIGTERM)
            try:
                started.wait(ENGINE_STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                started.kill()
                started.wait()
            log.close()
        after = _iptables()
        assert after == before, f"iptables changed during the compose tests:\nbefore:\n{before}\nafter:\n{after}"


@pytest.fixture(scope="session")
def test_image(docker_engine: None) -> str:
    """rmq-chaos/rocketmq-emulator:<version> for the versions the tests use, built by compose/image/ (a no-op when
    the images match the sources)."""
    proc = subprocess.run([str(BUILD_SCRIPT), *IMAGE_VERSIONS], capture_output=True, text=True,
                          timeout=IMAGE_BUILD_TIMEOUT_S, check=False)
    if proc.returncode != 0:
        pytest.fail(f"building the test image failed (exit {proc.returncode}): {proc.stderr.strip()[-2000:]}",
                    pytrace=False)
    return "rmq-chaos/rocketmq-emulator:{version}"


@pytest.fixture(scope="session")
def jvm_image(docker_engine: None) -> str:
    """rmq-chaos/rocketmq-jvm:<version> built by compose/image/build-jvm-image.sh from $ROCKETMQ_HOME (a no-op when
    it matches); skips where $ROCKETMQ_HOME is not set."""
    home, version = distribution()
    proc = subprocess.run([str(JVM_BUILD_SCRIPT), "--dist", str(home), version], capture_output=True, text=True,
                          timeout=JVM_BUILD_TIMEOUT_S, check=False)
    if proc.returncode != 0:
        pytest.fail(f"building the JVM image from {home} failed (exit {proc.returncode}): "
                    f"{proc.stderr.strip()[-2000:]}", pytrace=False)
    return JVM_IMAGE.replace("{version}", version)

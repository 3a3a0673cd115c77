"""compose/image/build-jvm-image.sh: an Apache RocketMQ binary distribution (the one at $ROCKETMQ_HOME; these tests
skip where none is set, as in CI) packaged with Debian's headless JRE 17 in the official image's layout; the build
is cached and refuses a distribution of another version in one line; the name server runs through the entrypoint
in a namespace with only loopback, where the JVM binds 0.0.0.0 and the host's namespace sees nothing of it; `docker
stop` reaches the JVM at once, both when the distribution's scripts exec it (the JVM is PID 1) and when they do not
(the entrypoint stays PID 1 and forwards SIGTERM; without it `sh mqnamesrv` as PID 1 ignores SIGTERM)."""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from compose_support import JVM_BUILD_SCRIPT, JVM_BUILD_TIMEOUT_S, distribution

from faults.docker import engine

pytestmark = [pytest.mark.root, pytest.mark.docker]
HEAP = "-Xms128m -Xmx128m -Xmn64m"
READY_TIMEOUT_S = 90.0
STOP_WITHIN_S = 8.0
"""`docker stop` of an idle name server: measured 0.4 s (exec) and 2.2 s (forward) here; the grace is 15 s."""


def dist_hash(home: Path) -> str:
    """sha256 of the `<name> <size>` lines of lib/'s files, sorted: the image's rmq-chaos.dist label."""
    lines = sorted(f"{p.relative_to(home / 'lib')} {p.stat().st_size}\n" for p in (home / "lib").rglob("*")
                   if p.is_file() and not p.is_symlink())
    return hashlib.sha256("".join(lines).encode()).hexdigest()[:16]


def _build(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(JVM_BUILD_SCRIPT), *args], capture_output=True, text=True, check=False,
                          timeout=JVM_BUILD_TIMEOUT_S, env={**os.environ, **(env or {})})


@pytest.fixture
def holder(jvm_image: str) -> Iterator[object]:
    """A namespace with only loopback, as the harness makes for a run (hostname resolving to 127.0.0.1)."""
    ct = engine.client().containers.run(
        jvm_image, [], entrypoint=["sleep", "infinity"], detach=True, network_mode="none",
        hostname="rmq-chaos", extra_hosts={"rmq-chaos": "127.0.0.1"})
    try:
        ct.reload()
        yield ct
    finally:
        ct.remove(force=True)


def _name_server(image: str, holder: object) -> object:
    ct = engine.client().containers.run(image, ["sh", "mqnamesrv"], detach=True,
                                        network_mode=f"container:{holder.id}", environment={"JAVA_OPT_EXT": HEAP})
    deadline = time.monotonic() + READY_TIMEOUT_S
    while "The Name Server boot success" not in ct.logs().decode("utf-8", "replace"):
        ct.reload()
        assert ct.status == "running" and time.monotonic() < deadline, ct.logs().decode()[-2000:]
        time.sleep(0.5)
    return ct


def _listeners(pid: int | None = None) -> str:
    argv = ["ss", "-ltnpH"] if pid is None else ["nsenter", f"--net=/proc/{pid}/ns/net", "--", "ss", "-ltnpH"]
    return subprocess.run(argv, capture_output=True, text=True, check=True).stdout


def _stop(ct: object) -> tuple[float, int]:
    t0 = time.monotonic()
    ct.stop(timeout=15)
    took = time.monotonic() - t0
    return took, ct.wait(timeout=30)["StatusCode"]


def test_image_has_the_official_layout_and_the_distribution(jvm_image: str) -> None:
    home, version = distribution()
    config = engine.client().images.get(jvm_image).attrs["Config"]
    rmq_home = f"/home/rocketmq/rocketmq-{version}"
    assert config["User"] == "rocketmq" and config["WorkingDir"] == f"{rmq_home}/bin"
    assert config["Entrypoint"] == ["./docker-entrypoint.sh"]
    env = dict(e.split("=", 1) for e in config["Env"])
    assert env["ROCKETMQ_VERSION"] == version and env["ROCKETMQ_HOME"] == rmq_home
    labels = config["Labels"]
    assert labels["rmq-chaos.program"] == "apache" and labels["rmq-chaos.image"] == "jvm"
    assert labels["rmq-chaos.dist"] == dist_hash(home) and labels["rmq-chaos.dist-version"] == version
    assert labels["rmq-chaos.jre"].startswith("openjdk-17-jre-headless=17.")
    assert env["RMQ_ENTRYPOINT"] == labels["rmq-chaos.pid1"] in ("exec", "forward")
    out = engine.client().containers.run(
        jvm_image, ["sh", "-c", "id -u; id -g; echo $HOME; stat -c %u /home/rocketmq/store /home/rocketmq/logs; "
                    "ls ../lib; java -version 2>&1 | head -1"], remove=True, network_mode="none").decode()
    lines = out.splitlines()
    assert lines[:5] == ["3000", "3000", "/home/rocketmq", "3000", "3000"], out
    assert sorted(lines[5:-1]) == sorted(p.name for p in (home / "lib").iterdir()), "the distribution's lib/"
    assert re.match(r'openjdk version "17\.', lines[-1]), lines[-1]


def test_build_is_cached_and_refuses_another_version(jvm_image: str) -> None:
    home, version = distribution()
    again = _build("--dist", str(home), version)
    assert again.returncode == 0 and "is up to date" in again.stdout, again
    other = "5.3.0" if version != "5.3.0" else "4.9.1"
    bad = _build("--dist", str(home), other)
    assert bad.returncode == 2
    assert bad.stderr.splitlines() == [f"build-jvm-image.sh: --dist {os.path.abspath(home)} is RocketMQ {version}, not "
                                       f"{other}; allowed: a distribution of {other}, or version {version}"]
    missing = _build(version)
    assert missing.returncode == 2 and missing.stderr.splitlines() == [
        "build-jvm-image.sh: give the distribution: --dist DIR (an unpacked rocketmq-all-<version>-bin-release)"]


def test_name_server_binds_only_inside_and_stop_reaches_the_jvm(jvm_image: str, holder: object) -> None:
    ct = _name_server(jvm_image, holder)
    try:
        top = ct.top(ps_args="-eo pid,ppid,args")["Processes"]
        java = [row for row in top if "java" in row[2].split()[0]]
        assert len(java) == 1, top
        if engine.client().images.get(jvm_image).labels["rmq-chaos.pid1"] == "exec":
            assert int(java[0][0]) == ct.attrs["State"]["Pid"], "the JVM replaced `sh mqnamesrv`: it is PID 1"
        inside = _listeners(holder.attrs["State"]["Pid"])
        assert re.search(rf"0\.0\.0\.0:9876 .*pid={java[0][0]},", inside), inside
        assert not re.search(rf"pid={java[0][0]},", _listeners()), "nothing of it in the host's namespace"
        took, status = _stop(ct)
        assert status == 143, "the JVM ended on SIGTERM (128 + 15), not docker's SIGKILL (137)"
        assert took < STOP_WITHIN_S
    finally:
        ct.remove(force=True)


@pytest.fixture
def forward_image(jvm_image: str, tmp_path: Path) -> Iterator[str]:
    """The distribution with `exec` taken out of its launch scripts (as Apache's releases have them), built into a
    throw-away tag."""
    home, version = distribution()
    copy = tmp_path / "dist"
    shutil.copytree(home, copy, symlinks=False, ignore=shutil.ignore_patterns("benchmark"))
    for name in ("mqnamesrv", "mqbroker", "runserver.sh", "runbroker.sh"):
        script = copy / "bin" / name
        script.write_text(re.sub(r"(?m)^(\s*)exec ", r"\1", script.read_text()))
    repository = "rmq-chaos/rocketmq-jvm-test-forward"
    proc = _build("--dist", str(copy), version, env={"RMQ_JVM_IMAGE": repository})
    assert proc.returncode == 0, proc.stderr
    try:
        yield f"{repository}:{version}"
    finally:
        engine.client().images.remove(f"{repository}:{version}", force=True)


def test_scripts_without_exec_get_a_forwarding_pid_1(forward_image: str, holder: object) -> None:
    assert engine.client().images.get(forward_image).labels["rmq-chaos.pid1"] == "forward"
    ct = _name_server(forward_image, holder)
    try:
        top = ct.top(ps_args="-eo pid,args")["Processes"]
        assert "docker-entrypoint.sh" in top[0][1] and any("java" in row[1].split()[0] for row in top[1:]), top
        took, status = _stop(ct)
        assert status == 143 and took < STOP_WITHIN_S, (took, status)
    finally:
        ct.remove(force=True)

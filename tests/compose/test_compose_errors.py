"""Bad input for the compose backend: one line naming the file, key and allowed values, exit 2, and nothing made
(no run directory, no state directory, no container)."""
from __future__ import annotations

from pathlib import Path

import pytest
from compose_support import REPO, rmq_chaos_run

SEED = str(REPO / "scenarios" / "slave-readonly-default.yaml")


def _refused(args: list[str], tmp_path: Path, **env: str) -> list[str]:
    state, out = tmp_path / "state", tmp_path / "runs"
    proc = rmq_chaos_run([*args, "--out", str(out)] if args[0] == "run" else args, state, **env)
    assert proc.returncode == 2, proc
    assert not state.exists() and not out.exists(), "nothing is made for bad input"
    return proc.stderr.splitlines()


def test_no_engine_is_one_line(tmp_path: Path) -> None:
    lines = _refused(["run", SEED, "--backend", "compose"], tmp_path, DOCKER_HOST="unix:///nonexistent.sock")
    assert len(lines) == 1 and lines[0].startswith(
        f"{SEED}: cluster.backend compose: no Docker engine answers at unix:///nonexistent.sock: ")


@pytest.mark.docker
def test_missing_image_is_one_line_and_nothing_is_pulled(tmp_path: Path, docker_engine: None) -> None:
    lines = _refused(["run", SEED, "--backend", "compose", "--image", "rmq-chaos/no-such-image:{version}"],
                     tmp_path)
    assert lines == [f"{SEED}: image rmq-chaos/no-such-image:4.9.1 is not present on this Docker engine (nothing is "
                     "pulled); build the test image with `sudo compose/image/build-emulator-image.sh 4.9.1`, or "
                     "`docker pull rmq-chaos/no-such-image:4.9.1` where a registry is reachable; choose another with "
                     "cluster.image, --image or $ROCKETMQ_IMAGE"]


@pytest.mark.docker
def test_image_of_another_version_is_refused(tmp_path: Path, test_image: str) -> None:
    lines = _refused(["run", SEED, "--backend", "compose", "--image", "rmq-chaos/rocketmq-emulator:5.3.0"], tmp_path)
    assert lines == [f"{SEED}: image rmq-chaos/rocketmq-emulator:5.3.0 runs RocketMQ 5.3.0 (its ROCKETMQ_VERSION), "
                     "the scenario asks for 4.9.1; allowed: an image of 4.9.1 (e.g. a name with '{version}'), or "
                     "cluster.version 5.3.0"]


def test_bad_image_reference_is_one_line(tmp_path: Path) -> None:
    lines = _refused(["run", SEED, "--backend", "compose", "--image", "Bad Image"], tmp_path)
    assert lines == [f"{SEED}: cluster.image: 'Bad Image' is not an image reference; allowed: "
                     "[registry/]name[:tag][@sha256:digest], '{version}' standing for cluster.version"]


@pytest.mark.parametrize(("cluster", "line", "message"), [
    ("{backend: compose, program: apache}", 2,
     "cluster.program: 'apache' runs the distribution at $ROCKETMQ_HOME on this machine; with backend compose the "
     "image is the program (cluster.image); allowed: emulator, or backend local"),
    ("{image: 'rmq-chaos/rocketmq-emulator:4.9.1'}", 2,
     "cluster.image: applies to backend compose only; allowed: backend compose, or no image"),
    ("{backend: swarm}", 2, "cluster.backend: 'swarm' is not allowed; allowed: local, compose, ssh"),
])
def test_scenario_keys_of_the_compose_backend_are_checked(tmp_path: Path, cluster: str, line: int,
                                                          message: str) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text(f"name: s\ncluster: {cluster}\nphases: [{{name: x, duration: 1s}}]\n")
    assert _refused(["validate", str(scenario)], tmp_path) == [f"{scenario}:{line}: {message}"]


def test_backend_override_is_checked_like_the_file(tmp_path: Path) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text("name: s\ncluster: {program: apache}\nphases: [{name: x, duration: 1s}]\n")
    lines = _refused(["run", str(scenario), "--backend", "compose"], tmp_path)
    assert lines == [f"{scenario}: cluster.program: 'apache' runs the distribution at $ROCKETMQ_HOME on this "
                     "machine; with backend compose the image is the program (cluster.image); allowed: emulator, "
                     "or backend local"]

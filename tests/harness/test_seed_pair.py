"""End to end on the embedded cluster, from the ready scenario files: the seed pair of the read-only slave incident
(4.9.1 profile), default vs lowered haSlaveFallbehindMax. The run directories must show what the real broker did
(shared/fixtures/README.md), every request must be recorded, and nothing may stay mounted, running or faulted."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import seed_checks
from runsupport import REPO, assert_nothing_left, rmq_chaos, run_dir_of

pytestmark = [pytest.mark.root, pytest.mark.spark]
RUN_TIMEOUT_S = 420


def _run(scenario: str, tmp_path: Path, args: tuple[str, ...] = ()) -> tuple[int, Path, Path]:
    state, out = tmp_path / "state", tmp_path / "runs"
    proc = rmq_chaos(["run", str(REPO / "scenarios" / scenario), "--out", str(out), *args], state)
    try:
        code = proc.wait(RUN_TIMEOUT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
            rmq_chaos(["cleanup"], state).wait(120)
    return code, run_dir_of(out), state


FULL = os.environ.get("RMQ_CHAOS_FULL_TESTS") == "1"
LOCAL_IN_FULL = pytest.mark.skipif(
    not FULL, reason="~120 s each: the default run takes the 1 MiB file through ssh with these same checks "
                     "(tests/hosts/test_ssh_seed.py) and the default file through compose; the local backend runs "
                     "whole scenarios in the consumer, backlog, rate-search, controller and shortfall tests; "
                     "RMQ_CHAOS_FULL_TESTS=1")


def _check(scenario: str, tmp_path: Path, args: tuple[str, ...]) -> None:
    code, run_dir, state = _run(scenario, tmp_path, args)
    seed_checks.the_incident(scenario, run_dir)
    assert_nothing_left(state, run_dir.name)
    assert code == 0, "every expectation of the scenario held (report/verdict.json)"


@pytest.mark.long
@LOCAL_IN_FULL
def test_slave_readonly_default(tmp_path: Path) -> None:
    _check("slave-readonly-default.yaml", tmp_path, ())


@pytest.mark.long
@LOCAL_IN_FULL
def test_slave_readonly_fallbehind_1m(tmp_path: Path) -> None:
    _check("slave-readonly-fallbehind-1m.yaml", tmp_path, ())


@pytest.mark.skipif(not os.environ.get("ROCKETMQ_HOME"),
                    reason="needs an Apache RocketMQ 4.9.1 binary distribution at $ROCKETMQ_HOME; none can be "
                           "downloaded on the build machines, so the apache program path is exercised only where "
                           "one is installed")
@pytest.mark.parametrize("scenario", list(seed_checks.BY_SCENARIO), ids=["default", "fallbehind-1m"])
def test_seed_pair_on_apache(tmp_path: Path, scenario: str) -> None:
    """The same scenario files and the same assertions on the real broker (`--program apache`)."""
    _check(scenario, tmp_path, ("--program", "apache"))


def test_apache_program_without_rocketmq_home_starts_nothing(tmp_path: Path) -> None:
    scenario = tmp_path / "apache.yaml"
    scenario.write_text("name: a\ncluster: {program: apache}\nphases: [{name: x, duration: 1s}]\n")
    env_state = tmp_path / "state"
    proc = rmq_chaos(["run", str(scenario), "--out", str(tmp_path / "runs")], env_state, stderr=subprocess.PIPE,
                     text=True, env_drop=("ROCKETMQ_HOME",))
    err = proc.communicate(timeout=60)[1]
    assert proc.returncode == 2
    assert err.splitlines() == [f"{scenario}: cluster.program is apache but $ROCKETMQ_HOME is not set; set it to an "
                                "unpacked rocketmq-all-<version>-bin-release directory"]
    assert not env_state.exists() and not (tmp_path / "runs").exists()


def _fake_distribution(home: Path, version: str) -> None:
    """Only what the version check looks at: executable scripts and the broker jar's name (nothing can run)."""
    (home / "bin").mkdir(parents=True)
    (home / "lib").mkdir()
    for script in ("mqnamesrv", "mqbroker"):
        (home / "bin" / script).write_text("#!/bin/sh\nexit 1\n")
        (home / "bin" / script).chmod(0o755)
    (home / "lib" / f"rocketmq-broker-{version}.jar").write_bytes(b"")


@pytest.mark.parametrize(("command", "home_setting"), [(["run"], "rocketmq-4.9.3"), (["cluster", "up"], "rocketmq-4.9.3"),
                                                      (["run"], "rocketmq-{version}")])
def test_apache_distribution_of_another_version_is_refused(tmp_path: Path, command: list[str],
                                                           home_setting: str) -> None:
    home = tmp_path / "rocketmq-4.9.3"
    _fake_distribution(home, "4.9.3")
    if "{version}" in home_setting:  # resolves to rocketmq-4.9.1, which holds a 4.9.3 distribution
        home = tmp_path / "rocketmq-4.9.1"
        _fake_distribution(home, "4.9.3")
    scenario = tmp_path / "s.yaml"
    scenario.write_text('name: a\ncluster: {version: "4.9.1"}\nphases: [{name: x, duration: 1s}]\n')
    state = tmp_path / "state"
    proc = rmq_chaos([*command, str(scenario), "--program", "apache", "--out", str(tmp_path / "runs")], state,
                     stderr=subprocess.PIPE, text=True, env_set={"ROCKETMQ_HOME": str(tmp_path / home_setting)})
    err = proc.communicate(timeout=60)[1]
    assert proc.returncode == 2
    assert err.splitlines() == [f"{scenario}: $ROCKETMQ_HOME={home} is RocketMQ 4.9.3 but cluster.version is 4.9.1; "
                                "allowed: a distribution of 4.9.1, or cluster.version 4.9.3"]
    assert not state.exists() and not (tmp_path / "runs").exists()

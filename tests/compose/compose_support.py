"""Helpers of the compose tests: running `rmq-chaos` as a child with its own state dir and the locally built image,
reading a run directory back, and measuring what a compose run could leave behind (containers, networks and volumes
of its project, its network namespace holder, mounts and loop devices under the state dir, cgroup dirs, journal entries, cluster state files,
processes carrying our tags)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from faults.docker.ops import PROJECT_LABEL
from faults.journal import Journal
from faults.system.procs import TAG_ENV, tagged
from harness.backends.compose.netns import STATE_LABEL

REPO = Path(__file__).resolve().parents[2]
TEST_IMAGE = "rmq-chaos/rocketmq-emulator:{version}"
BUILD_SCRIPT = REPO / "compose" / "image" / "build-emulator-image.sh"
JVM_BUILD_SCRIPT = REPO / "compose" / "image" / "build-jvm-image.sh"
JVM_IMAGE = "rmq-chaos/rocketmq-jvm:{version}"
JVM_BUILD_TIMEOUT_S = 900.0


def cli_env(state: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != TAG_ENV}
    env.update({"RMQ_CHAOS_STATE": str(state), "PYTHONPATH": str(REPO), "ROCKETMQ_IMAGE": TEST_IMAGE, **extra})
    return env


def rmq_chaos(args: list[str], state: Path, **kw: Any) -> subprocess.Popen:
    env = cli_env(state, **kw.pop("env", {}))
    return subprocess.Popen([sys.executable, "-m", "harness.cli", *args], cwd=REPO, env=env, **kw)


def rmq_chaos_run(args: list[str], state: Path, timeout_s: float = 120.0, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], cwd=REPO, env=cli_env(state, **env),
                          capture_output=True, text=True, timeout=timeout_s, check=False)


def compose_run(scenario: Path, tmp_path: Path, image: str, timeout_s: float, *extra: str
                ) -> tuple[int, Path, Path]:
    """`rmq-chaos run <scenario> --backend compose --image <image> [extra]` as a user runs it: (exit code, run dir,
    state dir). A run still going at `timeout_s` is killed and its state cleaned up."""
    state, out = tmp_path / "state", tmp_path / "runs"
    proc = rmq_chaos(["run", str(scenario), "--backend", "compose", *extra, "--image", image, "--out", str(out)],
                     state)
    try:
        code = proc.wait(timeout_s)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
            rmq_chaos_run(["cleanup"], state, timeout_s=180)
    return code, run_dir_of(out), state


def valid_compose_run(scenario: Path, tmp_path: Path, image: str, timeout_s: float, *extra: str
                      ) -> tuple[Path, dict, Path]:
    """`compose_run` on the emulator program that exited 0 with every expectation held: (run dir, verdict, state)."""
    code, run_dir, state = compose_run(scenario, tmp_path, image, timeout_s, "--program", "emulator", *extra)
    verdict = json.loads((run_dir / "report" / "verdict.json").read_text())
    bad = [(r["name"], r["status"], r["measured"]) for r in verdict["expectations"] if r["status"] != "held"]
    assert code == 0 and not bad, bad
    return run_dir, verdict, state


def run_dir_of(out: Path) -> Path:
    dirs = [d for d in out.iterdir() if d.is_dir()]
    assert len(dirs) == 1, dirs
    return dirs[0]


def events(run_dir: Path) -> list[dict]:
    out = []
    for line in (run_dir / "events.jsonl").read_text().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            pass
    return out


def rows(directory: Path) -> list[dict]:
    return [r for p in sorted(directory.glob("part-*.parquet")) for r in pq.read_table(p).to_pylist()]


def leftovers(state: Path, project: str) -> dict[str, list]:
    """Everything of a compose run still on the machine."""
    from faults.docker import engine

    client = engine.client()
    label = {"label": f"{PROJECT_LABEL}={project}"}
    journal = Journal(state)
    entries = journal.entries() if (state / "journal.jsonl").exists() else []
    loops = subprocess.run(["losetup", "-a"], capture_output=True, text=True, check=False).stdout.splitlines()
    holders = {"label": f"{STATE_LABEL}={state.resolve()}"}
    return {
        "containers": [c.name for c in client.containers.list(all=True, filters=label)],
        "netns_holders": [c.name for c in client.containers.list(all=True, filters=holders)],
        "networks": [n.name for n in client.networks.list(filters=label)],
        "volumes": [v.name for v in client.volumes.list(filters=label)],
        "mounts": [line for line in Path("/proc/mounts").read_text().splitlines() if str(state) in line],
        "loop_devices": [line for line in loops if str(state) in line],
        "cgroups": [str(p) for p in Path("/sys/fs/cgroup").glob(f"*/rmq-chaos/{project}")],
        "open_entries": [f"{e.kind} {e.id}" for e in entries if e.open],
        "processes": [p.pid for p in tagged({e.id for e in entries})],
        "cluster_states": [p.name for p in (state / "clusters").glob("*.json")] if (state / "clusters").exists()
        else [],
        "swap": [line for line in Path("/proc/swaps").read_text().splitlines()[1:] if str(state) in line],
    }


def assert_nothing_left(state: Path, project: str, deadline_s: float = 30.0) -> None:
    deadline = time.monotonic() + deadline_s
    while True:
        left = leftovers(state, project)
        if not any(left.values()):
            return
        if time.monotonic() >= deadline:
            raise AssertionError(f"left behind: {left}")
        time.sleep(0.2)


def project_of(run_dir: Path) -> str:
    return json.loads((run_dir / "cluster.json").read_text())["compose_project"]


def distribution() -> tuple[Path, str]:
    """The Apache RocketMQ binary distribution at $ROCKETMQ_HOME and its version; skips the test without one."""
    from harness.backends.programs import ROCKETMQ_HOME_ENV, distribution_version

    home = os.environ.get(ROCKETMQ_HOME_ENV)
    if not home:
        pytest.skip(f"${ROCKETMQ_HOME_ENV} is not set: the JVM image is built from an Apache RocketMQ binary "
                    "distribution, and none is on this machine")
    version = distribution_version(Path(home))
    if version is None:
        pytest.skip(f"${ROCKETMQ_HOME_ENV}={home} is not an Apache RocketMQ binary distribution (no single "
                    "lib/rocketmq-broker-<version>.jar)")
    return Path(home), version


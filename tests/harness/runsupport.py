"""Helpers of the harness's end-to-end tests: running `rmq-chaos` as a child process with its own state dir, reading
a run directory back, and proving that nothing a run made is left on the machine."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from faults.journal import Journal
from faults.system.procs import TAG_ENV

REPO = Path(__file__).resolve().parents[2]
FULL_ENV = "RMQ_CHAOS_FULL_TESTS"


def full_only(cost: str) -> list:
    """Marks of a scenario test left out of the default run for the suite's time (`cost`, e.g. "~2 min"): long, and
    skipped unless RMQ_CHAOS_FULL_TESTS=1."""
    return [pytest.mark.long, pytest.mark.skipif(os.environ.get(FULL_ENV) != "1",
                                                 reason=f"{cost} of the suite's 20 minutes: {FULL_ENV}=1")]


def cli_env(state: Path, drop: tuple[str, ...] = (), add: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != TAG_ENV and k not in drop}
    env.update(add or {})
    env["RMQ_CHAOS_STATE"] = str(state)
    env["PYTHONPATH"] = str(REPO)
    return env


def rmq_chaos(args: list[str], state: Path, env_drop: tuple[str, ...] = (), env_set: dict[str, str] | None = None,
              **kw: Any) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "harness.cli", *args], cwd=REPO,
                            env=cli_env(state, env_drop, env_set), **kw)


def end_run(proc: subprocess.Popen, state: Path) -> None:
    """A test's last word on its `rmq-chaos run`: kill it if it still runs (its own pid), then `rmq-chaos cleanup`
    of its state dir, so nothing of the run outlives the test whatever failed."""
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    rmq_chaos(["cleanup"], state).wait(180)


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


def fault_event(evs: list[dict], fault_id: str, action: str, status: str = "ok") -> dict:
    """The first `fault` event of `fault_id` with this action and status (StopIteration if there is none)."""
    return next(e for e in evs if e["event"] == "fault" and e.get("fault_id") == fault_id
                and e["action"] == action and e["status"] == status)


def wait_for_event(run_dir_parent: Path, pred: Any, deadline_s: float, proc: subprocess.Popen) -> dict:
    """Poll the run's events.jsonl until an event satisfies `pred` (the run must still be going)."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"rmq-chaos exited early with {proc.returncode}"
        dirs = [d for d in run_dir_parent.iterdir() if d.is_dir()] if run_dir_parent.exists() else []
        if dirs and (dirs[0] / "events.jsonl").exists():
            for e in events(dirs[0]):
                if pred(e):
                    return e
        time.sleep(0.1)
    raise AssertionError(f"no such event within {deadline_s}s")


def diagnosed(run_dir: Path) -> list:
    """`rmq-chaos diagnose`'s findings (ranked) on a run directory's gathered logs."""
    from harness.diagnose import rank, scan

    return rank(scan([str(run_dir / "logs")])[0])


def shortened(source: Path, tmp_path: Path, replacements: tuple[tuple[str, str], ...]) -> Path:
    """A copy of the scenario file `source` in `tmp_path` with each (old, new) replaced once; every old text must
    be there (a test shortening phases fails loudly when the file it shortens changed)."""
    text = source.read_text(encoding="utf-8")
    for old, new in replacements:
        assert old in text, old
        text = text.replace(old, new, 1)
    out = tmp_path / source.name
    out.write_text(text, encoding="utf-8")
    return out


def one_shrink_pair_space(tmp_path: Path, budget_time: str) -> Path:
    """A copy of scenarios/explore/pair-4.9.1.yaml for one explored and one shrinking run within `budget_time` (its
    scenario named by its absolute path, as the copy lives elsewhere)."""
    return shortened(REPO / "scenarios" / "explore" / "pair-4.9.1.yaml", tmp_path, (
        ("scenario: ../slave-frozen.yaml", f"scenario: {REPO / 'scenarios' / 'slave-frozen.yaml'}"),
        ("budget: {runs: 1, time: 4m, shrink_runs: 2}", f"budget: {{runs: 1, time: {budget_time}, shrink_runs: 1}}")))


def explored_and_shrunk(out: Path) -> list[Path]:
    """What an explore run of `one_shrink_pair_space` must have written under `out`: one explored run that failed,
    one shrinking run that dropped a fault and still failed on the first run's cluster (`cluster: reuse`),
    `minimal.yaml`; the two runs' directories."""
    (root,) = [d for d in out.iterdir() if d.is_dir()]
    records = [json.loads(line) for line in (root / "schedules.jsonl").read_text().splitlines()]
    assert [(r["stage"], r["verdict"]) for r in records] == [("explore", "fail"), ("shrink", "fail")], records
    assert [r["cluster"] for r in records] == ["fresh", "reused"], records
    assert records[0]["faults"] == 2 and records[1]["faults"] == 1
    assert (root / "minimal.yaml").exists()
    return [root / "runs" / r["run_id"] for r in records]


def rows(directory: Path) -> list[dict]:
    parts = sorted(directory.glob("part-*.parquet"))
    return [r for p in parts for r in pq.read_table(p).to_pylist()]


def tagged_processes(tags: set[str]) -> list[int]:
    """Pids whose environment carries one of our journal tags (processes the run spawned, and their children)."""
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            env = (d / "environ").read_bytes()
        except OSError:
            continue
        for item in env.split(b"\0"):
            if item.startswith(TAG_ENV.encode() + b"=") and item.split(b"=", 1)[1].decode() in tags:
                found.append(int(d.name))
    return found


def processes_mentioning(text: str) -> list[int]:
    """Pids whose command line contains `text` as a whole name (e.g. the load's children, which name the run
    directory): not followed by a word character or `-`, so run `<id>` does not match run `<id>-2`, which another
    worker started in the same second."""
    found = []
    pattern = re.compile(re.escape(text.encode()) + rb"(?![-\w])")
    for d in Path("/proc").iterdir():
        if d.name.isdigit() and int(d.name) != os.getpid():
            try:
                if pattern.search((d / "cmdline").read_bytes()):
                    found.append(int(d.name))
            except OSError:
                continue
    return found


def leftovers(state: Path, run_id: str) -> dict[str, list]:
    """Everything of `run_id` still on the machine: open journal entries, processes with our tags, mounts and loop
    devices under the state dir, cgroup dirs of the run, cluster state files."""
    journal = Journal(state)
    entries = journal.entries() if (state / "journal.jsonl").exists() else []
    tags = {e.id for e in entries}
    mounts = [line for line in Path("/proc/mounts").read_text().splitlines() if str(state) in line]
    loops = subprocess.run(["losetup", "-a"], capture_output=True, text=True, check=False).stdout.splitlines()
    cgroups = [str(p) for p in Path("/sys/fs/cgroup").glob(f"*/rmq-chaos/{run_id}")]
    return {
        "open_entries": [f"{e.kind} {e.id}" for e in entries if e.open],
        "processes": tagged_processes(tags) + processes_mentioning(run_id),
        "mounts": mounts,
        "loop_devices": [line for line in loops if str(state) in line],
        "cgroups": cgroups,
        "cluster_states": [p.name for p in (state / "clusters").glob("*.json")] if (state / "clusters").exists()
        else [],
    }


def assert_nothing_left(state: Path, run_id: str, deadline_s: float = 30.0) -> None:
    deadline = time.monotonic() + deadline_s
    while True:
        left = leftovers(state, run_id)
        if not any(left.values()):
            return
        if time.monotonic() >= deadline:
            raise AssertionError(f"left behind: {left}")
        time.sleep(0.2)


@contextmanager
def valid_run(scenario: Path, tmp_path: Path, wait_s: float = 600, only: str | None = None
              ) -> Iterator[tuple[Path, dict]]:
    """`rmq-chaos run <scenario> --program emulator [--only <only>]` as a user runs it: yields (run dir,
    verdict.json) once the run exited 0 with every expectation held; after the caller's checks, nothing of the run
    may be left."""
    state, out = tmp_path / "state", tmp_path / "runs"
    proc = rmq_chaos(["run", str(scenario), "--out", str(out), "--program", "emulator",
                      *(["--only", only] if only else [])], state)
    try:
        code = proc.wait(wait_s)
        run_dir = run_dir_of(out)
        verdict = json.loads((run_dir / "report" / "verdict.json").read_text())
        bad = [(r["name"], r["status"], r["measured"]) for r in verdict["expectations"] if r["status"] != "held"]
        assert code == 0 and not bad, bad
        yield run_dir, verdict
        assert_nothing_left(state, run_dir.name)
    finally:
        end_run(proc, state)

"""SIGINT at random moments of shipped scenarios (issue 25): what a Ctrl-C does to a run, round by round.

Each round starts `rmq-chaos run SCENARIO` on the emulator with its own state and run directories, waits until the
load has started, sends SIGINT at a moment drawn uniformly over the scenario's phases, and then reads the run back:

- `exit`: the run's exit code (2 when it was interrupted; 0/1 when the signal came after the phases);
- `cut`: the phase the signal cut (`run_interrupted`'s phase);
- `failed`: expectations FAILED (the wind-down must never cause one: every expectation of the cut phase is unknown);
- `after_stop`: request rows that ended after `load_stop` (must be 0: nothing recorded while faults are reverted);
- `mislabelled`: rows intended after the signal but labelled with a phase instead of `interrupted` (must be 0);
- `stop_s`: seconds from the signal to `load_stop` (the load stops first);
- `revert_s`: seconds from the signal to the last fault revert finished;
- `left`: what `faults.leftovers` finds of the run's state dir after the run exited (must be empty), and the exit
  code of a following `rmq-chaos cleanup` (0).

Figures only, no assertion; a summary line at the end counts rounds that broke a promise.

    sudo .venv/bin/python benchmarks/sigint_rounds.py --rounds 10 \
        scenarios/slave-readonly-default.yaml scenarios/slave-readonly-fallbehind-1m.yaml
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq
import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from faults.leftovers import scan_leftovers  # noqa: E402
from harness.rundir import RunDir  # noqa: E402
from harness.scenario.units import parse_duration  # noqa: E402


def phases_s(scenario: Path) -> float:
    doc = yaml.safe_load(scenario.read_text())
    return sum(parse_duration(p["duration"]) for p in doc["phases"])


def read_events(run_dir: Path) -> list[dict]:
    return RunDir(run_dir).events()


def wait_load_start(out: Path, proc: subprocess.Popen, timeout_s: float = 300) -> tuple[Path, float]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and proc.poll() is None:
        for run_dir in out.glob("*/"):
            events = run_dir / "events.jsonl"
            if events.exists() and any(e.get("event") == "phase_start" for e in read_events(run_dir)):
                return run_dir, time.time()
        time.sleep(0.1)
    raise SystemExit(f"the run did not start its phases within {timeout_s:.0f} s (exit {proc.poll()})")


def request_rows(run_dir: Path) -> list[dict]:
    rows: list[dict] = []
    for part in sorted((run_dir / "requests").glob("part-*.parquet")):
        try:
            rows.extend(pq.read_table(part, columns=["phase", "intended_ns", "end_ns"]).to_pylist())
        except Exception:  # noqa: BLE001 - a part cut by the kill is counted, not fatal to the benchmark
            pass
    return rows


def one_round(scenario: Path, total_s: float, rng: random.Random, work: Path, env: dict) -> dict:
    state, out = work / "state", work / "runs"
    env = {**env, "RMQ_CHAOS_STATE": str(state)}
    cmd = [sys.executable, "-m", "harness.cli", "run", str(scenario), "--out", str(out), "--program", "emulator"]
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        run_dir, started = wait_load_start(out, proc)
        delay = rng.uniform(0, total_s)
        time.sleep(max(0.0, started + delay - time.time()))
        signalled_ns = time.time_ns()
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    ev = read_events(run_dir)
    cut = next((e for e in ev if e["event"] == "run_interrupted"), None)
    stop = next((e for e in ev if e["event"] == "load_stop"), None)
    reverts = [e["wall_ns"] for e in ev if e["event"] == "fault" and e.get("action") == "revert"
               and e.get("status") in ("ok", "done", "reverted")]
    rows = request_rows(run_dir)
    verdict_path = run_dir / "report" / "verdict.json"
    verdict = json.loads(verdict_path.read_text()) if verdict_path.exists() else {"expectations": []}
    left = scan_leftovers(state, [str(out)])
    cleanup = subprocess.run([sys.executable, "-m", "harness.cli", "cleanup"], cwd=REPO, env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
    interrupt_ns = cut["wall_ns"] if cut else signalled_ns
    return {
        "at_s": round(delay, 1), "exit": proc.returncode, "cut": cut["phase"] if cut else None,
        "failed": [e["name"] for e in verdict["expectations"] if e["status"] == "failed"],
        "after_stop": sum(1 for r in rows if stop and r["end_ns"] > stop["wall_ns"]),
        "mislabelled": sum(1 for r in rows if cut and r["intended_ns"] > interrupt_ns and r["phase"] != "interrupted"),
        "stop_s": round((stop["wall_ns"] - signalled_ns) / 1e9, 2) if stop else None,
        "revert_s": round((max(reverts) - signalled_ns) / 1e9, 2) if reverts and cut else None,
        "left": left, "cleanup_exit": cleanup,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("scenarios", nargs="+", type=Path)
    ap.add_argument("--rounds", type=int, default=10, help="rounds per scenario (default 10)")
    ap.add_argument("--seed", type=int, default=25)
    args = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("sigint_rounds: run as root (the runs make loop mounts and cgroups)")
    rng = random.Random(args.seed)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    broken = 0
    for scenario in args.scenarios:
        total = phases_s(scenario)
        for i in range(args.rounds):
            work = Path(tempfile.mkdtemp(prefix="rmq-sigint-"))
            try:
                r = one_round(scenario, total, rng, work, env)
            finally:
                shutil.rmtree(work, ignore_errors=True)
            bad = bool(r["failed"] or r["after_stop"] or r["mislabelled"] or r["left"] or r["cleanup_exit"])
            broken += bad
            print(json.dumps({"scenario": scenario.name, "round": i + 1, **r, "broke_a_promise": bad}), flush=True)
    print(f"sigint_rounds: {broken} of {len(args.scenarios) * args.rounds} rounds broke a promise")


if __name__ == "__main__":
    main()

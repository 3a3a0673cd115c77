"""Soak of the fault journal and cleanup: a harness process (tests/faults/crash_harness.py) makes two nodes of real
OS resources and applies faults; it is SIGKILLed at a random moment (anywhere from building the nodes to after the
faults are verified), then `cleanup` runs and what was left behind is measured (mounts, loop devices, read-only or
frozen stores, throttles, stopped processes, hogs, swap, cgroups, processes). Goal: 0 left behind in every round.
Also prints, per fault kind, the time from `apply` to the verified effect (goals: <= 1 s for readonly_fs, freeze,
disk_freeze and disk_throttle; <= 5 s for memory_pressure).

    sudo .venv/bin/python benchmarks/faults_soak.py [--rounds 50] [--seed 1] [--timing-repeats 5]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

from rich.console import Console
from rich.progress import Progress
from rich.table import Table
from support import REPO, not_root

sys.path.insert(0, str(REPO / "tests" / "faults"))

from fault_nodes import make_node, teardown_node  # noqa: E402

from faults.cleanup import cleanup  # noqa: E402
from faults.journal import Journal  # noqa: E402
from faults.leftovers import scan_leftovers  # noqa: E402
from faults.registry import FAULTS  # noqa: E402
from faults.system import swapfiles  # noqa: E402
from harness.resources import RelayProcess  # noqa: E402

HARNESS = REPO / "tests" / "faults" / "crash_harness.py"
SOAK_ROOT = Path("/tmp/rmq-chaos-soak")
GOALS_S = {"readonly_fs": 1.0, "freeze": 1.0, "disk_freeze": 1.0, "disk_throttle": 1.0, "memory_pressure": 5.0}
THROTTLE = json.dumps({"write_bps": 8 << 20})
MEMORY = json.dumps({"limit_fraction": 0.5})
HOG = json.dumps({"limit_fraction": 0.7, "hog_bytes": "32MiB"})
WINDOWS = ("building", "applying", "applying", "applied")
"""Where the kill lands: from the start (nodes being built), after the nodes are up (faults being applied and
verified: the window that matters most, so drawn twice as often), or after all faults are verified."""
WINDOW_S = {"applying": 0.3, "applied": 1.0}
FAULT_SETS = [
    ["slave:readonly_fs"],
    ["slave:disk_freeze"],
    [f"slave:disk_throttle:{THROTTLE}"],
    [f"slave:memory_pressure:{MEMORY}"],
    ["slave:freeze"],
    ['slave:freeze:{"method":"cgroup"}'],
    ["slave:readonly_fs", f"master:memory_pressure:{HOG}"],
    ["slave:disk_freeze", f"master:disk_throttle:{THROTTLE}"],
    ["slave:readonly_fs", "master:freeze"],
    [f"slave:memory_pressure:{MEMORY}", 'master:ha_link:{"mode":"cut"}'],
    ["slave:kill", f"master:disk_throttle:{THROTTLE}"],
]


def one_round(rng: random.Random, max_delay: float) -> dict:
    base = SOAK_ROOT / uuid.uuid4().hex[:12]
    state = base / "state"
    state.mkdir(parents=True)
    faults = rng.choice(FAULT_SETS)
    window = rng.choice(WINDOWS)
    delay = rng.uniform(0.0, WINDOW_S[window] if window != "building" else max_delay)
    argv = [sys.executable, str(HARNESS), "--state", str(state), "--base", str(base), "--run-id",
            f"soak-{uuid.uuid4().hex[:6]}", "--crash-at", "external"]
    for f in faults:
        argv += ["--fault", f]
    swaps_before = swapfiles.active_swaps()
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    seen = {"NODES": threading.Event(), "APPLIED": threading.Event()}

    def read() -> None:
        for line in child.stdout:
            lines.append(line)
            if line.strip() in seen:
                seen[line.strip()].set()
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    if window != "building":  # wait for the start of the window, then a random moment inside it
        seen["NODES" if window == "applying" else "APPLIED"].wait(60)
    time.sleep(delay)
    os.kill(child.pid, signal.SIGKILL)
    child.wait(60)
    reader.join(5)
    err = child.stderr.read()
    out = "".join(lines)
    stage = "built" if "NODES" in out else "building"
    stage = "applied" if "APPLIED" in out else stage
    timings = [(line.split()[1], float(line.split()[2])) for line in out.splitlines() if line.startswith("TIMING")]
    t0 = time.monotonic()
    report = cleanup(state)
    cleanup_s = time.monotonic() - t0
    left = scan_leftovers(state, [str(base)])
    if swapfiles.active_swaps() != swaps_before:
        left.append(f"swap changed: {swapfiles.active_swaps()}")
    again = cleanup(state)
    if again.reverted or again.failed:
        left.append(f"second cleanup still had work: {again.to_dict()}")
    if left or not report.ok:
        cleanup(state, all_owners=True)  # leave the machine clean for the next round, after counting
    errors = [f["error"] for f in report.failed]
    if not scan_leftovers(state, [str(base)]):
        shutil.rmtree(base, ignore_errors=True)
    return {"faults": faults, "window": window, "delay_s": delay, "stage": stage, "timings": timings, "left": left,
            "cleanup_errors": errors, "cleanup_s": cleanup_s, "entries": len(report.reverted),
            "harness_error": err.strip().splitlines()[-1] if err.strip() and "Traceback" in err else None}


TIMED = [("readonly_fs", {}), ("disk_freeze", {}), ("disk_throttle", {"write_bps": 8 << 20}),
         ("memory_pressure", {"limit_fraction": 0.5}), ("freeze", {}), ("freeze", {"method": "cgroup"}),
         ("kill", {}), ("ha_link", {"mode": "cut"}), ("ha_link", {"mode": "delay", "delay_ms": 50}),
         ("ha_link", {"mode": "throttle", "rate_bps": 1 << 20})]


def timing_rounds(repeats: int, progress: Progress) -> dict[str, list[float]]:
    """apply -> verified, in this process, `repeats` times per fault, each followed by a revert."""
    base = SOAK_ROOT / f"timing-{uuid.uuid4().hex[:8]}"
    state = base / "state"
    state.mkdir(parents=True)
    journal = Journal(state)
    out: dict[str, list[float]] = {}
    echo = subprocess.Popen([sys.executable, "-c", "import socket,time; s=socket.create_server(('127.0.0.1',0)); "
                             "print(s.getsockname()[1], flush=True); time.sleep(3600)"],
                            stdout=subprocess.PIPE, text=True)
    relay = RelayProcess.start(journal, f"127.0.0.1:{echo.stdout.readline().strip()}", str(base / "relay.sock"),
                               run_id="timing")
    node = make_node(journal, base, "timing", "slave", extras=relay.extras())
    task = progress.add_task("apply -> verified", total=repeats * len(TIMED))
    try:
        for kind, params in TIMED:
            name = kind + ("" if not params else "(" + ",".join(f"{k}={v}" for k, v in params.items()) + ")")
            for _ in range(repeats):
                fault = FAULTS[kind](node.target, params, journal=journal)
                t0 = time.monotonic()
                fault.apply()
                fault.verify()
                out.setdefault(name, []).append(time.monotonic() - t0)
                fault.revert()
                progress.advance(task)
    finally:
        teardown_node(node)
        relay.stop()
        echo.kill()
        echo.wait()
        cleanup(state, all_owners=True)
        shutil.rmtree(base, ignore_errors=True)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--max-delay", type=float, default=1.5, help="in the building window, kill within this "
                                                                     "many seconds of start")
    parser.add_argument("--timing-repeats", type=int, default=5, help="apply/verify/revert per fault for timings")
    args = parser.parse_args()
    if not_root("faults_soak", "loop mounts, cgroups, swap"):
        return 2
    console = Console()
    rng = random.Random(args.seed)
    rounds = []
    with Progress(console=console) as progress:
        task = progress.add_task("soak", total=args.rounds)
        for i in range(args.rounds):
            r = one_round(rng, args.max_delay)
            rounds.append(r)
            if r["left"] or r["cleanup_errors"]:
                progress.console.print(f"[red]round {i}: {r['faults']} killed at {r['delay_s']:.2f}s "
                                       f"({r['stage']}): left {r['left']} errors {r['cleanup_errors']}[/]")
            progress.advance(task)
        timings = timing_rounds(args.timing_repeats, progress)
    left_total = sum(len(r["left"]) for r in rounds)
    errors_total = sum(len(r["cleanup_errors"]) for r in rounds)
    stages = {s: sum(r["stage"] == s for r in rounds) for s in ("building", "built", "applied")}
    console.print(f"rounds {len(rounds)}: killed while building nodes {stages['building']}, while applying "
                  f"{stages['built']}, after all applied {stages['applied']}; journal entries reverted by cleanup "
                  f"{sum(r['entries'] for r in rounds)}")
    console.print(f"left behind after cleanup: [bold]{left_total}[/] (goal 0); cleanup errors: {errors_total}; "
                  f"cleanup time median {statistics.median(r['cleanup_s'] for r in rounds):.3f} s, "
                  f"max {max(r['cleanup_s'] for r in rounds):.3f} s")
    by_kind: dict[str, list[float]] = {k: list(v) for k, v in timings.items()}
    for r in rounds:
        for kind, t in r["timings"]:
            by_kind.setdefault(kind + " (in soak rounds)", []).append(t)
    table = Table(title="apply -> verified effect (s)")
    for col in ("fault", "n", "min", "median", "max", "goal"):
        table.add_column(col)
    for kind, ts in sorted(by_kind.items()):
        goal = GOALS_S.get(kind.split("(")[0].split(" ")[0])
        ok = goal is None or max(ts) <= goal
        table.add_row(kind, str(len(ts)), f"{min(ts):.3f}", f"{statistics.median(ts):.3f}",
                      f"[{'green' if ok else 'red'}]{max(ts):.3f}[/]", f"<= {goal}" if goal else "-")
    console.print(table)
    return 0 if left_total == 0 and errors_total == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

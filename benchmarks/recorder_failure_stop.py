"""How long a run goes on after its recorder fails (issue 25; goal: the load stopped within 1 s, the fault reverted
within its usual revert time).

Each round starts `rmq-chaos run` of the scenario of `tests/harness/test_harness_shortfalls.py` on the emulator
(open model, 300 sends/s; a `readonly_fs` fault on the slave in its 60 s phase `faulted`), waits until the fault is verified, then loop-mounts a small ext4 over the
run's `requests/` directory and fills it, so the load's next part file cannot be written (ENOSPC) while the events
file, on the run directory's own filesystem, keeps the run's account. From `events.jsonl`:

- `detect_s`: from the fill to the failed write (`harness_failed`'s moment; the recorder writes a part at least
  once per flush interval, so this is up to one interval);
- `stop_s`: from the failed write to `load_stop` (the goal: under 1 s);
- `revert_s`: from the failed write to the fault's revert finished;
- `exit` (2 expected), the run's one line (stderr's last line), and what `faults.leftovers` finds afterwards.

    sudo .venv/bin/python benchmarks/recorder_failure_stop.py --rounds 3 [--after-verify-s 15]

With `--after-verify-s 45` the slave's store has stalled the master's sends (docs/harness.md, the SIGINT rounds):
a load whose recorder failed abandons its sends in flight at once instead of waiting for their timeouts. `--keep`
keeps each round's directory (the load's log, events) and names it.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests" / "harness")]

from test_harness_shortfalls import SCENARIO  # noqa: E402  (the scenario the CI test fills the disk under)
from test_harness_shortfalls import _fill as fill  # noqa: E402

from faults.leftovers import scan_leftovers  # noqa: E402
from harness.rundir import RunDir  # noqa: E402


def _events(run_dir: Path) -> list[dict]:
    return RunDir(run_dir).events()


def _wait_verified(out: Path, proc: subprocess.Popen, timeout_s: float = 300) -> Path:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and proc.poll() is None:
        for run_dir in out.glob("*/"):
            if (run_dir / "events.jsonl").exists() and any(
                    e.get("event") == "fault" and e.get("action") == "verify" and e.get("status") == "ok"
                    for e in _events(run_dir)):
                return run_dir
        time.sleep(0.1)
    raise SystemExit(f"the fault was not verified within {timeout_s:.0f} s (exit {proc.poll()})")


def one_round(work: Path, env: dict, wait_s: float) -> dict:
    scenario, state, out = work / "scenario.yaml", work / "state", work / "runs"
    scenario.write_text(SCENARIO.replace("PHASE_S", "60s"), encoding="utf-8")
    image, small = work / "requests.img", None
    cmd = [sys.executable, "-m", "harness.cli", "run", str(scenario), "--out", str(out), "--program", "emulator",
           "--no-report"]
    proc = subprocess.Popen(cmd, cwd=REPO, env={**env, "RMQ_CHAOS_STATE": str(state)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        run_dir = _wait_verified(out, proc)
        time.sleep(wait_s)  # the moment of the failure in the faulted phase (a benchmark's choice, not a sync)
        small = run_dir / "requests"
        subprocess.run(["truncate", "-s", "8M", str(image)], check=True)
        subprocess.run(["mkfs.ext4", "-q", "-F", str(image)], check=True)
        subprocess.run(["mount", "-o", "loop", str(image), str(small)], check=True)
        fill(small / "filler")
        filled_ns = time.time_ns()
        _, err = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if small is not None:
            subprocess.run(["umount", str(small)], check=False)
    ev = _events(run_dir)
    starts = {e["phase"]: e["wall_ns"] for e in ev if e["event"] == "phase_start"}
    failed = next((e for e in ev if e["event"] == "harness_failed"), None)
    stop = next((e for e in ev if e["event"] == "load_stop"), None)
    reverts = [e["wall_ns"] for e in ev if e["event"] == "fault" and e.get("action") == "revert"
               and e.get("status") in ("ok", "done", "reverted")]
    fail_ns = (starts[failed["phase"]] + round(failed["at_s"] * 1e9)) if failed and failed.get("phase") else None
    left = scan_leftovers(state, [str(out)])

    def secs(a: int | None, b: int | None) -> float | None:
        return round((b - a) / 1e9, 3) if a is not None and b is not None else None

    return {"exit": proc.returncode, "part": failed and failed["part"],
            "detect_s": secs(filled_ns, fail_ns), "stop_s": secs(fail_ns, stop and stop["wall_ns"]),
            "revert_s": secs(fail_ns, max(reverts) if reverts else None),
            "line": (err.strip().splitlines() or [""])[-1], "left": left}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--after-verify-s", type=float, default=0.0,
                    help="fill the disk this long after the fault is verified (default 0)")
    ap.add_argument("--keep", action="store_true", help="keep each round's directory (logs, events) and name it")
    args = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("recorder_failure_stop: run as root (loop mounts, cgroups, the readonly_fs fault)")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    stops = []
    for i in range(args.rounds):
        work = Path(tempfile.mkdtemp(prefix="rmq-recorder-fail-"))
        try:
            r = one_round(work, env, args.after_verify_s)
        finally:
            if not args.keep:
                shutil.rmtree(work, ignore_errors=True)
        r["work"] = str(work) if args.keep else None
        stops.append(r["stop_s"])
        print(json.dumps({"round": i + 1, **r}), flush=True)
    met = [s for s in stops if s is not None and s < 1.0]
    print(f"recorder_failure_stop: the load stopped within 1 s of the failed write in {len(met)} of {len(stops)} "
          f"rounds (stop_s: {', '.join(str(s) for s in stops)})")


if __name__ == "__main__":
    main()

"""Benchmark of a whole report as a user starts it: `python -m analysis RUN_DIR --no-progress` in a fresh process,
its wall time and the CPU time of the command and everything it started (the driver JVM included), read from a
cgroup v1 `cpuacct` group made for each report (root). With `--archive both` the reports alternate between the
driver's class archive off (`RMQ_CHAOS_CLASS_ARCHIVE=off`) and on (analysis/cds.py), so a changing load hits both
alike; an archive that does not exist yet is written by the first report with it (that one is shown as such).
Asserts nothing about speed; the load average is printed before and after. The figures of docs/analysis.md ("The
driver's class archive") were taken this way.

    sudo .venv/bin/python benchmarks/report_time.py RUN_DIR --repeat 3 --archive both
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

from support import REPO, not_root

from faults.system import cgroupfs


def one_report(run_dir: Path, archive: bool) -> tuple[float, float, int]:
    """(wall s, CPU s, exit code) of one report of `run_dir`, in a cgroup of its own below rmq-chaos/ (removed after,
    with anything still in it)."""
    group = os.path.join(cgroupfs.require("cpuacct").root, cgroupfs.OUR_DIR, f"report-time-{uuid.uuid4().hex[:8]}")
    cgroupfs.create(group)
    env = {**os.environ, **({} if archive else {"RMQ_CHAOS_CLASS_ARCHIVE": "off"})}
    try:
        start = time.monotonic()
        code = subprocess.run(
            cgroupfs.join_argv([group], [sys.executable, "-m", "analysis", str(run_dir), "--no-progress"]), env=env,
            cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False).returncode
        wall = time.monotonic() - start
        while cgroupfs.members(group):  # a JVM still exiting (archive off: nothing waits for it)
            time.sleep(0.1)
        cpu = int(cgroupfs.read(group, "cpuacct.usage")) / 1e9
    finally:
        cgroupfs.remove(group)
    return wall, cpu, code


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--archive", choices=("on", "off", "both"), default="both")
    args = ap.parse_args()
    args.run_dir = args.run_dir.resolve()
    if not_root("report_time", "a cpuacct cgroup per report"):
        return 1
    if (found := cgroupfs.hierarchy("cpuacct")) is None or found.version != 1:
        print("report_time: needs the cgroup v1 cpuacct controller", file=sys.stderr)
        return 1
    from analysis.cds import archive_for
    from analysis.rundir import open_run_dir
    from analysis.session import driver_jvm_options

    target = archive_for(driver_jvm_options(open_run_dir(args.run_dir).input_bytes))
    print(f"load average before: {os.getloadavg()}")
    modes = {"on": [True], "off": [False], "both": [False, True]}[args.archive]
    for _ in range(args.repeat):
        for archive in modes:
            writes = archive and target is not None and not target.path.is_file()
            wall, cpu, code = one_report(args.run_dir, archive)
            what = "archive on (writing it)" if writes else ("archive on" if archive else "archive off")
            print(f"{what:24} wall {wall:6.1f} s  CPU {cpu:6.1f} s  exit {code}", flush=True)
    print(f"load average after: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

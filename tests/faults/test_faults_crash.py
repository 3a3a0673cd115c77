"""Crash tests: a harness process makes nodes, applies faults and is SIGKILLed at a chosen point (right after the
journal intent, after the change, after apply, after verify, in the middle of a revert, or from outside once
everything is applied). Then `cleanup` must leave nothing: no read-only or frozen mount, no throttle, no stopped
process, no hog, no extra swap, no cgroup, no loop device, no node process. A second cleanup is harmless."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from waiting import poll

from faults.cleanup import cleanup
from faults.leftovers import scan_leftovers
from faults.system import swapfiles
from faults.system.procs import ProcId

pytestmark = pytest.mark.root
HARNESS = str(Path(__file__).with_name("crash_harness.py"))
LIMIT = json.dumps({"limit_fraction": 0.5})
HOG = json.dumps({"limit_fraction": 0.6, "hog_bytes": "24MiB"})
THROTTLE = json.dumps({"write_bps": 4 << 20})

CASES = {
    "readonly-external": (["slave:readonly_fs"], "external"),
    "readonly+throttle-after_apply": (["slave:readonly_fs", f"master:disk_throttle:{THROTTLE}"], "after_apply"),
    "freeze+diskfreeze-after_verify": (["slave:disk_freeze", "master:freeze"], "after_verify"),
    "memory-hog-after_inject": ([f"slave:memory_pressure:{HOG}"], "after_inject"),
    "cgroupfreeze+memory-after_intent": (['slave:freeze:{"method":"cgroup"}', f"master:memory_pressure:{LIMIT}"],
                                         "after_intent"),
    "readonly+halink-mid_revert": (["slave:readonly_fs", 'master:ha_link:{"mode":"cut"}'], "mid_revert"),
    "diskfreeze+freeze+throttle-external": (["slave:disk_freeze", "master:freeze", f"master:disk_throttle:{THROTTLE}"],
                                     "external"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_cleanup_after_the_harness_is_killed(case, base_dir, state_dir, run_id):
    if os.geteuid() != 0:
        pytest.skip("needs root")
    faults, point = CASES[case]
    swaps_before = swapfiles.active_swaps()
    argv = [sys.executable, HARNESS, "--state", str(state_dir), "--base", str(base_dir), "--run-id", run_id,
            "--crash-at", point]
    for f in faults:
        argv += ["--fault", f]
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        if point == "external":
            lines = iter(child.stdout.readline, "")
            assert next(lines).strip() == "NODES"
            assert any(line.strip() == "APPLIED" for line in lines), child.stderr.read()
            os.kill(child.pid, signal.SIGKILL)
        code = child.wait(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert code == -signal.SIGKILL, child.stderr.read()

    before = scan_leftovers(state_dir, [str(base_dir)])
    assert before, "the crash left nothing to clean up: the test would prove nothing"
    report = cleanup(state_dir)
    assert report.ok, report.failed
    assert report.reverted and not report.live
    left = scan_leftovers(state_dir, [str(base_dir)])
    assert left == []
    assert swapfiles.active_swaps() == swaps_before
    assert not [p for p in _our_stopped(run_id)]
    again = cleanup(state_dir)
    assert again.ok and again.reverted == [] and again.failed == []


def _our_stopped(run_id: str) -> list[int]:
    """Processes in cgroups of this run that are stopped (T) -- none may remain."""
    out = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cg = Path(f"/proc/{pid}/cgroup").read_text()
        except OSError:
            continue
        if f"/rmq-chaos/{run_id}/" in cg and (ProcId.of(int(pid)) or ProcId(0, 0)).state() in ("T", "t"):
            out.append(int(pid))
    return out


def test_cleanup_leaves_live_owners_alone(nodes, journal, state_dir):
    node = nodes("slave")
    report = cleanup(state_dir)
    assert report.reverted == [] and len(report.live) == len(journal.open_entries()) > 0
    assert poll(lambda: node.status()["writes"] > 0)

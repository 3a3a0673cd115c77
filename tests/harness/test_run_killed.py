"""A run that dies or is interrupted midway, with faults in effect on two nodes.

SIGKILL: the harness gets no chance to clean up; `rmq-chaos cleanup` must then leave no process, mount, loop
device, cgroup or fault behind. SIGINT (Ctrl-C): the run itself reverts the faults, stops the load (every request
recorded), takes the cluster down and marks the run interrupted; the directory stays analyzable."""
from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import pytest
from runsupport import assert_nothing_left, end_run, events, rmq_chaos, rows, run_dir_of, wait_for_event

pytestmark = pytest.mark.root
SCENARIO = """\
name: killed-midway
cluster:
  version: "4.9.1"
  store_size: 64MiB
  broker:
    common: {mappedFileSizeCommitLog: 4194304}
load:
  clients:
    - {name: flood, users: 4, timeout: 3s, message_size: 512B}
warmup: 1s
phases:
  - name: calm
    duration: 2s
  - name: faulted
    duration: 120s
    faults:
      - {id: stuck-disk, kind: disk_freeze, target: slave}
      - {id: stopped, kind: freeze, target: master}
readback: {enabled: false}
"""
START_S = 120


def _both_faults_verified(out: Path, proc) -> None:
    for fid in ("stuck-disk", "stopped"):
        wait_for_event(out, lambda e, fid=fid: e.get("event") == "fault" and e.get("fault_id") == fid
                       and e.get("action") == "verify" and e.get("status") == "ok", START_S, proc)


def _start(tmp_path: Path, extra: list[str]):
    scenario = tmp_path / "killed.yaml"
    scenario.write_text(SCENARIO, encoding="utf-8")
    state, out = tmp_path / "state", tmp_path / "runs"
    proc = rmq_chaos(["run", str(scenario), "--out", str(out), "--no-report", *extra], state)
    return proc, state, out


def test_sigkill_midway_then_cleanup_leaves_nothing(tmp_path: Path) -> None:
    proc, state, out = _start(tmp_path, [])
    try:
        _both_faults_verified(out, proc)
        run_id = run_dir_of(out).name
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        assert Path("/proc/mounts").read_text().count(str(state)) >= 2, "the stores are still mounted after the kill"
        cleanup = rmq_chaos(["cleanup"], state)
        assert cleanup.wait(180) == 0
        assert_nothing_left(state, run_id)
        again = rmq_chaos(["cleanup"], state)
        assert again.wait(60) == 0
    finally:
        end_run(proc, state)


def test_sigint_midway_reverts_and_leaves_an_analyzable_run(tmp_path: Path) -> None:
    proc, state, out = _start(tmp_path, [])
    try:
        _both_faults_verified(out, proc)
        proc.send_signal(signal.SIGINT)
        code = proc.wait(180)
        run_dir = run_dir_of(out)
        assert code == 2, "an interrupted run is never a pass"
        ev = events(run_dir)
        assert ev[-1]["event"] == "run_end" and ev[-1]["status"] == "interrupted"
        reverted = {e["fault_id"] for e in ev if e["event"] == "fault" and e["action"] == "revert"
                    and e["status"] == "ok"}
        assert reverted == {"stuck-disk", "stopped"}
        assert "cluster_down" in [e["event"] for e in ev]
        requests = rows(run_dir / "requests")
        totals = next(e for e in ev if e["event"] == "load_stop")["totals"]["result"]
        assert requests and len(requests) == totals["fired"]
        assert_nothing_left(state, run_dir.name)
    finally:
        end_run(proc, state)


def test_a_second_sigint_stops_at_once_and_says_what_cleanup_will_undo(tmp_path: Path) -> None:
    """The second Ctrl-C, once the first one's wind-down has begun: the process ends now, exit 2, with one line
    naming what is still applied and made; `rmq-chaos cleanup` then undoes exactly that."""
    scenario = tmp_path / "killed.yaml"
    scenario.write_text(SCENARIO, encoding="utf-8")
    state, out = tmp_path / "state", tmp_path / "runs"
    proc = rmq_chaos(["run", str(scenario), "--out", str(out), "--no-report"], state, stderr=subprocess.PIPE,
                     text=True)
    try:
        _both_faults_verified(out, proc)
        proc.send_signal(signal.SIGINT)
        lines = []
        for line in proc.stderr:
            lines.append(line)
            if "SIGINT: winding down" in line:
                proc.send_signal(signal.SIGINT)
                break
        lines += proc.stderr.readlines()
        assert proc.wait(60) == 2
        said = [ln for ln in lines if "SIGINT again: stopping now" in ln]
        assert len(said) == 1, "".join(lines)[-2000:]
        assert "`rmq-chaos cleanup` will undo" in said[0] and "store mounts" in said[0], said[0]
        assert "Traceback" not in "".join(lines)
        cleanup = rmq_chaos(["cleanup"], state)
        assert cleanup.wait(180) == 0
        assert_nothing_left(state, run_dir_of(out).name)
    finally:
        end_run(proc, state)

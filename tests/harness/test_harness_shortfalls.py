"""When rmq-chaos itself falls short (issue 25), end to end through `rmq-chaos run` on the emulator:

- its run directory's filesystem fills during the run: the run stops at once with one line naming what failed,
  where and when; faults reverted, nothing left; the parts written before are readable; the verdict is unknown;
- its load process is SIGKILLed: the run notices, says so in one line, `nothing-lost` is not held;
- Ctrl-C in a fault's phase: the load stops before the fault is reverted (no row is recorded while it is), rows
  sent after the signal are labelled `interrupted`, every expectation of the cut phase is unknown, none FAILED;
- an open-model rate far above what the machine sends: the live warning on the terminal, and never a valid verdict.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from runsupport import assert_nothing_left, end_run, events, rmq_chaos, rows, run_dir_of, wait_for_event

pytestmark = pytest.mark.root
START_S = 120

SCENARIO = """\
name: shortfall
cluster:
  version: "4.9.1"
  store_size: 64MiB
  broker:
    common: {mappedFileSizeCommitLog: 4194304}
load:
  model: open
  rate: 300
  clients:
    - {name: flood, users: 16, timeout: 3s, message_size: 512B}
warmup: 1s
phases:
  - name: calm
    duration: 3s
  - name: faulted
    duration: PHASE_S
    faults:
      - {id: ro, kind: readonly_fs, target: slave}
  - name: after
    duration: 3s
expect:
  - {name: calm-ok, phase: calm, outcome: SEND_OK, metric: share, min: 0.99}
  - {name: faulted-ok, phase: faulted, outcome: SEND_OK, metric: share, min: 0.5}
  - {name: faulted-count, phase: faulted, metric: count, min: 1}
  - {name: nothing-lost, metric: lost, max: 0}
"""


def _start(tmp_path: Path, phase_s: int = 60, out: Path | None = None, text: str | None = None,
           extra: list[str] = ()) -> tuple[subprocess.Popen, Path, Path]:
    scenario = tmp_path / "shortfall.yaml"
    scenario.write_text(text or SCENARIO.replace("PHASE_S", f"{phase_s}s"), encoding="utf-8")
    state, out = tmp_path / "state", out or tmp_path / "runs"
    proc = rmq_chaos(["run", str(scenario), "--out", str(out), *extra], state, stderr=subprocess.PIPE, text=True)
    return proc, state, out


def _verdict(run_dir: Path) -> dict:
    return json.loads((run_dir / "report" / "verdict.json").read_text())


def _status(verdict: dict) -> dict[str, str]:
    return {e["name"]: e["status"] for e in verdict["expectations"]}


@pytest.fixture
def small_fs(tmp_path: Path):
    """An ext4 of 96 MiB, loop-mounted (enough for the run's estimate, so it starts), removed by the test."""
    image, mount = tmp_path / "small.img", tmp_path / "small"
    mount.mkdir()
    subprocess.run(["truncate", "-s", "96M", str(image)], check=True)
    subprocess.run(["mkfs.ext4", "-q", "-F", str(image)], check=True)
    subprocess.run(["mount", "-o", "loop", str(image), str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=False)


@pytest.mark.long
def test_a_full_run_directory_stops_the_run_at_once(tmp_path: Path, small_fs: Path) -> None:
    proc, state, out = _start(tmp_path, out=small_fs / "runs")
    try:
        wait_for_event(out, lambda e: e.get("event") == "phase_start" and e.get("phase") == "calm", START_S, proc)
        filler = small_fs / "filler"
        _fill(filler)  # another process fills the disk, as in the field
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 2, err
        run_dir = run_dir_of(out)
        assert "no space left on device writing" in err and "the run was stopped" in err, err
        assert "Traceback" not in err
        filler.unlink()
        ev = events(run_dir)
        failed = [e for e in ev if e["event"] == "harness_failed"]
        assert not failed or "no space left on device" in failed[0]["error"]
        assert not any(e["event"] == "phase_start" and e["phase"] == "after" for e in ev)  # it stopped there
        for part in sorted((run_dir / "requests").glob("part-*.parquet")):
            pq.read_table(part)  # every part written before is whole
        assert_nothing_left(state, run_dir.name)
    finally:
        end_run(proc, state)


def _fill(path: Path) -> None:
    """Write until not a byte more fits (smaller and smaller writes, unbuffered)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (1 << 20, 1 << 16, 1 << 12, 512, 1):
            try:
                while True:
                    os.write(fd, b"\0" * size)
            except OSError:
                continue
    finally:
        os.close(fd)


@pytest.mark.long
def test_a_killed_load_process_stops_the_run_and_nothing_lost_is_not_held(tmp_path: Path) -> None:
    proc, state, out = _start(tmp_path)
    try:
        wait_for_event(out, lambda e: e.get("event") == "fault" and e.get("action") == "verify"
                       and e.get("status") == "ok", START_S, proc)
        run_dir = run_dir_of(out)
        local = json.loads((run_dir / "events.jsonl").read_text().splitlines()[0])["run_id"]
        pids = [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()
                and b"loads.headless" in _cmdline(p) and local.encode() in _cmdline(p)]
        assert pids, "no load process found"
        for pid in pids:
            subprocess.run(["kill", "-KILL", str(pid)], check=False)
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 2, err
        assert "ended without writing its last rows (killed by SIGKILL)" in err, err
        failed = [e for e in events(run_dir) if e["event"] == "harness_failed"]
        assert failed and failed[0]["part"] == "load" and failed[0]["phase"] == "faulted"
        status = _status(_verdict(run_dir))
        assert status["nothing-lost"] != "held" and status["faulted-ok"] == "unknown"
        assert_nothing_left(state, run_dir.name)
    finally:
        end_run(proc, state)


def _cmdline(p: Path) -> bytes:
    try:
        return (p / "cmdline").read_bytes()
    except OSError:
        return b""


def test_sigint_in_a_fault_phase_stops_the_load_before_the_revert(tmp_path: Path) -> None:
    proc, state, out = _start(tmp_path)
    try:
        wait_for_event(out, lambda e: e.get("event") == "fault" and e.get("action") == "verify"
                       and e.get("status") == "ok", START_S, proc)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=300)
        run_dir = run_dir_of(out)
        assert proc.returncode == 2, err
        ev = events(run_dir)
        interrupted = next(e for e in ev if e["event"] == "run_interrupted")
        assert interrupted["phase"] == "faulted"
        load_stop = next(e for e in ev if e["event"] == "load_stop")
        revert = next(e for e in ev if e["event"] == "fault" and e["action"] == "revert" and e["status"] == "started")
        assert load_stop["wall_ns"] <= revert["wall_ns"], "the fault was reverted while the load still sent"
        sent = rows(run_dir / "requests")
        assert all(r["end_ns"] <= load_stop["wall_ns"] for r in sent), "a row was recorded after the load stopped"
        assert all(r["phase"] == "interrupted" for r in sent if r["intended_ns"] > interrupted["wall_ns"])
        status = _status(_verdict(run_dir))
        assert status["faulted-ok"] == status["faulted-count"] == "unknown"
        assert "failed" not in status.values()
        assert_nothing_left(state, run_dir.name)
    finally:
        end_run(proc, state)


UNDELIVERABLE = """\
name: undeliverable
cluster: {version: "4.9.1", store_size: 64MiB, broker: {common: {mappedFileSizeCommitLog: 4194304}}}
load:
  model: open
  rate: 200000
  max_lag: 500ms
  clients:
    - {name: flood, users: 16, timeout: 3s}
warmup: 1s
phases:
  - {name: flat-out, duration: 8s}
expect:
  - {name: all-ok, phase: flat-out, outcome: SEND_OK, metric: share, min: 0.9}
"""


@pytest.mark.long
def test_an_open_rate_the_machine_cannot_send_is_warned_live_and_never_valid(tmp_path: Path) -> None:
    proc, state, out = _start(tmp_path, text=UNDELIVERABLE)
    try:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 2, err
        assert "flat-out: the load is not keeping its schedule" in err, err
        verdict = _verdict(run_dir_of(out))
        assert verdict["valid"] != True  # noqa: E712 - "unknown" or False, never True
        result = next(e for e in verdict["expectations"] if e["name"] == "all-ok")
        assert result["status"] == "unknown" and "did not keep its schedule" in result["note"]
    finally:
        end_run(proc, state)

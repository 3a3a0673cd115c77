"""`rmq-chaos cleanup` after `rmq-chaos run` is SIGKILLed at any moment of a short readonly_fs run on the emulator:
while the cluster starts, while the fault is applied, while it is reverted, during the read-back, and at the start
of the teardown. Cleanup must exit 0 and leave no mount, loop device, process, cgroup or open journal entry of the
run; a second cleanup finds nothing. Each case has its own state dir and run directory.

A store held by a process is unmounted once the holder is gone when the holder is the run's own (ended by its
tag), and otherwise refused with the holder named (pid, name, why it was left), with a non-zero cleanup."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from faults.busy import umount_when_free
from faults.cleanup import cleanup
from faults.errors import UndoError
from faults.journal import Journal
from faults.system import mounts
from faults.system.procs import TAG_ENV
from harness.cli import main
from harness.resources.loop_store import KIND as STORE_KIND
from harness.resources.loop_store import LoopStore

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "harness"))
from runsupport import assert_nothing_left, events, rmq_chaos  # noqa: E402

pytestmark = pytest.mark.root
SCENARIO = """\
name: killed-readonly
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
  - name: healthy
    duration: 1s
  - name: readonly
    duration: 2s
    faults:
      - {id: ro, kind: readonly_fs, target: slave}
  - name: recovery
    duration: 1s
"""
START_S = 150


def _fault(action: str, status: str):
    return lambda e: e.get("event") == "fault" and e.get("fault_id") == "ro" and e.get("action") == action \
        and e.get("status") == status


MOMENTS = {
    "cluster-start": None,  # as soon as a store of the run is mounted
    "apply": _fault("apply", "started"),
    "revert": _fault("revert", "started"),
    "readback": lambda e: e.get("event") == "readback_start",
    "teardown": lambda e: e.get("event") == "readback_end",
}


def _moment_reached(state: Path, out: Path, moment: str) -> bool:
    if MOMENTS[moment] is None:
        return str(state) in Path("/proc/mounts").read_text()
    dirs = [d for d in out.iterdir() if d.is_dir()] if out.exists() else []
    return bool(dirs) and (dirs[0] / "events.jsonl").exists() and any(MOMENTS[moment](e) for e in events(dirs[0]))


def _run_ids(state: Path, out: Path) -> set[str]:
    ids = {d.name for d in out.iterdir() if d.is_dir()} if out.exists() else set()
    journal = state / "journal.jsonl"
    if journal.exists():
        for line in journal.read_text().splitlines():
            try:
                ids.add(json.loads(line).get("run_id") or "")
            except ValueError:
                continue
    return {i for i in ids if i}


@pytest.mark.timeout(420)
@pytest.mark.parametrize("moment", list(MOMENTS))
def test_cleanup_after_a_kill_at_any_moment_exits_0_and_leaves_nothing(moment: str, tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root")
    scenario = tmp_path / "ro.yaml"
    scenario.write_text(SCENARIO, encoding="utf-8")
    state, out = tmp_path / "state", tmp_path / "runs"
    proc = rmq_chaos(["run", str(scenario), "--out", str(out), "--no-report"], state)
    try:
        deadline = time.monotonic() + START_S
        while not _moment_reached(state, out, moment):
            assert proc.poll() is None, f"rmq-chaos run exited with {proc.returncode} before {moment}"
            assert time.monotonic() < deadline, f"{moment} not reached within {START_S}s"
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(30) == -signal.SIGKILL
        run_ids = _run_ids(state, out)
        assert run_ids, "the run journaled nothing: the test would prove nothing"
        cleanup = rmq_chaos(["cleanup", "--json"], state, stdout=-1, stderr=-1, text=True)
        stdout, stderr = cleanup.communicate(timeout=240)
        assert cleanup.returncode == 0, stdout[-3000:] + stderr[-3000:]
        report = json.loads(stdout)
        print("umount:", [r["result"] for item in report["reverted"] for r in item["undo"] if r["op"] == "umount"])
        for run_id in run_ids:
            assert_nothing_left(state, run_id, deadline_s=10)
        again = rmq_chaos(["cleanup", "--json"], state, stdout=-1, stderr=-1, text=True)
        stdout, _ = again.communicate(timeout=120)
        assert again.returncode == 0
        assert json.loads(stdout)["reverted"] == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        rmq_chaos(["cleanup"], state).wait(240)


HOLD = "import sys, time; f = open(sys.argv[1], 'w'); print('open', flush=True); time.sleep(600)"


def _holder(path: Path, tag: str) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k != TAG_ENV}
    env[TAG_ENV] = tag
    child = subprocess.Popen([sys.executable, "-c", HOLD, str(path)], env=env, stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "open"
    return child


@pytest.mark.timeout(120)
def test_a_busy_store_waits_for_the_runs_holder_and_names_anyone_elses(journal: Journal, base_dir: Path,
                                                                       run_id: str) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root")
    store = LoopStore.create(journal, str(base_dir / "img"), str(base_dir / "mnt"), 32 << 20, run_id=run_id)
    child = _holder(Path(store.mount) / "held", "p-not-ours")
    try:
        with pytest.raises(UndoError) as err:
            umount_when_free(store.mount, own_tags={"p-of-the-run"}, timeout_s=1.0)
        msg = str(err.value)
        assert "\n" not in msg and "still busy" in msg and store.mount in msg
        assert f"pid {child.pid} (python" in msg and "not of this run: left alone" in msg
        assert child.poll() is None, "a process that is not the run's was touched"
        assert mounts.mount_at(store.mount) is not None
        result = umount_when_free(store.mount, own_tags={"p-of-the-run", "p-not-ours"}, timeout_s=60)
        assert "ended 1 process" in result
        assert child.wait(30) == -signal.SIGKILL
        assert mounts.mount_at(store.mount) is None
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    store.destroy()


@pytest.mark.timeout(120)
def test_cleanup_says_which_process_holds_a_store_it_cannot_unmount(journal: Journal, base_dir: Path, state_dir: Path,
                                                                    run_id: str, capsys: pytest.CaptureFixture[str]
                                                                    ) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root")
    store = LoopStore.create(journal, str(base_dir / "img"), str(base_dir / "mnt"), 32 << 20, run_id=run_id)
    entry = journal.get(store.entry_id)
    journal.update(store.entry_id, undo=[dict(op, busy_timeout_s=1.0) if op["op"] == "umount" else op
                                         for op in entry.undo])
    child = _holder(Path(store.mount) / "held", "p-someone-else")
    try:
        report = cleanup(state_dir, all_owners=True)
        assert not report.ok
        (item,) = report.failed
        assert item["kind"] == STORE_KIND and item["run_id"] == run_id
        assert f"pid {child.pid}" in item["error"] and "not of this run" in item["error"]
        assert any(store.mount in line and "mount" in line for line in report.left), report.left
        assert child.poll() is None
        capsys.readouterr()
        assert main(["cleanup", "--state-dir", str(state_dir), "--all"]) == 1
        out = capsys.readouterr().out
        said = [line for line in out.splitlines() if line.startswith("could not undo")]
        assert len(said) == 1 and STORE_KIND in said[0] and f"pid {child.pid}" in said[0], out
        assert any(line.startswith("still on the machine: mount") for line in out.splitlines()), out
    finally:
        child.kill()
        child.wait()
    again = cleanup(state_dir, all_owners=True)
    assert again.ok and [i["kind"] for i in again.reverted] == [STORE_KIND]
    assert mounts.mount_at(store.mount) is None

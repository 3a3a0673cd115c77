"""Faults act only on what the harness made: refusals for missing containers, foreign cgroups, foreign processes, foreign
mounts; the node resources are journaled so a dead owner's are removed by cleanup (and their own destroy is
idempotent)."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
from waiting import poll

from faults.cleanup import cleanup
from faults.disk_throttle import DiskThrottle
from faults.errors import FaultRefused, FaultUnavailable
from faults.journal import Journal, Owner
from faults.memory_pressure import MemoryPressure
from faults.process_freeze import ProcessFreeze
from faults.system import cgroupfs, mounts
from faults.system.procs import ProcId
from faults.target import NodeTarget, StaticPids
from harness.resources import LoopStore, NodeCgroups, ProcessNode, SwapFile, spawn

pytestmark = pytest.mark.root


def _retarget(target: NodeTarget, **kw) -> NodeTarget:
    return NodeTarget(**{**target.__dict__, **kw})


def test_container_target_is_refused_without_its_container(nodes, journal):
    """A container target goes to the Docker variant (faults/docker/), which refuses a container that does not exist
    (or says that no Docker engine answers); tests/compose/ covers container targets end to end."""
    node = nodes("slave")
    with pytest.raises((FaultRefused, FaultUnavailable),
                       match="container rmq-chaos-no-such-container does not exist|no Docker engine answers"):
        ProcessFreeze(_retarget(node.target, container="rmq-chaos-no-such-container"), {}, journal=journal).apply()


def test_foreign_cgroups_and_processes_are_refused(nodes, journal):
    node = nodes("slave")
    with pytest.raises(FaultRefused, match="is not one of ours"):
        MemoryPressure(_retarget(node.target, cgroups={"memory": "/sys/fs/cgroup/memory"}), {},
                       journal=journal).apply()
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        target = _retarget(node.target, pids=StaticPids([ProcId.of(stranger.pid)]))
        with pytest.raises(FaultRefused, match=f"pid {stranger.pid} of node slave is neither in a cgroup"):
            ProcessFreeze(target, {}, journal=journal).apply()
        assert ProcId.of(stranger.pid).state() != "T"
    finally:
        stranger.kill()
        stranger.wait()
    with pytest.raises(FaultRefused, match="refusing the root filesystem"):
        DiskThrottle(_retarget(node.target, store_mount="/"), {"write_bps": 1 << 20}, journal=journal).apply()
    assert not [e for e in journal.open_entries() if e.kind.startswith("fault:")]


def test_a_failed_apply_is_rolled_back(nodes, journal):
    node = nodes("slave")
    fault = ProcessFreeze(node.target, {}, journal=journal)

    def boom():
        raise RuntimeError("injected failure after the change")
    original = fault.inject

    def inject():
        original()
        boom()
    fault.inject = inject
    with pytest.raises(RuntimeError, match="injected failure"):
        fault.apply()
    (pid,) = node.target.pids()
    assert poll(lambda: ProcId.of(pid).state() in ("S", "R"))
    assert journal.get(fault.tag).done_how == "rolled back"


def test_resources_of_a_dead_owner_are_removed_by_cleanup(state_dir, base_dir, run_id):
    if os.geteuid() != 0:
        pytest.skip("needs root")
    keeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    journal = Journal(state_dir, owner=Owner.of_pid(keeper.pid))
    cg = NodeCgroups.create(journal, run_id, "n1")
    store = LoopStore.create(journal, str(base_dir / "n1.img"), str(base_dir / "n1"), 32 << 20, run_id=run_id)
    swap = SwapFile.create(journal, str(base_dir / "n1.swap"), 64 << 20, run_id=run_id)
    proc = spawn(journal, [sys.executable, "-c", "import time; time.sleep(60)"], cgroups=cg.dirs, run_id=run_id)
    assert proc.pid in cg.members() and mounts.mount_at(store.mount) and os.path.exists(swap.path)
    assert "errors=remount-ro" in mounts.mount_at(store.mount).options
    assert cleanup(state_dir).reverted == []  # the owner is alive: nothing is touched
    keeper.kill()
    keeper.wait()
    report = cleanup(state_dir)
    assert report.ok and {r["kind"] for r in report.reverted} == {"resource:cgroups", "resource:loop_store",
                                                                   "resource:swap_file", "resource:process"}
    assert not ProcId(proc.pid, proc.proc.start).exists()
    assert mounts.mount_at(store.mount) is None and mounts.loop_devices_for(store.image) == []
    assert not os.path.exists(store.image) and not os.path.exists(swap.path)
    assert all(not os.path.isdir(d) for d in cg.dirs)
    proc.popen.wait()
    assert store.destroy() == [] and cg.destroy() == [] and swap.destroy() == []


def test_process_node_round_trip_and_restart(state_dir, journal, base_dir, run_id):
    if os.geteuid() != 0:
        pytest.skip("needs root")
    cg = NodeCgroups.create(journal, run_id, "n2")
    try:
        node = ProcessNode(journal=journal, name="n2", argv=[sys.executable, "-c", "import time; time.sleep(60)"],
                           run_id=run_id, pidfile=str(base_dir / "n2.pid"), cgroups=cg.dirs)
        node.start()
        (first,) = node.pids()
        again = ProcessNode.from_json(node.to_json(), journal)
        again.stop()
        assert node.pids() == []
        again.start()
        again.wait_ready(10)
        assert node.pids() and node.pids() != [first] and node.pids()[0] in cgroupfs.members(cg.paths["memory"])
        node.stop()
        assert again.pids() == []
    finally:
        cg.destroy()


def test_bad_resource_input_is_refused_and_leaves_nothing(journal, base_dir):
    if os.geteuid() != 0:
        pytest.skip("needs root")
    with pytest.raises(FaultRefused, match="must be letters, digits"):
        NodeCgroups.create(journal, "../etc", "n")
    (base_dir / "taken.img").write_bytes(b"x")
    with pytest.raises(FaultRefused, match="already exists; refusing to overwrite"):
        LoopStore.create(journal, str(base_dir / "taken.img"), str(base_dir / "m"), 32 << 20)
    with pytest.raises(FaultRefused, match="below"):
        LoopStore.create(journal, str(base_dir / "tiny.img"), str(base_dir / "m"), 1 << 20)
    assert journal.open_entries() == [] and not (base_dir / "m").exists()

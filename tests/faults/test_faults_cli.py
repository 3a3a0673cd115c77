"""`rmq-chaos fault list|apply|verify|revert` and `rmq-chaos cleanup` as commands, on a node whose cluster state file
names this test process as the owner (as the harness does for a running cluster)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from waiting import poll

from faults.cluster_state import write_cluster_state
from faults.journal import Journal, Owner
from faults.system.mounts import mount_at
from faults.system.procs import ProcId

pytestmark = pytest.mark.root


def cli(state_dir, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness.cli", *args[:1], "--state-dir", str(state_dir), *args[1:]]
                          if args[0] == "fault" else [sys.executable, "-m", "harness.cli", *args],
                          capture_output=True, text=True, timeout=120)


@pytest.fixture
def cluster(nodes, state_dir, run_id):
    node = nodes("slave")
    write_cluster_state(state_dir, run_id, run_id, "local", [node.target])
    return node


def test_fault_apply_verify_revert_by_hand(cluster, state_dir, base_dir):
    (pid,) = cluster.target.pids()
    events = base_dir / "events.jsonl"
    out = cli(state_dir, "fault", "apply", "freeze", "--node", "slave", "--id", "f1", "--events", str(events))
    assert out.returncode == 0, out.stdout + out.stderr
    assert ProcId.of(pid).state() == "T"
    (entry,) = [e for e in Journal(state_dir).open_entries() if e.kind == "fault:freeze"]
    assert entry.owner == Owner.current()  # journaled for the cluster's owner, not for the command that exited
    listed = json.loads(cli(state_dir, "fault", "list", "--json").stdout)
    assert [a["fault_id"] for a in listed["applied"]] == ["f1"]
    assert cli(state_dir, "fault", "verify", "f1").returncode == 0
    assert cli(state_dir, "fault", "revert", "f1", "--events", str(events)).returncode == 0
    assert ProcId.of(pid).state() not in ("T", "t", None)
    actions = [(e["action"], e["status"]) for e in map(json.loads, events.read_text().splitlines())]
    assert actions[:4] == [("apply", "started"), ("apply", "ok"), ("verify", "started"), ("verify", "ok")]
    assert actions[-2:] == [("revert", "started"), ("revert", "ok")]
    assert cli(state_dir, "fault", "revert", "f1").returncode == 2  # no longer applied


def test_readonly_fs_by_hand_restarts_the_node_through_its_rebuilt_control(cluster, state_dir):
    old = cluster.target.pids()
    assert cli(state_dir, "fault", "apply", "readonly_fs", "--node", "slave", "--id", "ro").returncode == 0
    assert "emergency_ro" in mount_at(cluster.store.mount).options
    out = cli(state_dir, "fault", "revert", "ro")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "emergency_ro" not in mount_at(cluster.store.mount).options
    assert cluster.target.pids() and cluster.target.pids() != old
    assert poll(lambda: cluster.status()["errors"] == 0 and cluster.status()["writes"] > 0)


@pytest.mark.parametrize("args,message", [
    (("fault", "apply", "ro", "--node", "slave"), "fault kind 'ro' unknown (allowed: readonly_fs,"),
    (("fault", "apply", "disk_throttle", "--node", "slave", "-p", "write_bsp=1"), "params.write_bsp: Extra inputs"),
    (("fault", "apply", "freeze", "--node", "broker"), "no node 'broker' (nodes: slave)"),
    (("fault", "apply", "freeze", "--node", "slave", "-p", "method"), "--param 'method': expected KEY=VALUE"),
])
def test_bad_input_is_refused_in_one_line_and_leaves_nothing(cluster, state_dir, args, message):
    before = Journal(state_dir).open_entries()
    out = cli(state_dir, *args)
    assert out.returncode == 2
    assert message in " ".join(out.stdout.split())
    assert [e.id for e in Journal(state_dir).open_entries()] == [e.id for e in before]


def test_cleanup_command_reverts_the_faults_of_a_dead_owner(nodes, state_dir, run_id):
    node = nodes("slave")
    keeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        write_cluster_state(state_dir, run_id, run_id, "local", [node.target], owner=Owner.of_pid(keeper.pid))
        assert cli(state_dir, "fault", "apply", "freeze", "--node", "slave").returncode == 0
        (pid,) = node.target.pids()
        assert ProcId.of(pid).state() == "T"
        live = cli(state_dir, "cleanup", "--state-dir", str(state_dir), "--json")
        assert json.loads(live.stdout)["reverted"] == [] and ProcId.of(pid).state() == "T"
    finally:
        keeper.kill()
        keeper.wait()
    out = cli(state_dir, "cleanup", "--state-dir", str(state_dir), "--json")
    report = json.loads(out.stdout)
    assert out.returncode == 0 and [r["kind"] for r in report["reverted"]] == ["fault:freeze"]
    assert report["clusters_removed"] == [run_id]
    assert ProcId.of(pid).state() not in ("T", "t", None)
    again = json.loads(cli(state_dir, "cleanup", "--state-dir", str(state_dir), "--json").stdout)
    assert again["reverted"] == [] and again["ok"]


def test_a_fault_whose_intent_cannot_be_journaled_is_never_applied(cluster, state_dir):
    """The state directory turned read-only under the running cluster (a bind mount of it, remounted ro): `fault
    apply` says so (the journal, where, why, nothing changed) and the node is not frozen."""
    (pid,) = cluster.target.pids()
    subprocess.run(["mount", "--bind", str(state_dir), str(state_dir)], check=True)
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(state_dir)], check=True)
        out = cli(state_dir, "fault", "apply", "freeze", "--node", "slave", "--id", "f1")
    finally:
        subprocess.run(["umount", str(state_dir)], check=True)
    text = " ".join((out.stdout + out.stderr).split())  # the console wraps long lines
    assert out.returncode == 1 and "Traceback" not in text, text
    assert f"cannot lock the journal in {state_dir}: read-only file system; nothing was changed" in text, text
    assert ProcId.of(pid).state() not in ("T", "t", None)
    assert not [e for e in Journal(state_dir).open_entries() if e.kind == "fault:freeze"]

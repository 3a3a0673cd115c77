"""readonly_fs against a real node: an ext4 error turns its loop-mounted store read-only (EROFS, emergency_ro in
/proc/mounts) while the node keeps running; revert restarts the node on a checked, writable store."""
from __future__ import annotations

import os
import subprocess

import pytest
from waiting import poll

from faults.cleanup import cleanup
from faults.errors import FaultRefused
from faults.readonly_fs import ReadonlyFs
from faults.system import mounts

pytestmark = pytest.mark.root


def _write_errno(path: str) -> int:
    return mounts.write_probe(path)


def test_readonly_fs_applies_verifies_and_reverts(nodes, journal, events):
    node = nodes("slave")
    mount = node.store.mount
    assert _write_errno(os.path.join(mount, "before")) == 0
    fault = ReadonlyFs(node.target, {}, journal=journal, emit=events.append)
    fault.apply()
    evidence = fault.verify()
    assert evidence["write_errno"] == "EROFS" and "emergency_ro" in evidence["mount_options"]
    # measured independently of the fault: our own write fails, the node sees errors, and is still the same process
    assert _write_errno(os.path.join(mount, "during")) == 30  # EROFS
    old_pid = node.target.pids()
    before = node.status()["errors"]
    assert poll(lambda: node.status()["errors"] > before)
    assert node.target.pids() == old_pid

    result = fault.revert()
    assert [r["op"] for r in result["undo"]] == ["node_stop", "umount", "e2fsck", "mount", "node_start"]
    m = mounts.mount_at(mount)
    assert m is not None and not m.readonly and "errors=remount-ro" in m.options
    assert _write_errno(os.path.join(mount, "after")) == 0
    assert node.target.pids() and node.target.pids() != old_pid
    assert poll(lambda: node.status()["writes"] > 2 and node.status()["errors"] == 0)
    steps = [(e["step"], e["status"]) for e in events if e["action"] == "step"]
    assert steps == [(s, st) for s in ("stop_node", "umount", "e2fsck", "mount", "start_node") for st in
                     ("started", "ok")]
    assert [(e["action"], e["status"]) for e in events if e["action"] != "step"] == [
        ("apply", "started"), ("apply", "ok"), ("verify", "started"), ("verify", "ok"), ("revert", "started"),
        ("revert", "ok")]
    assert all(e["event"] == "fault" and e["wall_ns"] > 0 and e["mono_ns"] > 0 for e in events)
    assert fault.revert() == {"reverted": False, "reason": "already reverted"}


def test_readonly_fs_refuses_a_mount_the_harness_did_not_make(nodes, journal):
    node = nodes("slave")
    journal.done(node.store.entry_id, "forgotten")  # the store is no longer ours as far as the journal knows
    try:
        with pytest.raises(FaultRefused, match="was not created by the harness"):
            ReadonlyFs(node.target, {}, journal=journal).apply()
    finally:
        node.store.entry_id = journal.begin("resource:loop_store", undo=journal.get(node.store.entry_id).undo,
                                            data=journal.get(node.store.entry_id).data)
    root = ReadonlyFs(node.target, {}, journal=journal)
    root.target = type(node.target)(**{**node.target.__dict__, "store_mount": "/"})
    with pytest.raises(FaultRefused, match="refusing the root filesystem"):
        root.apply()



def test_cleanup_after_the_store_was_taken_down_leaves_the_loop_number_it_had_alone(nodes, journal, state_dir,
                                                                                     base_dir):
    """A revert that failed (the slave did not catch up), then the cluster went down: the store's image is detached
    and deleted while the fault's entry is still open. Its loop device number may by then be another store's;
    cleanup must neither check nor mount that one, and must close the entry."""
    node = nodes("slave")
    fault = ReadonlyFs(node.target, {}, journal=journal)
    fault.apply()
    fault.verify()
    device, mount = node.store.device, node.store.mount
    node.control.stop()
    node.store.destroy()
    assert mounts.loop_devices_for(node.store.image) == [] and mounts.mount_at(mount) is None
    other = base_dir / "other.img"
    with open(other, "wb") as f:
        f.truncate(16 << 20)
    subprocess.run(["mkfs.ext4", "-q", "-F", str(other)], check=True)
    # the freed number, now someone else's: ours, unless a test running beside this one took it first (loop numbers
    # are the machine's), which is the same case; then it is not ours to detach
    ours = subprocess.run(["losetup", device, str(other)], capture_output=True).returncode == 0
    if not ours:
        assert subprocess.run(["losetup", device], capture_output=True).returncode == 0, f"{device} is not attached"
    try:
        report = cleanup(state_dir, all_owners=True)
        assert report.ok, report.failed
        (entry,) = [r for r in report.reverted if r["kind"] == "fault:readonly_fs"]
        assert {u["op"]: u["result"] for u in entry["undo"]}["e2fsck"] == "no device", entry
        assert mounts.mount_at(mount) is None, "another store's device was mounted in place of the deleted one"
        if ours:
            assert mounts.loop_devices_for(str(other)) == [device]
        assert not [e for e in journal.open_entries() if e.kind.startswith("fault:")]
    finally:
        if mounts.mount_at(mount) is not None:
            mounts.umount(mount)
        if ours:
            subprocess.run(["losetup", "-d", device], check=False)


def test_e2fsck_waits_while_a_copy_of_the_mount_lives_in_another_namespace(tmp_path):
    """The revert's e2fsck right after its umount: a mount namespace made meanwhile (`ip netns exec`, `unshare -m`)
    keeps a copy of the mount, and the device "in use" (exit 8), until its last process ends; e2fsck waits for it."""
    image, mount = tmp_path / "store.img", tmp_path / "store"
    mount.mkdir()
    subprocess.run(["truncate", "-s", "16M", str(image)], check=True)
    subprocess.run(["mkfs.ext4", "-q", "-F", str(image)], check=True)
    dev = subprocess.run(["losetup", "-f", "--show", str(image)], capture_output=True, text=True,
                         check=True).stdout.strip()
    holder = None
    try:
        subprocess.run(["mount", dev, str(mount)], check=True)
        holder = subprocess.Popen(["unshare", "-m", "--propagation", "private", "sleep", "3"])
        poll(lambda: os.readlink(f"/proc/{holder.pid}/ns/mnt") != os.readlink("/proc/self/ns/mnt"), 10,
             "the holder's own mount namespace (a copy of every mount, the store's among them)")
        subprocess.run(["umount", str(mount)], check=True)
        assert subprocess.run(["e2fsck", "-f", "-y", dev], capture_output=True).returncode == 8  # in use now
        rc, _ = mounts.e2fsck(dev)
        assert rc in (0, 1) and holder.poll() is not None  # it waited for the copy to go
    finally:
        if holder is not None and holder.poll() is None:
            holder.kill()
            holder.wait()
        subprocess.run(["umount", str(mount)], capture_output=True, check=False)
        subprocess.run(["losetup", "-d", dev], check=False)

"""What a state dir's runs left on the machine, measured (not read from the journal's claims): processes carrying one
of its tags (and which of them are stopped), mounts and loop devices of its images, read-only or frozen mounts, swap
files in it, cgroups of its runs, blkio throttle rules and lowered memory limits in those cgroups, and the iptables
chains and root qdiscs of its network faults (in the network namespace each was made in, while it exists). Used by
the crash tests and the soak benchmark to count leftovers (goal: none)."""
from __future__ import annotations

import os
import subprocess
import sys

from faults.journal import Journal
from faults.system import cgroupfs, iptables, mounts, netns, swapfiles, tc
from faults.system.procs import tagged

FROZEN_PROBE_S = 1.0
THROTTLE_FILES = ("blkio.throttle.write_bps_device", "blkio.throttle.read_bps_device",
                  "blkio.throttle.write_iops_device", "blkio.throttle.read_iops_device")


def _frozen(mount: str) -> bool:
    """A write probe in a child that does not finish within a second means the mount is frozen."""
    code = f"import os; fd=os.open({os.path.join(mount, '.rmq-chaos-leftover-probe')!r}, os.O_WRONLY|os.O_CREAT); " \
           "os.write(fd, b'x'); os.close(fd); os.unlink(" + repr(os.path.join(mount, '.rmq-chaos-leftover-probe')) + ")"
    child = subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.DEVNULL)
    try:
        child.wait(FROZEN_PROBE_S)
        return False
    except subprocess.TimeoutExpired:
        child.kill()
        return True


def scan_leftovers(state_dir: str | os.PathLike[str], roots: list[str] | None = None) -> list[str]:
    """One line per leftover. `roots`: directories where the runs kept images and mount points (default: state
    dir)."""
    entries = []
    if os.path.isdir(state_dir):  # a scan makes nothing: no state dir, no journal to read (and none made)
        journal = Journal(state_dir)
        entries = journal.entries() + journal.archived()
    roots = [os.path.realpath(r) for r in (roots or [])] + [os.path.realpath(state_dir)]
    found = []
    tags = {e.id for e in entries} | {e.id + "-after" for e in entries}
    for p in tagged(tags):
        found.append(f"process {p.pid} (tag) state {p.state()}")
    run_ids = {e.run_id for e in entries if e.run_id}

    def under(path: str) -> bool:
        return any((path + "/").startswith(r.rstrip("/") + "/") for r in roots)

    for m in mounts.mounts():
        backing = (mounts.loop_backing_file(m.source) or "").removesuffix(" (deleted)")
        if under(m.target) or (backing and under(backing)):
            state = "read-only" if m.readonly else ("frozen" if _frozen(m.target) else "rw")
            found.append(f"mount {m.target} from {m.source} ({state})")
    for dev in sorted({d for r in roots for d in _loops_under(r)}):
        found.append(f"loop device {dev} -> {mounts.loop_backing_file(dev)}")
    for s in swapfiles.active_swaps():
        if under(s["path"]):
            found.append(f"swap {s['path']} active")
    for run_id in run_ids:
        for path in cgroupfs.run_dirs(run_id, cgroupfs.NODE_CONTROLLERS):
            for dirpath, _dirs, _files in os.walk(path):
                found.append(f"cgroup {dirpath}" + _cgroup_detail(dirpath))
    found += _net_left(entries)
    return found


def _net_left(entries: list) -> list[str]:
    """iptables chains (or jumps to them) and root qdiscs of the entries' network faults still in their namespaces."""
    found = []
    for op in (op for e in entries for op in e.undo):
        if op.get("op") == "iptables_chain_remove":
            ns = op.get("netns")
            if iptables.chain_rules(op["chain"], ns) is not None or iptables.jumps_to(op["chain"], ns):
                found.append(f"iptables chain {op['chain']} in {netns.label(ns)}")
        elif op.get("op") == "tc_qdisc_remove" and tc.is_ours(op["dev"], op["handle"], op["kind"], op.get("netns")):
            found.append(f"qdisc {op['kind']} {op['handle']} on {op['dev']} in {netns.label(op.get('netns'))}")
    return found


def _loops_under(root: str) -> list[str]:
    out = []
    for name in os.listdir("/sys/block"):
        if name.startswith("loop"):
            backing = (mounts.loop_backing_file(name) or "").removesuffix(" (deleted)")
            if backing and (backing + "/").startswith(root.rstrip("/") + "/"):
                out.append("/dev/" + name)
    return out


def _cgroup_detail(path: str) -> str:
    notes = []
    for f in THROTTLE_FILES:
        try:
            if cgroupfs.read(path, f):
                notes.append(f"{f} set")
        except OSError:
            pass
    try:
        if cgroupfs.read(path, "freezer.state") != "THAWED":
            notes.append("frozen")
    except OSError:
        pass
    try:
        if int(cgroupfs.read(path, "memory.limit_in_bytes")) < (1 << 62):
            notes.append("memory limit set")
    except (OSError, ValueError):
        pass
    if cgroupfs.members(path):
        notes.append(f"members {cgroupfs.members(path)}")
    return f" ({', '.join(notes)})" if notes else ""

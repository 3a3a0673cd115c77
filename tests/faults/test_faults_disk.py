"""disk_freeze and disk_throttle against a real node's loop-mounted store: the effect is measured while applied
(a write blocks in D state; direct-I/O bandwidth/IOPS within 20 % of the limit inside the node's cgroup) and
measured gone after revert."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
from waiting import poll

from faults.disk_freeze import DiskFreeze
from faults.disk_throttle import DiskThrottle
from faults.probe import dio_probe
from faults.system import cgroupfs
from faults.system.procs import ProcId

pytestmark = pytest.mark.root
WRITER = "import os,sys; fd=os.open(sys.argv[1], os.O_WRONLY|os.O_CREAT); os.write(fd, b'x'*4096); os.fsync(fd)"


def test_disk_freeze_blocks_writes_until_thawed(nodes, journal):
    node = nodes("slave")
    fault = DiskFreeze(node.target, {}, journal=journal)
    fault.apply()
    evidence = fault.verify()
    assert evidence["blocked"] and evidence["state"] == "D"
    # our own writer, outside the fault's probe: blocks in D state while frozen, finishes once thawed
    writer = subprocess.Popen([sys.executable, "-c", WRITER, os.path.join(node.store.mount, "mine")])
    try:
        pid = ProcId.of(writer.pid)
        assert poll(lambda: pid.state() == "D", 5)
        assert writer.poll() is None
        fault.revert()
        assert writer.wait(timeout=10) == 0
    finally:
        if writer.poll() is None:
            fault.revert()
            writer.kill()
            writer.wait()
    assert poll(lambda: node.status()["writes"] > 0)


def _measure(node, mode: str, seconds: float, max_bytes: int, chunk: int) -> dict:
    path = os.path.join(node.store.mount, f"mine.{mode}")
    if mode == "read":
        with open(path, "wb") as f:
            f.write(os.urandom(max_bytes))
    try:
        return dio_probe(path, "test-probe", [node.cgroups.paths["blkio"]], mode=mode, chunk=chunk,
                         seconds=seconds, max_bytes=max_bytes)
    finally:
        os.unlink(path)


def test_disk_throttle_write_bps_measured_and_lifted(nodes, journal):
    node = nodes("slave")
    limit = 8 << 20
    fault = DiskThrottle(node.target, {"write_bps": limit}, journal=journal)
    fault.apply()
    evidence = fault.verify()
    assert abs(evidence["write_bps"]["ratio"] - 1) <= 0.2
    blkio = node.cgroups.paths["blkio"]
    rdev = os.stat(node.store.device).st_rdev
    assert cgroupfs.read(blkio, "blkio.throttle.write_bps_device") == f"{os.major(rdev)}:{os.minor(rdev)} {limit}"
    mine = _measure(node, "write", 0.6, 16 << 20, 256 << 10)
    assert mine["rate_bps"] < limit * 1.25
    fault.revert()
    assert cgroupfs.read(blkio, "blkio.throttle.write_bps_device") == ""
    after = _measure(node, "write", 0.3, 64 << 20, 1 << 20)
    assert after["rate_bps"] > limit * 3


def test_disk_throttle_read_iops_measured(nodes, journal):
    node = nodes("slave")
    fault = DiskThrottle(node.target, {"read_iops": 200}, journal=journal)
    fault.apply()
    evidence = fault.verify()
    assert abs(evidence["read_iops"]["ratio"] - 1) <= 0.2
    fault.revert()
    after = _measure(node, "read", 0.3, 4 << 20, 4096)
    assert after["iops"] > 600


def test_disk_throttle_verify_measures_the_cgroup_while_the_node_writes(nodes, journal):
    """The node itself writes through the throttled device while verify runs (64 KiB records, each fsync'ed, as
    fast as the limit lets them): the probe gets only a share of the limit, the cgroup's total is the limit."""
    node = nodes("master", role="master", node_args=["--record-bytes", "65536", "--interval-ms", "0"])
    limit = 1 << 20
    fault = DiskThrottle(node.target, {"write_bps": limit}, journal=journal)
    fault.apply()
    writes_before = node.status()["writes"]
    evidence = fault.verify()["write_bps"]
    assert abs(evidence["ratio"] - 1) <= 0.2, evidence  # probe + node, counted by the cgroup
    assert evidence["measured"] == evidence["probe"]["cgroup"]["rate_bps"]
    # the node's own writes took a real part of the limit: the probe alone would not have measured it
    assert evidence["probe_measured"] < 0.8 * limit and evidence["probe_share"] < 0.8, evidence
    assert node.status()["writes"] > writes_before
    gone = fault.revert()
    assert gone["write_bps"]["probe_measured"] > 1.2 * limit

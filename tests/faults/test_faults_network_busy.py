"""The network faults under the traffic they shape or cut, between namespace hosts (net_testbed.py): a bulk stream
from h1 to h2 (an unpaced transfer to h2's sink, as a master's HA stream to a slave that fell behind) keeps the link
busy while the fault is applied and verified in h1. `net_bandwidth` is verified from its own htb class's counters
(the probe only gets its share, or none: its connect waits behind the stream's queue); `partition` counts the
stream's packets in its DROP rules. A bandwidth fault whose class carries nothing fails in one line naming the fault,
what was measured and the bound."""
from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator

import pytest
from net_testbed import PORT, PY, REPO, NetBed

from faults.net_probe import CUT

pytestmark = pytest.mark.root
LIMIT = 256 << 10
TOLERANCE = 0.20


@pytest.fixture
def stream(net_bed: NetBed) -> Iterator[subprocess.Popen]:
    """An unpaced transfer from h1 to h2's sink for as long as the test runs; ended by its pid."""
    argv = net_bed.argv("h1", [PY, "-m", "faults.net_probe", "rate", f"{net_bed.addr('h2')}:{PORT}", "--seconds",
                               "600"])
    proc = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)


def test_net_bandwidth_on_a_busy_link_is_measured_by_its_class_not_by_the_probe(net_bed, state_dir, stream):
    before = net_bed.snapshot("h1")
    fault = {"kind": "net_bandwidth", "params": {"peers": ["n2"], "rate_bps": LIMIT}, "id": "slow-n2"}
    driver = net_bed.driver("h1", state_dir, [fault])
    result = driver.results["slow-n2"]
    assert "verify" in result, result
    peer = result["verify"]["peers"]["n2"]
    assert abs(peer["class_ratio"] - 1) <= TOLERANCE and peer["shaping"], peer
    assert peer["settled"] and peer["counters"]["backlog_max"] > 0, peer  # the stream keeps the class queued
    assert peer["counters"]["bytes"] > 2 * peer["probe_bytes"], peer  # the class carried the stream, not the probe

    reverted = driver.revert()["slow-n2"]["revert"]
    assert reverted["root_qdisc_after"] == "noqueue 0:"
    assert net_bed.snapshot("h1") == before


def test_net_bandwidth_whose_class_carries_nothing_fails_in_one_line(net_bed, state_dir):
    """The probe's sink named for n2 is really h3's: the probe leaves unshaped and n2's class counts nothing."""
    before = net_bed.snapshot("h1")
    target = net_bed.target("h1")
    target["extras"]["sinks"]["n2"] = f"{net_bed.addr('h3')}:{PORT}"
    fault = {"kind": "net_bandwidth", "params": {"peers": ["n2"], "rate_bps": LIMIT}, "id": "slow-n2"}
    driver = net_bed.driver("h1", state_dir, [fault], target=target)
    out = driver.results["slow-n2"]
    assert out["error"] == "FaultNotEffective" and "\n" not in out["message"], out
    classid = out["apply"]["classes"]["n2"]
    assert out["message"].startswith(f"slow-n2 (net_bandwidth on n1): not effective: class {classid} to n2 sent 0 "
                                     f"B/s (0.0x; probe "), out["message"]
    assert out["message"].endswith(f"against {LIMIT} B/s ±20% with the class shaping (overlimits, drops or a "
                                   f"backlog)"), out["message"]
    assert out["evidence"]["peers"]["n2"]["class_rate_bps"] == 0
    assert driver.revert()["slow-n2"]["revert"]["root_qdisc_after"] == "noqueue 0:"  # applied, then reverted
    assert net_bed.snapshot("h1") == before


def test_partition_of_a_busy_link_drops_the_streams_packets_too(net_bed, state_dir, stream):
    driver = net_bed.driver("h1", state_dir, [{"kind": "partition", "params": {"peers": ["n2"]}, "id": "cut-n2"}])
    peer = driver.results["cut-n2"]["verify"]["peers"]["n2"]
    assert peer["connect"] in CUT and peer["dropped_during_probe"] > 0, peer
    assert peer["dropped_since_apply"]["packets"] > peer["dropped_during_probe"], peer  # the stream's, not only ours
    driver.revert()
    assert "RMQ-" not in net_bed.out("h1", ["iptables-save"])

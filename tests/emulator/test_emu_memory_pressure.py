"""The master under the `memory_pressure` fault: its memory cgroup limit is lowered far below its resident set with a
swap file added, so most of its JVM-like heap (the eden every request is copied into) and of the interpreter's own
memory goes to swap. Measured: the broker's VmSwap > 0, sends keep getting answers while the request threads fault
their pages back in, and the slowest answers come much later than before; reverted (limit lifted, swap file off),
VmSwap is back to 0 and sends go on.

On this machine the swap file sits on a virtio disk whose reads the host caches, so a swap-in costs tens of
microseconds: the median latency does not move, only the tail does, most of all while the limit comes down and the
kernel pushes ~100 MiB out to swap (the slowest send of the 6 s from the limit change took 44-300 ms against a
healthy p99 of 5-12 ms in our runs; measured from after `verify`, a steady swapping state, it was within noise)."""
from __future__ import annotations

import time

import pytest
from emu_cluster import poll
from emu_load import Flood

from faults.memory_pressure import MemoryPressure
from faults.system import swapfiles
from faults.system.procs import swap_bytes

pytestmark = pytest.mark.root
TOPIC = "SwapTopic"
HEAP = "-Xms96m -Xmx96m -Xmn64m"
LIMIT_BYTES = 16 << 20
WINDOW_S = 6.0
TAIL_FACTOR = 3.0


def _p99(outcomes) -> float:
    lat = sorted(o.latency_ms for o in outcomes)
    return lat[int(len(lat) * 0.99)]


def test_swapping_master_keeps_answering_slower(emu_cluster):
    if swapfiles.active_swaps():
        pytest.skip("the machine has swap of its own; this test checks the swap file the fault adds")
    cluster = emu_cluster(cgroups=True, heap=HEAP)
    cluster.create_topic(TOPIC, 4)
    (pid,) = cluster.target("master").pids()
    with Flood(cluster.producer(), TOPIC, threads=8, body_size=1024) as flood:
        poll(lambda: flood.count(0, "SEND_OK") >= 300, 30, "SEND_OK before the fault")
        healthy_at = time.monotonic()
        poll(lambda: time.monotonic() - healthy_at >= WINDOW_S, WINDOW_S + 2, "a healthy window")
        healthy = flood.since(healthy_at)
        assert swap_bytes(pid)["vm_swap"] == 0
        fault = MemoryPressure(cluster.target("master"), {"limit_bytes": LIMIT_BYTES}, journal=cluster.journal)
        swapped_at = time.monotonic()  # from the moment the memory is taken away (the kernel swaps it out then)
        fault.apply()
        evidence = fault.verify()
        assert evidence["pids"][pid]["vm_swap"] > 0
        poll(lambda: time.monotonic() - swapped_at >= WINDOW_S, WINDOW_S + 5, "a swapping window")
        swapping = flood.since(swapped_at)
        vm_swap = swap_bytes(pid)["vm_swap"]
        fault.revert()
        reverted_at = time.monotonic()
        poll(lambda: flood.count(reverted_at, "SEND_OK") >= 100, 30, "SEND_OK after the revert")
    assert vm_swap > 0, "the broker's heap was swapped out"  # our own reading of /proc/<pid>/status
    assert swap_bytes(pid)["vm_swap"] == 0, "swapoff brought every page back"
    # the broker kept answering while swapping, every send got an answer from it (a send status or a broker code)
    answered = [o for o in swapping if o.code is not None]
    assert len(answered) >= 50 and len(answered) == len(swapping), flood.words(swapped_at)
    slowest = max(o.latency_ms for o in swapping)
    assert slowest > TAIL_FACTOR * _p99(healthy), (_p99(healthy), _p99(swapping), slowest)

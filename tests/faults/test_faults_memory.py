"""memory_pressure against a real node: the node's own private memory goes to swap (VmSwap > 0) through a lowered
cgroup limit and/or a hog in its cgroup, on a swap file added for the purpose; revert restores the limit, ends the
hog, and switches the swap file off (pages come back: VmSwap 0)."""
from __future__ import annotations

import pytest

from faults.errors import FaultRefused
from faults.memory_pressure import MemoryPressure
from faults.system import cgroupfs, swapfiles
from faults.system.procs import swap_bytes, tagged

pytestmark = pytest.mark.root


@pytest.fixture
def no_machine_swap():
    if swapfiles.active_swaps():
        pytest.skip("the machine has swap of its own; this test checks the swap file the fault adds")


def test_memory_pressure_limit_swaps_the_node_and_reverts(nodes, journal, no_machine_swap):
    node = nodes("slave")
    (pid,) = node.target.pids()
    assert swap_bytes(pid)["vm_swap"] == 0
    fault = MemoryPressure(node.target, {"limit_fraction": 0.5}, journal=journal)
    applied = fault.apply()
    swap_file = applied["swap_file"]["path"]
    assert [s["path"] for s in swapfiles.active_swaps()] == [swap_file]
    evidence = fault.verify()
    assert evidence["pids"][pid]["vm_swap"] > 0
    assert swap_bytes(pid)["vm_swap"] > 0  # our own reading of /proc/<pid>/status
    assert node.status()["writes"] >= 0  # still answering while swapped
    fault.revert()
    mem = node.cgroups.paths["memory"]
    assert int(cgroupfs.read(mem, "memory.limit_in_bytes")) >= 1 << 62
    assert swapfiles.active_swaps() == [] and not __import__("os").path.exists(swap_file)
    assert swap_bytes(pid)["vm_swap"] == 0


def test_memory_pressure_hog_inside_a_limited_node(nodes, journal, no_machine_swap):
    node = nodes("slave")
    node.cgroups.set_memory_limit(96 << 20)
    try:
        fault = MemoryPressure(node.target, {"hog_bytes": "80MiB"}, journal=journal)
        applied = fault.apply()
        hog_pid = applied["hog"]["pid"]
        assert hog_pid in cgroupfs.members(node.cgroups.paths["memory"])
        evidence = fault.verify()
        assert any(v["vm_swap"] > 0 for v in evidence["pids"].values())
        fault.revert()
        assert tagged(fault.tag) == [] and swapfiles.active_swaps() == []
        assert cgroupfs.read(node.cgroups.paths["memory"], "memory.limit_in_bytes") == str(96 << 20)
    finally:
        node.cgroups.set_memory_limit(None)


def test_hog_alone_is_refused_on_an_unlimited_node(nodes, journal):
    node = nodes("slave")
    with pytest.raises(FaultRefused, match="a hog alone cannot make node slave swap"):
        MemoryPressure(node.target, {"hog_bytes": "8MiB"}, journal=journal).apply()
    assert journal.open_entries() and all(e.kind.startswith("resource:") for e in journal.open_entries())

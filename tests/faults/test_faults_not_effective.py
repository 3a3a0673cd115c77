"""A verify that does not measure the effect raises `FaultNotEffective` whose text is one line,
`<fault id> (<kind> on <target>): not effective: <measured> against <bound>`, whatever the evidence holds; and the
verify rules that the load of a run could fool: a write probe in D state somewhere other than a frozen
superblock is not "blocked", a probe not yet scheduled is waited for, a node already in swap must swap more."""
from __future__ import annotations

import os

import pytest

import faults.memory_pressure
import faults.probe
from faults.base import Fault
from faults.errors import FaultNotEffective
from faults.journal import Journal
from faults.memory_pressure import MemoryPressure
from faults.system.procs import ProcId
from faults.target import NodeTarget, StaticPids


class Stubborn(Fault):
    kind = "stubborn"
    summary = "never takes effect"
    VERIFY_TIMEOUT_S = 0.0

    def plan(self) -> list[dict]:
        return []

    def inject(self) -> dict:
        return {}

    def measure(self) -> tuple[bool, dict]:
        return False, {"seen": "a line\nand another", "nested": {"x": 1}}


def _target() -> NodeTarget:
    return NodeTarget(name="slave", role="slave", run_id="r1", pids=StaticPids([ProcId.of(os.getpid())]))


def test_not_effective_is_one_line_naming_the_fault_the_measurement_and_the_bound(tmp_path):
    events: list[dict] = []
    fault = Stubborn(_target(), journal=Journal(tmp_path), emit=events.append, fault_id="never")
    with pytest.raises(FaultNotEffective) as err:
        fault.verify()
    assert str(err.value) == "never (stubborn on slave): not effective: seen=a line and another, nested=x=1 against " \
                             "the effect of stubborn measured within 0 s"
    assert err.value.evidence["seen"] == "a line\nand another" and "verify_s" in err.value.evidence
    assert events[-1]["action"] == "verify" and events[-1]["status"] == "failed"
    assert events[-1]["error"] == str(err.value)


@pytest.mark.parametrize(("state", "where", "blocked"), [
    ("D", "percpu_rwsem_wait", True),  # a frozen superblock's write lock
    ("D", "0", True),  # a kernel that hides wchan: any D state
    ("D", "balance_dirty_pages", False),  # a busy store throttling its dirty pages
    ("D", "wait_transaction_locked", False),  # the ext4 journal under load
    ("S", "pipe_wait", False),
])
def test_a_write_probe_counts_as_blocked_only_where_a_freeze_holds_it(tmp_path, monkeypatch, state, where,
                                                                        blocked):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # the child's open() waits for a reader that never comes: it never finishes by itself
    monkeypatch.setattr(ProcId, "state", lambda self: state)
    monkeypatch.setattr(faults.probe, "wchan", lambda pid: where)
    probe = faults.probe.blocked_write_probe(str(fifo), "t-test", 0.05)
    assert probe["blocked"] is blocked and probe["wchan"] == where, probe


def test_a_write_probe_not_yet_scheduled_is_waited_for(tmp_path, monkeypatch):
    """Runnable (R) at the deadline means it has not reached its write: it is watched until it leaves R."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    states = iter(["R", "R", "R"])
    monkeypatch.setattr(ProcId, "state", lambda self: next(states, "D"))
    monkeypatch.setattr(faults.probe, "wchan", lambda pid: "percpu_rwsem_wait")
    probe = faults.probe.blocked_write_probe(str(fifo), "t-test", 0.05)
    assert probe["blocked"] and probe["state"] == "D", probe


def test_a_node_already_in_swap_must_swap_more(tmp_path, monkeypatch):
    fault = MemoryPressure(_target(), {"limit_bytes": 64 << 20}, journal=Journal(tmp_path), fault_id="swap")
    fault.state.update(cgroup=str(tmp_path), swapped_before=10 << 20, limit=64 << 20)
    monkeypatch.setattr(faults.memory_pressure.cgroupfs, "read", lambda cg, knob: "123")
    monkeypatch.setattr(faults.memory_pressure.cgroupfs, "memory_files", lambda cg: {"usage": "u"})
    swapped = iter([10 << 20, 12 << 20])
    monkeypatch.setattr(faults.memory_pressure, "_swapped", lambda pids: next(swapped))
    assert fault.measure()[0] is False  # as much in swap as before the fault: not its doing
    ok, evidence = fault.measure()
    assert ok and evidence["swapped"] == 12 << 20 and evidence["swapped_before"] == 10 << 20
    measured, bound = fault.shortfall(evidence)
    assert bound == "more in swap than before the fault" and measured.startswith(f"{12 << 20} B of the node's")

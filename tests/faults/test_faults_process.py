"""freeze (SIGSTOP and cgroup freezer), kill (with a timed restart) and restart against a real node process."""
from __future__ import annotations

import socket

import pytest
from waiting import poll

from faults.errors import FaultConflict
from faults.node_restart import NodeRestart
from faults.process_freeze import ProcessFreeze
from faults.process_kill import ProcessKill
from faults.system import cgroupfs
from faults.system.procs import ProcId

pytestmark = pytest.mark.root


def _writes(node) -> int:
    return node.status()["writes"]


@pytest.mark.parametrize("method", ["signal", "cgroup"])
def test_freeze_stops_the_node_and_revert_resumes_it(nodes, journal, method):
    node = nodes("slave")
    (pid,) = node.target.pids()
    proc = ProcId.of(pid)
    fault = ProcessFreeze(node.target, {"method": method}, journal=journal)
    fault.apply()
    evidence = fault.verify()
    if method == "signal":
        assert evidence["states"] == {pid: "T"} and proc.state() == "T"
    else:
        assert evidence["freezer"] == "FROZEN" and cgroupfs.read(node.cgroups.paths["freezer"], "freezer.state") \
            == "FROZEN"
    with pytest.raises(TimeoutError):  # a frozen node does not answer (the kernel still accepts the connection)
        with socket.create_connection(("127.0.0.1", node.port), timeout=0.3) as s:
            s.settimeout(0.3)
            s.recv(1)
    fault.revert()
    assert proc.state() in ("R", "S", "D")
    before = _writes(node)
    assert poll(lambda: _writes(node) > before)


def test_kill_with_timed_restart(nodes, journal, events):
    node = nodes("slave")
    (old,) = node.target.pids()
    fault = ProcessKill(node.target, {"restart_after_s": 0.3}, journal=journal, emit=events.append)
    fault.apply()
    assert fault.verify()["left"] == {}
    assert poll(lambda: node.target.pids() and node.target.pids() != [old], 30)
    assert poll(lambda: any(e.get("step") == "restart" and e["status"] == "ok" for e in events), 30)
    node.control.wait_ready(30)
    assert _writes(node) >= 0
    result = fault.revert()
    assert result["undo"][0]["result"] == {"restart": "not needed"}


def test_kill_then_revert_starts_the_node(nodes, journal):
    node = nodes("slave")
    (old,) = node.target.pids()
    fault = ProcessKill(node.target, {}, journal=journal)
    fault.apply()
    fault.verify()
    assert node.target.pids() == []
    fault.revert()
    assert node.target.pids() and node.target.pids() != [old]


def test_a_restart_never_starts_the_node_beside_its_old_processes(nodes, journal, monkeypatch):
    """The restart waits until the killed processes have exited (their ports and store files let go), not until
    they are dying; a process still there at the bound is named and nothing is started. Here the "kill" is a
    SIGCONT, which leaves the process running."""
    from faults import process_kill
    from faults.errors import FaultError

    monkeypatch.setattr(process_kill, "GONE_TIMEOUT_S", 0.3)
    node = nodes("slave")
    (old,) = node.target.pids()
    fault = ProcessKill(node.target, {"signal": "SIGCONT"}, journal=journal)
    fault.apply()
    with pytest.raises(FaultError, match=rf"killed pids \[{old}\] not gone after 0.3 s; not starting the node"):
        fault.revert()
    assert node.target.pids() == [old]


def test_restart_is_one_shot_and_gives_new_pids(nodes, journal):
    node = nodes("slave")
    (old,) = node.target.pids()
    fault = NodeRestart(node.target, {}, journal=journal)
    fault.apply()
    evidence = fault.verify()
    assert evidence["old_pids"] == [old] and evidence["new_pids"] != [old]
    assert fault.revert() == {"reverted": False, "reason": "one-shot"}
    assert not [e for e in journal.open_entries() if e.kind.startswith("fault:")]


def test_two_faults_on_one_node_conflict_but_compose_across_nodes(nodes, journal):
    slave, master = nodes("slave"), nodes("master", role="master")
    first = ProcessFreeze(slave.target, {}, journal=journal)
    first.apply()
    try:
        with pytest.raises(FaultConflict, match="already held"):
            ProcessKill(slave.target, {}, journal=journal).apply()
        other = ProcessFreeze(master.target, {"method": "cgroup"}, journal=journal)
        other.apply()
        assert other.verify()["freezer"] == "FROZEN" and first.verify()["states"]
        other.revert()
    finally:
        first.revert()

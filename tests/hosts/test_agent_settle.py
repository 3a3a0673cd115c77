"""The agent's `node_destroy` settles the faults on the node it takes down whose revert failed (a kill whose
restart would not start the node): replayed from the host's journal, dropped from the agent, so closing the agent
later does not try the revert again; the faults on other nodes stay."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from faults.journal import Journal
from harness.agent import ops


def fault_on(journal: Journal, node: str, leftover: Path) -> SimpleNamespace:
    leftover.write_text("x")
    entry = journal.begin("fault:test", undo=[{"op": "rm", "path": str(leftover)}], run_id="r1")
    return SimpleNamespace(target=SimpleNamespace(name=node), entry_id=entry)


def test_the_faults_of_a_destroyed_node_are_settled_and_only_those(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "state")
    mine, theirs = tmp_path / "master-fault", tmp_path / "slave-fault"
    agent = SimpleNamespace(journal=journal, faults={"kill-master": fault_on(journal, "master", mine),
                                                     "freeze-slave": fault_on(journal, "slave", theirs)})
    ops._settle_faults_of(agent, "master")
    assert list(agent.faults) == ["freeze-slave"]
    assert not mine.exists() and theirs.exists()
    assert [e.id for e in journal.open_entries()] == [agent.faults["freeze-slave"].entry_id]

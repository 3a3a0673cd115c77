"""The journal: intents are on disk before the change, claims conflict, torn lines are skipped, owners are recognised
as dead despite pid reuse checks, compaction archives finished entries."""
from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from faults.errors import FaultConflict
from faults.journal import Journal, Owner
from faults.system.procs import ProcId


def test_entry_lifecycle_folds_records(state_dir):
    j = Journal(state_dir)
    eid = j.begin("fault:x", undo=[{"op": "rm", "path": "/nonexistent"}], claims=["store:/a"], run_id="r",
                  target="slave", data={"k": 1})
    (e,) = j.open_entries()
    assert (e.id, e.kind, e.run_id, e.target, e.claims, e.data) == (eid, "fault:x", "r", "slave", ["store:/a"],
                                                                     {"k": 1})
    j.update(eid, undo=[{"op": "rmdir", "path": "/nonexistent"}], data={"more": 2})
    assert j.get(eid).undo == [{"op": "rmdir", "path": "/nonexistent"}]
    assert j.get(eid).data == {"k": 1, "more": 2}
    j.done(eid, "reverted")
    assert j.open_entries() == [] and j.get(eid).done_how == "reverted"


def test_intent_is_on_disk_as_one_json_line(state_dir):
    j = Journal(state_dir)
    eid = j.begin("resource:y", undo=[])
    lines = (state_dir / "journal.jsonl").read_text().splitlines()
    assert json.loads(lines[-1])["id"] == eid and json.loads(lines[-1])["type"] == "intent"


def test_open_claim_conflicts_until_done(state_dir):
    j = Journal(state_dir)
    first = j.begin("fault:a", undo=[], claims=["memory:/cg"], target="slave")
    with pytest.raises(FaultConflict, match="memory:/cg is already held"):
        j.begin("fault:b", undo=[], claims=["memory:/cg"], target="slave")
    j.begin("fault:c", undo=[], claims=["memory:/other"])
    j.done(first)
    j.begin("fault:b", undo=[], claims=["memory:/cg"])


def test_torn_last_line_is_skipped(state_dir):
    j = Journal(state_dir)
    eid = j.begin("fault:a", undo=[])
    with open(state_dir / "journal.jsonl", "a") as f:
        f.write('{"type": "intent", "id": "torn", "ki')
    assert [e.id for e in j.entries()] == [eid]


def test_owner_of_a_dead_process_is_dead_and_self_is_alive():
    assert Owner.current().alive()
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    owner = Owner.of_pid(child.pid)
    assert owner.alive()
    child.kill()
    child.wait()
    assert not owner.alive()
    assert not Owner(owner.pid, owner.start + 1, owner.boot).alive()  # same pid, other start: another process
    assert not Owner(Owner.current().pid, Owner.current().start, "another-boot").alive()


def test_zombie_owner_is_dead():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    owner = Owner.of_pid(child.pid)
    deadline = time.monotonic() + 10
    while ProcId(owner.pid, owner.start).state() != "Z" and time.monotonic() < deadline:
        time.sleep(0.01)
    assert ProcId(owner.pid, owner.start).state() == "Z"  # exited, not reaped yet
    assert not owner.alive()
    child.wait()


def test_compact_archives_finished_entries(state_dir):
    j = Journal(state_dir)
    done_id = j.begin("fault:a", undo=[])
    open_id = j.begin("fault:b", undo=[{"op": "rm", "path": "/x"}])
    j.done(done_id)
    assert j.compact() == 1
    assert [e.id for e in j.entries()] == [open_id]
    assert [e.id for e in j.archived()] == [done_id]
    assert j.compact() == 0


def test_other_owner_journal_writes_that_owner(state_dir):
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        owner = Owner.of_pid(child.pid)
        eid = Journal(state_dir).with_owner(owner).begin("fault:a", undo=[])
        assert Journal(state_dir).get(eid).owner == owner
    finally:
        child.kill()
        child.wait()

"""`faults.cleanup.settle`: a live run replays its own open journal entries (a fault whose revert failed) once its
cluster is down, as `cleanup` replays a dead run's; `cleanup` itself leaves a live owner's entries alone. An entry
whose undo fails again stays open for a later `rmq-chaos cleanup`."""
from __future__ import annotations

from pathlib import Path

import pytest

from faults.cleanup import cleanup, settle
from faults.errors import UndoError
from faults.journal import Journal


def test_a_live_runs_own_entries_are_settled_and_only_those(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "state")
    left, other = tmp_path / "left-by-the-fault", tmp_path / "another-fault"
    left.write_text("x")
    other.write_text("y")
    mine = journal.begin("fault:test", undo=[{"op": "rm", "path": str(left)}], run_id="r1")
    theirs = journal.begin("fault:test", undo=[{"op": "rm", "path": str(other)}], run_id="r1")
    assert cleanup(tmp_path / "state").live == [theirs, mine]  # the owner (this process) is alive: not touched
    report = settle(journal, [mine])
    assert [r["id"] for r in report.reverted] == [mine] and not report.failed
    assert not left.exists() and other.exists()
    assert [e.id for e in journal.open_entries()] == [theirs]


def test_an_undo_that_fails_again_stays_open(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "state")
    busy = tmp_path / "not-empty"
    busy.mkdir()
    (busy / "f").write_text("z")
    entry = journal.begin("fault:test", undo=[{"op": "rmdir", "path": str(busy)}], run_id="r1")
    report = settle(journal, [entry])
    assert [f["id"] for f in report.failed] == [entry] and not report.reverted
    with pytest.raises(UndoError, match=f"^still open: {entry}: "):
        report.raise_if_failed()
    assert [e.id for e in journal.open_entries()] == [entry]

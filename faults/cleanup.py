"""`cleanup(state_dir)`: revert whatever dead runs left. Every open journal entry whose owner process is gone (or
every open entry, with `all_owners`) has its undo operations replayed, newest first, and is marked done; cluster
state files of dead owners are removed; the journal is compacted. Idempotent: a second call finds nothing to do."""
from __future__ import annotations

import fcntl
import os
from dataclasses import dataclass, field
from pathlib import Path

from faults.cluster_state import list_clusters, read_cluster_state, remove_cluster_state
from faults.errors import FaultError, UndoError
from faults.events import Emit, discard, stamp
from faults.journal import Entry, Journal, default_state_dir
from faults.system import cgroupfs
from faults.system.procs import ProcId, tagged, terminate
from faults.undo import UndoContext, run_ops

CLEANUP_LOCK = "cleanup.lock"


@dataclass
class CleanupReport:
    reverted: list[dict] = field(default_factory=list)
    failed: list[dict] = field(default_factory=list)
    live: list[str] = field(default_factory=list)
    clusters_removed: list[str] = field(default_factory=list)
    left: list[str] = field(default_factory=list)
    """Measured on the machine after a failure (`faults.leftovers`): what the failed runs still have."""

    @property
    def ok(self) -> bool:
        return not self.failed

    def raise_if_failed(self) -> None:
        """Raise one line naming every entry still open and its undo's error (a settle that did not finish)."""
        if self.failed:
            raise UndoError(f"still open: {', '.join(f['id'] + ': ' + f['error'] for f in self.failed)}")

    def to_dict(self) -> dict:
        return {"ok": self.ok, "reverted": self.reverted, "failed": self.failed, "live": self.live,
                "clusters_removed": self.clusters_removed, "left": self.left}


def cleanup(state_dir: str | os.PathLike[str] | None = None, *, all_owners: bool = False,
            emit: Emit | None = None) -> CleanupReport:
    """Revert the open entries of dead owners (all open entries with `all_owners`), newest first."""
    emit = emit or discard
    state = Path(state_dir) if state_dir is not None else default_state_dir()
    report = CleanupReport()
    if not state.exists():
        return report
    journal = Journal(state)
    with open(state / CLEANUP_LOCK, "a+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one cleanup at a time per state dir
        entries = sorted(journal.open_entries(), key=lambda e: e.seq, reverse=True)
        for e in entries:
            if not all_owners and e.owner.alive():
                report.live.append(e.id)
                continue
            _replay(journal, e, "cleanup", report, emit)
        _end_stragglers(report.reverted, journal)
        for cid in list_clusters(state):
            try:
                owner = read_cluster_state(state, cid).owner
            except (FaultError, KeyError):
                owner = None
            if owner is None or all_owners or not owner.alive():
                remove_cluster_state(state, cid)
                report.clusters_removed.append(cid)
        if not report.failed:
            journal.compact()
        else:
            report.left = _left_by_failed(state, journal, report.failed)
    return report


def settle(journal: Journal, entry_ids: list[str], emit: Emit | None = None) -> CleanupReport:
    """Replay, as `cleanup` does, the undo of this process's own open entries `entry_ids` (newest first): for a run
    whose fault revert failed, once its cluster is down (what is left of the fault is then only the journal's
    record, or the part of it the failed revert did not reach). An entry whose undo fails again stays open."""
    emit = emit or discard
    report = CleanupReport()
    wanted = set(entry_ids)
    for e in sorted((e for e in journal.open_entries() if e.id in wanted), key=lambda e: e.seq, reverse=True):
        _replay(journal, e, "settled after the cluster went down", report, emit)
    return report


def _replay(journal: Journal, e: Entry, how: str, report: CleanupReport, emit: Emit) -> None:
    """Replay one open entry's undo and mark it done with `how`; the outcome goes into `report` and a `cleanup`
    event. A failure leaves the entry open."""
    item = {"id": e.id, "kind": e.kind, "run_id": e.run_id, "target": e.target, "owner_pid": e.owner.pid}
    try:
        item["undo"] = run_ops(e.undo, own_context(journal, e))
        journal.done(e.id, how)
        report.reverted.append(item)
        emit({**stamp(), "event": "cleanup", "entry": item, "status": "ok"})
    except (UndoError, FaultError, OSError) as err:
        item["error"] = str(err)
        item["undo"] = getattr(err, "results", [])
        report.failed.append(item)
        emit({**stamp(), "event": "cleanup", "entry": item, "status": "failed"})


def _end_stragglers(reverted: list[dict], journal: Journal) -> None:
    """What a dead run started in its last moments and its replayed entries could not see yet: a child it had forked
    but not exec'd carries no tag until its exec (the entry's tag scan misses it), and then joins the node's cgroups.
    Once every entry is replayed, processes with a replayed entry's tag are ended and what is left of those runs'
    cgroups (`<root>/rmq-chaos/<run-id>`) is removed with its members (a late child that joins afterwards finds no
    group and exits). A run that still has an open entry (a live owner's, or one that failed) is left alone: its
    cluster may be held by a live process."""
    still_open = {e.run_id for e in journal.open_entries()}
    ids = {item["id"] for item in reverted if item.get("run_id") not in still_open}
    ops = [op for e in journal.entries() if e.id in ids for op in e.undo]
    tags = {op["tag"] for op in ops if op.get("op") == "kill_procs" and op.get("tag")}
    if tags:
        terminate(tagged(tags))
    runs = {e.run_id for e in journal.entries() if e.id in ids and e.run_id
            and any(op.get("op") == "cgroup_remove" for op in e.undo)}  # groups this machine made for the run
    for run_id in sorted(runs):
        for path in cgroupfs.run_dirs(run_id, cgroupfs.NODE_CONTROLLERS):
            try:
                cgroupfs.remove(path)
            except (FaultError, OSError):
                pass  # measured afterwards by the caller's leftover scan


def _left_by_failed(state: Path, journal: Journal, failed: list[dict]) -> list[str]:
    """What the state dir's runs still have on the machine, measured (mounts, loop devices, tagged processes, swap,
    cgroups; `faults.leftovers`) under the state dir and at the mounts and images the failed entries name."""
    from faults.leftovers import scan_leftovers

    ids = {item["id"] for item in failed}
    roots = sorted({op[k] for e in journal.entries() if e.id in ids for op in e.undo for k in ("mount", "image")
                    if isinstance(op.get(k), str)})
    try:
        return scan_leftovers(state, roots)
    except OSError as err:
        return [f"the leftover scan failed: {err}"]


def own_context(journal: Journal, entry: Entry) -> UndoContext:
    """What replaying `entry` may treat as the dead run's own: the journal ids of its run (processes carry them as
    their tag) and every process its entries recorded (pid and start time)."""
    same_run = [x for x in journal.entries() + journal.archived()
                if x.id == entry.id or (entry.run_id and x.run_id == entry.run_id)]
    procs: dict[int, ProcId] = {}
    for x in same_run:
        for op in x.undo:
            found = list(op.get("procs") or []) + list((op.get("pids") or {}).get("static") or [])
            for raw in found:
                try:
                    p = ProcId.from_json(raw)
                except (TypeError, ValueError, IndexError):
                    continue
                procs[p.pid] = p
    return UndoContext(own_tags=frozenset(x.id for x in same_run), own_procs=tuple(procs.values()))

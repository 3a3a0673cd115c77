"""The journal: an append-only JSONL file in the state dir where every change to the system is announced (fsync'ed)
before it is made, with the operations that undo it as data, and marked done once undone. Entries carry their owner
process (pid + start time + boot id) so `cleanup` recognises a dead owner despite pid reuse.

Records (one JSON object per line):
  {"type": "intent", "id", "kind", "owner", "run_id", "target", "claims", "undo", "data", "wall_ns"}
  {"type": "update", "id", "undo"?, "data"?}        undo replaces, data is merged
  {"type": "done", "id", "how", "wall_ns"}
"""
from __future__ import annotations

import errno
import fcntl
import json
import os
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from faults.errors import FaultConflict, JournalError
from faults.system.procs import ProcId, boot_id, is_dying, read_stat

STATE_ENV = "RMQ_CHAOS_STATE"
DEFAULT_STATE_DIR = "/var/lib/rmq-chaos"
JOURNAL_FILE = "journal.jsonl"
ARCHIVE_FILE = "journal.archive.jsonl"
LOCK_FILE = "journal.lock"


def default_state_dir() -> Path:
    """`$RMQ_CHAOS_STATE`, else /var/lib/rmq-chaos."""
    return Path(os.environ.get(STATE_ENV) or DEFAULT_STATE_DIR)


@dataclass(frozen=True)
class Owner:
    """The process an entry belongs to; the entry is orphaned once this process is gone."""

    pid: int
    start: int
    boot: str

    @classmethod
    def current(cls) -> Owner:
        st = read_stat(os.getpid())
        assert st is not None
        return cls(os.getpid(), st[2], boot_id())

    @classmethod
    def of_pid(cls, pid: int) -> Owner | None:
        p = ProcId.of(pid)
        return cls(pid, p.start, boot_id()) if p else None

    def alive(self) -> bool:
        if self.boot != boot_id():
            return False
        st = read_stat(self.pid)
        return st is not None and st[2] == self.start and st[0] not in ("Z", "X") and not is_dying(self.pid)

    def to_json(self) -> dict:
        return {"pid": self.pid, "start": self.start, "boot": self.boot}

    @classmethod
    def from_json(cls, data: dict) -> Owner:
        return cls(int(data["pid"]), int(data["start"]), str(data["boot"]))


@dataclass
class Entry:
    """One journaled change, folded from its records."""

    id: str
    kind: str
    owner: Owner
    run_id: str = ""
    target: str = ""
    claims: list[str] = field(default_factory=list)
    undo: list[dict] = field(default_factory=list)
    data: dict = field(default_factory=dict)
    wall_ns: int = 0
    seq: int = 0
    done: bool = False
    done_how: str = ""

    @property
    def open(self) -> bool:
        return not self.done


class Journal:
    """The journal of one state dir, writing as `owner` (default: this process)."""

    def __init__(self, state_dir: str | os.PathLike[str] | None = None, owner: Owner | None = None) -> None:
        self.state_dir = Path(state_dir) if state_dir is not None else default_state_dir()
        self.owner = owner or Owner.current()
        self.path = self.state_dir / JOURNAL_FILE
        self.state_dir.mkdir(parents=True, exist_ok=True)

    def with_owner(self, owner: Owner) -> Journal:
        """The same journal, writing entries owned by `owner` (e.g. the process that keeps a cluster)."""
        return Journal(self.state_dir, owner)

    @staticmethod
    def new_id(prefix: str = "e") -> str:
        return f"{prefix}-{uuid.uuid4().hex[:12]}"

    @contextmanager
    def locked(self, exclusive: bool = True) -> Iterator[None]:
        try:
            lock = open(self.state_dir / LOCK_FILE, "a+b")  # noqa: SIM115 - closed below
        except OSError as err:
            raise JournalError(f"cannot lock the journal in {self.state_dir}: {(err.strerror or str(err)).lower()}; "
                               "nothing was changed") from None
        with lock:
            fcntl.flock(lock, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _append(self, record: dict) -> None:
        """One record on disk (fsync) before returning; `JournalError` (one line) when it cannot be."""
        line = (json.dumps(record, sort_keys=True, separators=(",", ":")) + "\n").encode()
        new = not self.path.exists()
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                if os.write(fd, line) != len(line):
                    raise OSError(errno.ENOSPC, "short write")
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as err:
            what = record.get("kind") or record.get("type")
            raise JournalError(f"cannot journal {what} in {self.path}: {(err.strerror or str(err)).lower()}; "
                               "nothing was changed for it") from None
        if new:
            dfd = os.open(self.state_dir, os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)

    def begin(self, kind: str, *, undo: list[dict], claims: list[str] | None = None, run_id: str = "",
              target: str = "", data: dict | None = None, entry_id: str | None = None) -> str:
        """Announce a change before making it. Raises `FaultConflict` when an open entry holds one of `claims`."""
        entry_id = entry_id or self.new_id()
        claims = list(claims or [])
        with self.locked():
            if claims:
                for e in self.entries():
                    held = sorted(set(claims) & set(e.claims)) if e.open else []
                    if held:
                        raise FaultConflict(f"{kind} on {target or '?'}: {held[0]} is already held by open journal "
                                            f"entry {e.id} ({e.kind}, owner pid {e.owner.pid}); revert it or run "
                                            f"`rmq-chaos cleanup` first")
            self._append({"type": "intent", "id": entry_id, "kind": kind, "owner": self.owner.to_json(),
                          "run_id": run_id, "target": target, "claims": claims, "undo": undo, "data": data or {},
                          "wall_ns": time.time_ns()})
        return entry_id

    def update(self, entry_id: str, *, undo: list[dict] | None = None, data: dict | None = None) -> None:
        record: dict = {"type": "update", "id": entry_id}
        if undo is not None:
            record["undo"] = undo
        if data is not None:
            record["data"] = data
        with self.locked():
            self._append(record)

    def done(self, entry_id: str, how: str = "reverted") -> None:
        with self.locked():
            self._append({"type": "done", "id": entry_id, "how": how, "wall_ns": time.time_ns()})

    def _records(self) -> Iterator[dict]:
        try:
            with open(self.path, "rb") as f:
                raw = f.read()
        except FileNotFoundError:
            return
        for line in raw.splitlines():
            try:
                yield json.loads(line)
            except ValueError:
                continue  # a line torn by a crash mid-write: its change was never begun

    def entries(self) -> list[Entry]:
        """All entries in the order they were begun."""
        found: dict[str, Entry] = {}
        for seq, r in enumerate(self._records()):
            eid = r.get("id")
            if r.get("type") == "intent":
                found[eid] = Entry(id=eid, kind=r["kind"], owner=Owner.from_json(r["owner"]),
                                   run_id=r.get("run_id", ""), target=r.get("target", ""),
                                   claims=r.get("claims", []), undo=r.get("undo", []), data=r.get("data", {}),
                                   wall_ns=r.get("wall_ns", 0), seq=seq)
            elif eid in found and r.get("type") == "update":
                if "undo" in r:
                    found[eid].undo = r["undo"]
                found[eid].data.update(r.get("data", {}))
            elif eid in found and r.get("type") == "done":
                found[eid].done, found[eid].done_how = True, r.get("how", "")
        return list(found.values())

    def open_entries(self) -> list[Entry]:
        return [e for e in self.entries() if e.open]

    def get(self, entry_id: str) -> Entry | None:
        return next((e for e in self.entries() if e.id == entry_id), None)

    def compact(self) -> int:
        """Move finished entries to the archive file and rewrite the journal with the open ones (atomic rename under
        the lock); returns how many entries moved."""
        with self.locked():
            entries = self.entries()
            keep = [e for e in entries if e.open]
            gone = [e for e in entries if not e.open]
            if not gone:
                return 0
            with open(self.state_dir / ARCHIVE_FILE, "a", encoding="utf-8") as f:
                for e in gone:
                    f.write(_dumps({**_intent(e), "done_how": e.done_how}))
                f.flush()
                os.fsync(f.fileno())
            tmp = self.path.with_suffix(".tmp")
            with open(tmp, "w", encoding="utf-8") as f:
                for e in keep:
                    f.write(_dumps(_intent(e)))
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
            return len(gone)

    def archived(self) -> list[Entry]:
        """Finished entries moved out by `compact`."""
        out = []
        try:
            with open(self.state_dir / ARCHIVE_FILE, encoding="utf-8") as f:
                for line in f:
                    try:
                        r = json.loads(line)
                    except ValueError:
                        continue
                    out.append(Entry(id=r["id"], kind=r["kind"], owner=Owner.from_json(r["owner"]),
                                     run_id=r.get("run_id", ""), target=r.get("target", ""), undo=r.get("undo", []),
                                     data=r.get("data", {}), wall_ns=r.get("wall_ns", 0), done=True,
                                     done_how=r.get("done_how", "")))
        except FileNotFoundError:
            pass
        return out


def _intent(e: Entry) -> dict:
    return {"type": "intent", "id": e.id, "kind": e.kind, "owner": e.owner.to_json(), "run_id": e.run_id,
            "target": e.target, "claims": e.claims, "undo": e.undo, "data": e.data, "wall_ns": e.wall_ns}


def _dumps(record: dict) -> str:
    return json.dumps(record, sort_keys=True, separators=(",", ":")) + "\n"

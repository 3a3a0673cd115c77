"""The replicated entry log of one member (DLedger's `DLedgerMmapFileStore`, kept simple): entries (index from 0,
the leader's term when it was appended, a body) in `<storeBaseDir>/dledger-<selfId>/data/entries`, one line
each, appended as they come and rewritten when a follower must cut a suffix the leader does not have. The end index
and term are what a vote compares (a candidate whose log is behind is refused, so a new leader holds every
committed entry); `committed_index` moves when a quorum holds an entry of the current term."""
from __future__ import annotations

import base64
import os
import threading
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Entry:
    index: int
    term: int
    body: bytes


class Ledger:
    def __init__(self, data_dir: str) -> None:
        self.data_dir = data_dir
        os.makedirs(data_dir, exist_ok=True)
        self.path = os.path.join(data_dir, "entries")
        self.entries: list[Entry] = []
        self.committed_index = -1
        self.lock = threading.RLock()
        self._load()
        self._file = open(self.path, "a", encoding="ascii")

    @property
    def end_index(self) -> int:
        return len(self.entries) - 1

    @property
    def end_term(self) -> int:
        return self.entries[-1].term if self.entries else -1

    def term_at(self, index: int) -> int:
        return self.entries[index].term if 0 <= index < len(self.entries) else -1

    def append(self, term: int, body: bytes) -> Entry:
        """Leader: append a new entry of `term`."""
        with self.lock:
            entry = Entry(len(self.entries), term, body)
            self._write(entry)
            return entry

    def accept(self, prev_index: int, prev_term: int, entries: list[Entry]) -> bool:
        """Follower: take the leader's `entries` after (prev_index, prev_term); False when this log does not hold
        that entry (the leader then backs off). A conflicting suffix is cut first."""
        with self.lock:
            if prev_index >= 0 and self.term_at(prev_index) != prev_term:
                return False
            for entry in entries:
                if entry.index <= self.end_index:
                    if self.term_at(entry.index) == entry.term:
                        continue
                    self._truncate(entry.index)
                self._write(entry)
            return True

    def get(self, start: int, max_count: int) -> list[Entry]:
        with self.lock:
            return self.entries[start:start + max_count]

    def close(self) -> None:
        self._file.close()

    def _write(self, entry: Entry) -> None:
        self.entries.append(entry)
        self._file.write(f"{entry.index} {entry.term} {base64.b64encode(entry.body).decode()}\n")
        self._file.flush()

    def _truncate(self, from_index: int) -> None:
        del self.entries[from_index:]
        self._file.close()
        tmp = self.path + ".tmp"
        with open(tmp, "w", encoding="ascii") as f:
            for e in self.entries:
                f.write(f"{e.index} {e.term} {base64.b64encode(e.body).decode()}\n")
        os.replace(tmp, self.path)
        self._file = open(self.path, "a", encoding="ascii")

    def _load(self) -> None:
        try:
            with open(self.path, encoding="ascii") as f:
                lines = f.read().splitlines()
        except OSError:
            return
        for line in lines:
            parts = line.split(" ")
            if len(parts) != 3 or int(parts[0]) != len(self.entries):
                break  # a torn last line: the log ends before it
            self.entries.append(Entry(int(parts[0]), int(parts[1]), base64.b64decode(parts[2])))
        if len(lines) != len(self.entries):
            with open(self.path, "w", encoding="ascii") as f:
                for e in self.entries:
                    f.write(f"{e.index} {e.term} {base64.b64encode(e.body).decode()}\n")

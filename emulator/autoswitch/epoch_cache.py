"""`EpochFileCache` (rocketmq-all-5.3.0): the broker's epoch file, epoch -> start offset of the commitlog where that
master epoch began; an entry ends where the next begins (the last one at Long.MAX_VALUE). Kept in
`storePathEpochFile` (default `<storePathRootDir>/epochFileCheckpoint`) in `CheckpointFile`'s format: the entry
count, the CRC32 of the entry lines, then one `epoch-startOffset` line each, written and read as 5.3.0 does
(`emulator.autoswitch.checkpoint_file`: an empty file stops the broker's start). `find_consistent_point` is how a returning broker finds how much of its log the master agrees with:
the newest epoch both have with the same start offset, up to the smaller of the two ends."""
from __future__ import annotations

import threading

from emulator.autoswitch import checkpoint_file
from emulator.logs import store_log
from remoting.controller_bodies import LONG_MAX, EpochEntry


class EpochFileCache:
    def __init__(self, path: str | None = None) -> None:
        self.path = path
        self.entries: dict[int, EpochEntry] = {}
        self._lock = threading.RLock()
        if path:
            self.entries = {e.epoch: e for e in _chain(_read_checkpoint(path))}

    @classmethod
    def of(cls, entries: list[EpochEntry], last_end_offset: int) -> EpochFileCache:
        """An in-memory cache of `entries`, the last one ending at `last_end_offset` (a master's handshake)."""
        cache = cls()
        cache.entries = {e.epoch: e for e in _chain([EpochEntry(e.epoch, e.start_offset) for e in entries])}
        last = cache.last_entry()
        if last is not None and last.start_offset <= last_end_offset:
            last.end_offset = last_end_offset
        return cache

    # --- reading ---------------------------------------------------------------------------------------------
    def all_entries(self) -> list[EpochEntry]:
        with self._lock:
            return [EpochEntry(e.epoch, e.start_offset, e.end_offset) for _, e in sorted(self.entries.items())]

    def last_entry(self) -> EpochEntry | None:
        with self._lock:
            return self.entries[max(self.entries)] if self.entries else None

    def first_entry(self) -> EpochEntry | None:
        with self._lock:
            return self.entries[min(self.entries)] if self.entries else None

    def last_epoch(self) -> int:
        last = self.last_entry()
        return last.epoch if last else -1

    def get(self, epoch: int) -> EpochEntry | None:
        return self.entries.get(epoch)

    def next_entry(self, epoch: int) -> EpochEntry | None:
        with self._lock:
            later = [e for e in self.entries if e > epoch]
            return self.entries[min(later)] if later else None

    def find_by_offset(self, offset: int) -> EpochEntry | None:
        with self._lock:
            for _, e in sorted(self.entries.items()):
                if e.start_offset <= offset < e.end_offset:
                    return e
            return None

    def find_consistent_point(self, other: EpochFileCache) -> int:
        with self._lock:
            for epoch in sorted(self.entries, reverse=True):
                mine, theirs = self.entries[epoch], other.get(epoch)
                if theirs is not None and theirs.start_offset == mine.start_offset:
                    return min(mine.end_offset, theirs.end_offset)
            return -1

    # --- changing --------------------------------------------------------------------------------------------
    def append(self, entry: EpochEntry) -> bool:
        with self._lock:
            last = self.last_entry()
            if last is not None:
                if last.epoch >= entry.epoch or last.start_offset >= entry.start_offset:
                    store_log.error("The appending entry's lastEpoch or endOffset %s is not bigger than lastEntry %s, "
                                    "append failed", entry, last)
                    return False
                last.end_offset = entry.start_offset
            self.entries[entry.epoch] = EpochEntry(entry.epoch, entry.start_offset)
            self._flush()
            return True

    def truncate_suffix_by_epoch(self, epoch: int) -> None:
        self._truncate_suffix(lambda e: e.epoch >= epoch)

    def truncate_suffix_by_offset(self, offset: int) -> None:
        self._truncate_suffix(lambda e: e.start_offset >= offset)

    def _truncate_suffix(self, drop) -> None:
        with self._lock:
            self.entries = {k: e for k, e in self.entries.items() if not drop(e)}
            last = self.last_entry()
            if last is not None:
                last.end_offset = LONG_MAX
            self._flush()

    def _flush(self) -> None:
        if not self.path or not self.entries:
            return
        try:
            checkpoint_file.write(self.path, [(e.epoch, e.start_offset) for _, e in sorted(self.entries.items())])
        except OSError as e:
            store_log.error("Error happen when flush epochEntries to epochCheckpointFile %s", e)


def _chain(entries: list[EpochEntry]) -> list[EpochEntry]:
    for prev, nxt in zip(entries, entries[1:], strict=False):
        prev.end_offset = nxt.start_offset
    return entries


def _read_checkpoint(path: str) -> list[EpochEntry]:
    """`EpochFileCache.initCacheFromFile`: an IOException (here OSError) is logged and leaves no epochs; a
    `checkpoint_file.JavaStartFailure` is not caught (the broker's start fails)."""
    try:
        return [EpochEntry(epoch, start) for epoch, start in checkpoint_file.read(path)]
    except OSError as e:
        store_log.error("Error happen when init epoch entries from epochFile %s", e)
        return []

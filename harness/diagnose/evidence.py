"""What a scan found: per fingerprint, per file, the lines (first and last line number and time, count, a sample)."""
from __future__ import annotations

from dataclasses import dataclass, field

SAMPLE_CHARS = 240


@dataclass
class FileHits:
    """One fingerprint's lines in one file."""

    path: str
    count: int = 0
    first_line: int = 0
    last_line: int = 0
    first_ts: str | None = None
    last_ts: str | None = None
    sample: str = ""

    def add(self, line_no: int, ts: str | None, text: str) -> None:
        if not self.count:
            self.first_line, self.first_ts, self.sample = line_no, ts, text[:SAMPLE_CHARS]
        self.count += 1
        self.last_line = line_no
        if ts:
            self.first_ts = self.first_ts or ts
            self.last_ts = ts

    def where(self) -> str:
        lines = f"{self.first_line}" if self.count == 1 else f"{self.first_line}-{self.last_line}"
        times = ""
        if self.first_ts:
            times = f" {self.first_ts}" if self.last_ts in (None, self.first_ts) else \
                f" {self.first_ts} .. {self.last_ts}"
        return f"{self.path}:{lines} ({self.count} line{'s' if self.count != 1 else ''}{times})"


@dataclass
class Evidence:
    """Everything found in the paths given, by fingerprint id, plus what the files say about the cluster."""

    hits: dict[str, dict[str, FileHits]] = field(default_factory=dict)
    files_read: int = 0
    bytes_read: int = 0
    broker_conf: dict[str, str] = field(default_factory=dict)
    broker_conf_path: str | None = None
    versions: set[str] = field(default_factory=set)
    groups_in_flow_control: set[str] = field(default_factory=set)
    pagecache_puts: int = 0
    pagecache_fast_puts: int = 0

    def add(self, fid: str, path: str, line_no: int, ts: str | None, text: str) -> None:
        per_file = self.hits.setdefault(fid, {})
        hits = per_file.get(path)
        if hits is None:
            hits = per_file[path] = FileHits(path)
        hits.add(line_no, ts, text)

    def count(self, fid: str) -> int:
        return sum(h.count for h in self.hits.get(fid, {}).values())

    def total(self) -> int:
        return sum(self.count(fid) for fid in self.hits)

"""What a scan found: per fingerprint, per file, the lines (first and last line number and time, count, a sample)."""
from __future__ import annotations

from dataclasses import dataclass, field

from harness.diagnose.elections import Elections

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

    def merged(self, other: FileHits) -> FileHits:
        """These lines and `other`'s (the same fingerprint's lines of another consumer group in the same file)."""
        first = min((self, other), key=lambda h: h.first_line)
        last = max((self, other), key=lambda h: h.last_line)
        return FileHits(self.path, self.count + other.count, first.first_line, last.last_line, first.first_ts,
                        last.last_ts or first.last_ts, first.sample)

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
    flow_hits: dict[str | None, dict[str, FileHits]] = field(default_factory=dict)
    """`so do flow control` lines per group and file, until `settle_flow_control` files them."""
    flow_queues: dict[str | None, dict[tuple[str, int], list]] = field(default_factory=dict)
    """Per group and (broker, queue): [lines, (time, minOffset) earliest, (time, minOffset) latest]."""
    elections: Elections = field(default_factory=Elections)

    def add(self, fid: str, path: str, line_no: int, ts: str | None, text: str) -> None:
        per_file = self.hits.setdefault(fid, {})
        hits = per_file.get(path)
        if hits is None:
            hits = per_file[path] = FileHits(path)
        hits.add(line_no, ts, text)

    def defer_flow_control(self, group: str | None, queue: tuple[str, int] | None, min_offset: int | None,
                           path: str, line_no: int, ts: str | None, text: str) -> None:
        """Keep a flow-control line for `settle_flow_control`: counted per group and file, its queue's earliest and
        latest minOffset kept (a bounded amount, however long the log)."""
        hits = self.flow_hits.setdefault(group, {})
        (hits.get(path) or hits.setdefault(path, FileHits(path))).add(line_no, ts, text)
        if queue is not None and min_offset is not None:
            seen = (ts or "", min_offset)
            q = self.flow_queues.setdefault(group, {}).setdefault(queue, [0, seen, seen])
            q[0] += 1
            q[1], q[2] = min(q[1], seen), max(q[2], seen)

    def settle_flow_control(self) -> None:
        """File the flow-control lines per group: a group whose oldest cached message kept moving (each queue seen
        twice or more had a higher minOffset at its latest line than at its earliest) is slow, not stuck
        (`consumer_flow_control_moving`, which names no mechanism); any other group's lines are
        `consumer_flow_control` and the group is in `groups_in_flow_control`. A blocked listener holds its queue's
        minOffset where it is: the push consumer commits the smallest offset still in its process queue."""
        for group, per_file in self.flow_hits.items():
            twice = [q for q in self.flow_queues.get(group, {}).values() if q[0] > 1]
            moving = bool(twice) and all(latest[1] > earliest[1] for _, earliest, latest in twice)
            fid = "consumer_flow_control_moving" if moving else "consumer_flow_control"
            if not moving and group is not None:
                self.groups_in_flow_control.add(group)
            mine = self.hits.setdefault(fid, {})
            for path, hits in per_file.items():
                mine[path] = hits.merged(mine[path]) if path in mine else hits
        self.flow_hits, self.flow_queues = {}, {}

    def count(self, fid: str) -> int:
        return sum(h.count for h in self.hits.get(fid, {}).values())

    def total(self) -> int:
        return sum(self.count(fid) for fid in self.hits)

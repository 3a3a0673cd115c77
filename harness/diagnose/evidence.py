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
    flow_control: list[tuple] = field(default_factory=list)
    """`so do flow control` lines until `settle_flow_control`: (group, (broker, queue), minOffset, file, line, ts,
    text)."""

    def add(self, fid: str, path: str, line_no: int, ts: str | None, text: str) -> None:
        per_file = self.hits.setdefault(fid, {})
        hits = per_file.get(path)
        if hits is None:
            hits = per_file[path] = FileHits(path)
        hits.add(line_no, ts, text)

    def defer_flow_control(self, group: str | None, queue: tuple[str, int] | None, min_offset: int | None,
                           path: str, line_no: int, ts: str | None, text: str) -> None:
        self.flow_control.append((group, queue, min_offset, path, line_no, ts, text))

    def settle_flow_control(self) -> None:
        """File the flow-control lines per group: a group whose oldest cached message kept moving (each queue seen
        twice or more had a higher minOffset at a later line) is slow, not stuck (`consumer_flow_control_moving`,
        which names no mechanism); any other group's lines are `consumer_flow_control` and the group is in
        `groups_in_flow_control`. A blocked listener holds its queue's minOffset where it is: the push consumer
        commits the smallest offset still in its process queue."""
        seen: dict[str | None, dict[tuple[str, int], list[tuple[str, int]]]] = {}
        for group, queue, min_offset, _, _, ts, _ in self.flow_control:
            if queue is not None and min_offset is not None:
                seen.setdefault(group, {}).setdefault(queue, []).append((ts or "", min_offset))
        moving = set()
        for group, queues in seen.items():
            twice = [sorted(lines) for lines in queues.values() if len(lines) > 1]  # in time order
            if twice and all(lines[-1][1] > lines[0][1] for lines in twice):
                moving.add(group)
        for group, _, _, path, line_no, ts, text in self.flow_control:
            if group in moving:
                self.add("consumer_flow_control_moving", path, line_no, ts, text)
            else:
                self.add("consumer_flow_control", path, line_no, ts, text)
                if group is not None:
                    self.groups_in_flow_control.add(group)
        self.flow_control = []

    def count(self, fid: str) -> int:
        return sum(h.count for h in self.hits.get(fid, {}).values())

    def total(self) -> int:
        return sum(self.count(fid) for fid in self.hits)

"""`[PAGECACHERT]` lines of a broker's store.log: how long the broker took to put messages (no Spark).

Apache RocketMQ 4.9.1's `StoreStatsService` logs once a minute, in store.log, the put-time distribution of the
puts since its previous line (the buckets are swapped for fresh ones at each line)::

    2026-11-23 16:11:50 INFO StoreStatsService - [PAGECACHERT] TotalPut 15177, PutMessageDistributeTime \
[<=0ms]:0 [0~10ms]:10054 [10~50ms]:4645 [50~100ms]:340 [100~200ms]:65 [200~500ms]:65 [500ms~1s]:0 [1~2s]:1 \
[2~3s]:0 [3~4s]:0 [4~5s]:1 [5~10s]:1 [10s~]:5

(the line format copied from a real 4.9.1 store.log; the emulator writes the same). Line times have no zone:
4.9.1's `conf/logback_broker.xml` writes them in GMT+8 whatever the machine's zone, the emulator (and the Docker
image seen here) in the machine's. So a file's times are read as UTC and then shifted by its zone offset,
found by comparing the file's first line (written when the broker started) with the run's `cluster_up` event
(else `run_start`), rounded to 15 minutes (no shift beyond 14 h or without a reference). A line covers the minute
before it (the first line: since the broker started), and the puts after a broker's last line (less than a minute
before it stopped) are in no line. Reading is capped like the other hostile-input readers: at most MAX_LOG_BYTES of a file (its tail),
lines longer than MAX_LINE_CHARS skipped, anything that is not a whole PAGECACHERT line skipped and counted.
"""
from __future__ import annotations

import calendar
import math
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

BUCKETS = ("<=0ms", "0~10ms", "10~50ms", "50~100ms", "100~200ms", "200~500ms", "500ms~1s", "1~2s", "2~3s",
           "3~4s", "4~5s", "5~10s", "10s~")
"""The 13 bucket texts of 4.9.1 `StoreStatsService.PUT_MESSAGE_ENTIRE_TIME_MAX_DESC`, in order."""
UPPER_MS: tuple[float, ...] = (0, 10, 50, 100, 200, 500, 1000, 2000, 3000, 4000, 5000, 10000, float("inf"))
"""Each bucket's upper bound in ms (`[10s~]` has none: infinity)."""
FAST_BUCKETS = 2
"""`[<=0ms]` and `[0~10ms]`: puts the broker did in under 10 ms."""
FAST_SHARE = 0.99
"""The report says the broker wrote in under 10 ms when at least this share of the master's puts did."""
MAX_LOG_BYTES = 64 * 1024 * 1024
MAX_LINE_CHARS = 4096
MAX_FILES = 16
WINDOW_S = 60
LINE = re.compile(
    r"^(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})(?:[.,]\d+)? +\w+ +\S+ +- +\[PAGECACHERT\] +TotalPut +(\d{1,18}), +"
    r"PutMessageDistributeTime +(.*?)\s*$")
BUCKET = re.compile(r"\[([^\]\s]{1,16})\]:(\d{1,18})")
STAMP = re.compile(r"^(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})")
ZONE_STEP_NS = 15 * 60 * 1_000_000_000
MAX_ZONE_NS = 14 * 3600 * 1_000_000_000


@dataclass
class PagecacheLine:
    """One `[PAGECACHERT]` line: its time (wall ns, UTC) and the 13 bucket counts of the minute before it."""

    ts_ns: int
    total: int
    counts: tuple[int, ...]


@dataclass
class NodeLog:
    """The PAGECACHERT lines of one node's store.log."""

    node: str
    path: str
    lines: list[PagecacheLine] = field(default_factory=list)
    skipped: int = 0  # lines mentioning PAGECACHERT that did not parse
    truncated: bool = False  # only the file's last MAX_LOG_BYTES were read
    first_ts_ns: int | None = None  # the first line's time, read as UTC
    zone_offset_ns: int = 0  # what the file's times were ahead of UTC (subtracted from the lines)

    def calibrate(self, reference_ns: int | None) -> None:
        """Shift the lines by the file's zone offset, taken from its first line against `reference_ns` (the wall
        time the broker started at, about): the difference rounded to 15 minutes, if within 14 hours."""
        if reference_ns is None or self.first_ts_ns is None or self.zone_offset_ns:
            return
        offset = round((self.first_ts_ns - reference_ns) / ZONE_STEP_NS) * ZONE_STEP_NS
        if offset and abs(offset) <= MAX_ZONE_NS:
            self.zone_offset_ns = offset
            for line in self.lines:
                line.ts_ns -= offset


def _stamp_ns(text: str) -> int | None:
    m = STAMP.match(text)
    if m is None:
        return None
    try:
        return calendar.timegm(time.strptime(m.group(1), "%Y-%m-%d %H:%M:%S")) * 1_000_000_000
    except ValueError:
        return None


def parse_line(text: str) -> PagecacheLine | None:
    """One store.log line as a PagecacheLine, None unless it is a whole, consistent PAGECACHERT line."""
    if len(text) > MAX_LINE_CHARS:
        return None
    m = LINE.match(text)
    if m is None:
        return None
    found = BUCKET.findall(m.group(3))
    if [name for name, _ in found] != list(BUCKETS):
        return None
    try:
        ts = calendar.timegm(time.strptime(m.group(1), "%Y-%m-%d %H:%M:%S"))
    except ValueError:
        return None
    counts = tuple(int(v) for _, v in found)
    return PagecacheLine(ts * 1_000_000_000, int(m.group(2)), counts)


def read_store_log(path: Path, node: str) -> NodeLog:
    """Every PAGECACHERT line of one store.log (its last MAX_LOG_BYTES when larger; never raises on content)."""
    out = NodeLog(node, str(path))
    try:
        with path.open("rb") as fh:
            size = fh.seek(0, 2)
            if size > MAX_LOG_BYTES:
                out.truncated = True
                fh.seek(size - MAX_LOG_BYTES)
            else:
                fh.seek(0)
            data = fh.read(MAX_LOG_BYTES)
    except OSError:
        out.skipped += 1
        return out
    for raw in data.decode("utf-8", errors="replace").splitlines():
        if out.first_ts_ns is None and not out.truncated:
            out.first_ts_ns = _stamp_ns(raw[:32])
        if "[PAGECACHERT]" not in raw:
            continue
        line = parse_line(raw)
        if line is None:
            out.skipped += 1
        else:
            out.lines.append(line)
    return out


def store_logs(logs_dir: Path) -> list[tuple[str, Path]]:
    """(node, store.log) of a run's `logs/`: `logs/<node>/store.log` (emulator) and
    `logs/<node>/rocketmqlogs/store.log` (the Apache distribution); regular files only, at most MAX_FILES."""
    out: list[tuple[str, Path]] = []
    if not logs_dir.is_dir():
        return out
    for node_dir in sorted(p for p in logs_dir.iterdir() if p.is_dir() and not p.is_symlink()):
        for rel in ("store.log", "rocketmqlogs/store.log"):
            p = node_dir / rel
            if p.is_file() and not p.is_symlink():
                out.append((node_dir.name, p))
                break
        if len(out) >= MAX_FILES:
            break
    return out


def read_run_logs(logs_dir: Path, reference_ns: int | None = None) -> list[NodeLog]:
    """The PAGECACHERT lines of every node of a run that logged any (nodes without a line are left out), their
    times calibrated against `reference_ns` (when the run's brokers started)."""
    out = [n for n in (read_store_log(p, node) for node, p in store_logs(logs_dir)) if n.lines or n.skipped]
    for n in out:
        n.calibrate(reference_ns)
    return out


def sum_counts(lines: list[PagecacheLine]) -> tuple[int, ...]:
    out = [0] * len(BUCKETS)
    for line in lines:
        for i, v in enumerate(line.counts):
            out[i] += v
    return tuple(out)


def quantile_upper_ms(counts: tuple[int, ...], q: float) -> float | None:
    """The upper bound (ms) of the bucket holding the q-th put (nearest rank); None without puts."""
    n = sum(counts)
    if n == 0:
        return None
    rank = max(1, math.ceil(round(q * n, 9)))
    cum = 0
    for bound, v in zip(UPPER_MS, counts, strict=True):
        cum += v
        if cum >= rank:
            return bound
    return UPPER_MS[-1]


def fast_share(counts: tuple[int, ...]) -> float | None:
    """Share of puts under 10 ms ([<=0ms] + [0~10ms]); None without puts."""
    n = sum(counts)
    return None if n == 0 else sum(counts[:FAST_BUCKETS]) / n


def in_window(lines: list[PagecacheLine], start_ns: int | None, end_ns: int | None) -> list[PagecacheLine]:
    """Lines whose minute (the WINDOW_S before the line) overlaps [start, end): a line is the finest resolution
    there is, so a phase's figures include the puts of neighbouring time its lines also cover."""
    span = WINDOW_S * 1_000_000_000
    return [ln for ln in lines if (end_ns is None or ln.ts_ns - span < end_ns)
            and (start_ns is None or ln.ts_ns > start_ns)]


def summary_row(node: str, label: str, lines: list[PagecacheLine]) -> dict:
    """One table row: node, window label, lines, puts, bucket counts, p99 bucket bound, share under 10 ms."""
    counts = sum_counts(lines)
    return {"node": node, "window": label, "lines": len(lines), "puts": sum(counts),
            **{b: v for b, v in zip(BUCKETS, counts, strict=True)},
            "p99_upper_ms": _finite(quantile_upper_ms(counts, 0.99)), "under_10ms_share": fast_share(counts)}


def _finite(v: float | None) -> float | None:
    """JSON has no infinity: the [10s~] bucket's missing bound is null in the table (its count says it)."""
    return None if v is None or math.isinf(v) else v

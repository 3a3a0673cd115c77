"""Stream files into `Evidence`: find every fingerprint's lines with substring search, block by block.

Per block (whole lines, `harness.diagnose.sources.blocks`) each anchor is searched with `bytes.find`, the hits are
put in order and numbered by counting line ends between them, and only the lines hit are decoded. Some lines are
read further: a `[PAGECACHERT]` line is parsed with the analysis's own reader (`analysis.pagecache`) and counts as
`pagecache_slow` (a put of 500 ms or more in its minute) or `pagecache_fast` (99 % under 10 ms); a jstack thread
`"ConsumeMessageThread_...` counts as `consume_thread_blocked` when its stanza (up to the next blank line) is
RUNNABLE in a socket read, a flush thread's (`GroupCommitService`, `FlushRealTimeService`) when RUNNABLE in msync; a
GC pause's CPU times count as `gc_pause_in_kernel` when it lasted 50 ms or more and spent more in the kernel than in
the JVM; a process status' VmSwap when 16 MiB or more, stamped by the snapshot's header line; a name server's idle
close counts when the route table drops a broker right after it; a new master counts from epoch 2 and a SyncStateSet
change only when the set shrank (a new master, a slave's offset syncs and the consumers' connections are filed for
`harness.diagnose.elections`); the flow-control lines are filed per group and settled after the scan. A
broker.conf (`*.conf`, `*.properties`) is read as `key=value` lines.
"""
from __future__ import annotations

import re
from pathlib import Path

from analysis.pagecache import FAST_SHARE, fast_share, parse_line
from harness.diagnose.evidence import Evidence
from harness.diagnose.fingerprints import (
    CONSUMER_CONNECTED,
    FINGERPRINTS,
    FORCE_FRAMES,
    GC_CPU,
    JSTACK_CONSUME_THREAD,
    JSTACK_FLUSH_THREADS,
    MASTER_CHANGE,
    OFFSETS_SYNCED,
    PAGECACHERT,
    PROCESS_SWAPPED_KIB,
    SOCKET_READ_FRAMES,
    VM_SWAP,
)
from harness.diagnose.sources import SkipFile, Skipped, blocks, walk

STAMP = re.compile(rb"(\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2})")
VERSION = re.compile(rb"rocketmq(?:-all)?-(\d+\.\d+\.\d+)")
GROUP = re.compile(r"consumerGroup=([^,\s\]]+)")
NEW_MASTER_EPOCH = re.compile(r"newMasterEpoch:(\d+)")
SYNC_STATE_SETS = re.compile(r"SyncStateSet changed from \[([^\]]*)\] to \[([^\]]*)\]")
FLOW_QUEUE = re.compile(r"minOffset=(\d+).*?consumerGroup=([^,\s\]]+).*?brokerName=([^,\s\]]+), queueId=(\d+)")
VM_SWAP_KIB = re.compile(r"VmSwap:\s+(\d+)\s*kB")
STATUS_HEADER_LOOKBACK = 4096
"""A `/proc/<pid>/status` snapshot's stamped header is a few hundred bytes above its VmSwap line."""
GC_TIMES = re.compile(r"[Uu]ser=(\d+(?:[.,]\d+)?)s? [Ss]ys=(\d+(?:[.,]\d+)?)s?,? [Rr]eal=(\d+(?:[.,]\d+)?)")
GC_PAUSE_SLOW_S = 0.05
"""A young pause of a loaded broker takes a few ms to ~20 ms (the real 4.9.1 here: 4.6-17 ms, Sys 0.00 s); swapping
made them 107-164 ms with Sys 0.08-0.12 s against User 0.02-0.03 s (docs/diagnose.md)."""
BROKER_DESTROYED = b"the broker's channel destroyed"
IDLE_LOOKAHEAD = 2048
"""The real 4.9.1's name server: the idle close, `closeChannel: ...`, then the route table's lines (two lines on)."""
CONF_SUFFIXES = (".conf", ".properties")
MAX_CONF_BYTES = 1024 * 1024
SLOW_FROM_BUCKET = 6
"""`[500ms~1s]` and above: a put that long held the commitlog lock well past the 200 ms a send may wait queued."""
ANCHORS = tuple((a, f.id) for f in FINGERPRINTS for a in f.anchors)
READ_FURTHER = ((PAGECACHERT, "pagecache"), (JSTACK_CONSUME_THREAD, "jstack"),
                *((a, "jstack_flush") for a in JSTACK_FLUSH_THREADS), *((a, "gc_cpu") for a in GC_CPU),
                (VM_SWAP, "vm_swap"), (MASTER_CHANGE, "master_change"), (OFFSETS_SYNCED, "offsets_synced"),
                (CONSUMER_CONNECTED, "consumer_connected"))
SEARCHED = ANCHORS + READ_FURTHER
"""Every literal a block is searched for, with the id its hits are filed or read further under."""


def scan(paths: list[str]) -> tuple[Evidence, list[Skipped]]:
    """Read every file under `paths`; what could not be read is in the returned list, one entry per file."""
    evidence, skipped = Evidence(), []
    for path in walk(paths, skipped):
        before = evidence.bytes_read
        try:
            if path.name.endswith(CONF_SUFFIXES):
                _read_conf(path, evidence)
            else:
                _scan_file(path, evidence)
            evidence.files_read += 1
        except SkipFile as err:
            skipped.append(Skipped(str(path), str(err)))
            if evidence.bytes_read > before:  # a truncated gzip: the part before the cut is evidence too
                evidence.files_read += 1
    evidence.settle_flow_control()
    for fid, path, line_no, ts, text in evidence.elections.judged():
        evidence.add(fid, path, line_no, ts, text)
    return evidence, skipped


def _scan_file(path: Path, evidence: Evidence) -> None:
    name, line_base, first_stamp = str(path), 1, None
    for n, block in enumerate(blocks(path)):
        evidence.bytes_read += len(block)
        if n == 0:
            head = block[:4096]
            m = STAMP.match(head)
            first_stamp = m.group(1).decode() if m else None
            evidence.versions.update(v.decode() for v in VERSION.findall(head))
        _scan_block(block, name, line_base, first_stamp, evidence)
        line_base += block.count(b"\n")


def _scan_block(block: bytes, name: str, line_base: int, first_stamp: str | None, evidence: Evidence) -> None:
    found: list[tuple[int, str]] = []
    for anchor, fid in SEARCHED:
        pos = block.find(anchor)
        while pos >= 0:
            found.append((pos, fid))
            pos = block.find(anchor, pos + len(anchor))
    if not found:
        return
    found.sort()
    counted, line_no, seen = 0, line_base, set()
    for pos, fid in found:
        start = block.rfind(b"\n", 0, pos) + 1
        line_no += block.count(b"\n", counted, start)
        counted = start
        if (line_no, fid) in seen:
            continue
        seen.add((line_no, fid))
        end = block.find(b"\n", pos)
        raw = block[start:end if end >= 0 else len(block)]
        text = raw.decode("utf-8", "replace").rstrip("\r")
        stamp = STAMP.match(raw[:40])
        ts = stamp.group(1).decode() if stamp else first_stamp
        if fid == "pagecache":
            fid = _pagecache(text, evidence)
        elif fid in ("jstack", "jstack_flush"):
            stanza_end = block.find(b"\n\n", pos)
            stanza = block[pos:stanza_end if stanza_end >= 0 else len(block)]
            frames, found_id = ((SOCKET_READ_FRAMES, "consume_thread_blocked") if fid == "jstack" else
                                (FORCE_FRAMES, "flush_thread_in_force"))
            fid = found_id if b"State: RUNNABLE" in stanza and any(f in stanza for f in frames) else None
        elif fid == "namesrv_broker_idle":  # a broker's connection only when the route table drops it next
            fid = fid if block.find(BROKER_DESTROYED, pos, pos + IDLE_LOOKAHEAD) >= 0 else None
        elif fid == "gc_cpu":
            fid = "gc_pause_in_kernel" if _pause_in_kernel(text) else None
        elif fid == "vm_swap":
            swapped = VM_SWAP_KIB.search(text)
            fid = "process_swapped" if swapped and int(swapped.group(1)) >= PROCESS_SWAPPED_KIB else None
            ts = _stamp_above(block, start) or ts
        elif fid == "controller_new_master":  # epoch 1 is the cluster's first election, at its start
            epoch = NEW_MASTER_EPOCH.search(text)
            fid = fid if epoch and int(epoch.group(1)) >= 2 else None
        elif fid == "syncstateset_shrunk":  # the start's [] to [1] and a slave's return [1] to [1, 2] are no shrink
            sets = SYNC_STATE_SETS.search(text)
            before, after = (_members(sets.group(1)), _members(sets.group(2))) if sets else (frozenset(), frozenset())
            if sets:
                evidence.elections.set_changed(ts, before, after)
            fid = fid if len(after) < len(before) else None
        elif fid == "master_change":
            evidence.elections.master_changed(ts, text, name, line_no)
            continue
        elif fid == "offsets_synced":
            evidence.elections.offsets_synced(ts, name, line_no, text)
            continue
        elif fid == "consumer_connected":
            evidence.elections.consumer_connected(ts, text)
            continue
        elif fid == "consumer_flow_control":
            m = FLOW_QUEUE.search(text)
            group = m.group(2) if m else next(iter(GROUP.findall(text)), None)
            queue = (m.group(3), int(m.group(4))) if m else None
            evidence.defer_flow_control(group, queue, int(m.group(1)) if m else None, name, line_no, ts, text)
            continue
        if fid:
            evidence.add(fid, name, line_no, ts, text)


def _pause_in_kernel(text: str) -> bool:
    m = GC_TIMES.search(text)
    if m is None:
        return False
    user, sys_, real = (float(v.replace(",", ".")) for v in m.groups())
    return real >= GC_PAUSE_SLOW_S and sys_ > user


def _stamp_above(block: bytes, start: int) -> str | None:
    """The stamp of the nearest line above `start` (a line's first byte) that begins with one, within
    STATUS_HEADER_LOOKBACK bytes (a status snapshot's header)."""
    floor = max(0, start - STATUS_HEADER_LOOKBACK)
    lines = block[floor:start].split(b"\n")
    whole = lines if floor == 0 else lines[1:]  # the first piece of a cut region is the tail of a line
    for line in reversed(whole):
        m = STAMP.match(line[:40])
        if m:
            return m.group(1).decode()
    return None


def _members(java_set: str) -> frozenset[int]:
    return frozenset(int(m) for m in java_set.split(",") if m.strip().isdigit())


def _pagecache(text: str, evidence: Evidence) -> str | None:
    line = parse_line(text)
    if line is None or not line.total:
        return None
    evidence.pagecache_puts += line.total
    evidence.pagecache_fast_puts += sum(line.counts[:2])
    if sum(line.counts[SLOW_FROM_BUCKET:]):
        return "pagecache_slow"
    share = fast_share(line.counts)
    return "pagecache_fast" if share is not None and share >= FAST_SHARE else None


def _read_conf(path: Path, evidence: Evidence) -> None:
    data = b"".join(blocks(path))[:MAX_CONF_BYTES].decode("utf-8", "replace")
    conf = {}
    for raw in data.splitlines():
        line = raw.strip()
        if not line or line[0] in "#!" or "=" not in line:
            continue
        key, _, value = line.partition("=")
        conf[key.strip()] = value.strip()
    if not conf or ("brokerName" not in conf and any(k.startswith("controllerDLeger") for k in conf)):
        return  # nothing, or a controller's file (standalone, or embedded in a name server), not a broker's
    if evidence.broker_conf_path is None or _conf_rank(conf) > _conf_rank(evidence.broker_conf):
        evidence.broker_conf, evidence.broker_conf_path = conf, str(path)


def _conf_rank(conf: dict[str, str]) -> tuple[bool, bool]:
    """Which file is the broker.conf: one that names a broker before one that does not (a name server's
    `listenPort` alone), and a master's before a slave's (the incidents' mechanisms and the scenario's keys are the
    master's; in controller mode every broker's file says SLAVE)."""
    return ("brokerName" in conf or "brokerClusterName" in conf,
            conf.get("brokerRole", "ASYNC_MASTER").upper() != "SLAVE")

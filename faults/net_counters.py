"""The counters of a network fault's own rules, read while its probe runs: an htb class of `net_bandwidth` /
`net_delay` (`tc -s class show`: bytes and packets sent, dropped, overlimits, backlog) and the DROP rules of a
`partition` chain (`iptables -L <chain> -v -x -n`: packets and bytes per rule). They count everything the rule
shapes or cuts, the probe's traffic and the nodes' own (the HA stream on a throttled master-to-slave link), which is
what a fault on a busy link is measured against: a lone probe only gets its share of the class.

`ClassSampler` samples one class every `SAMPLE_EVERY_S` in a thread while a probe runs; `rates()` is the class's
send rate over the window with the counters' growth. A class fed 64 KiB GSO packets at a low rate sends in jumps
(one packet every 0.25 s at 256 KiB/s), so the rate is taken from the first to the last move of the byte counter
after the warm-up (whole jumps over the time between them, exact for a staircase up to the sampling
interval: `_counted`), and the window runs on until it has counted at least `BURSTS` times its largest jump
(`settled`)."""
from __future__ import annotations

import re
import threading
import time

from faults.probe import WARMUP_S
from faults.system.tools import run_tool, tool_path

SAMPLE_EVERY_S = 0.03
BURSTS = 5
"""The class's window counts at least this many times its largest single jump before it is taken as settled."""
UNITS = {"": 1, "K": 1024, "M": 1024 ** 2, "G": 1024 ** 3}
SENT = re.compile(r"Sent (\d+) bytes (\d+) pkt \(dropped (\d+), overlimits (\d+) requeues (\d+)\)")
BACKLOG = re.compile(r"backlog (\d+(?:\.\d+)?)([KMG]?)b (\d+)p")
CLASS = re.compile(r"^class (\S+) (\S+)")


def _size(number: str, unit: str) -> int:
    return int(float(number) * UNITS[unit])


def class_stats(dev: str) -> dict[str, dict]:
    """Every class of `dev` in this namespace: {classid: {kind, bytes, packets, dropped, overlimits, backlog,
    qlen}} from `tc -s class show` (its JSON has no htb class statistics on iproute2 6.1)."""
    out = run_tool([tool_path("tc"), "-s", "class", "show", "dev", dev]).stdout
    found: dict[str, dict] = {}
    current: dict | None = None
    for line in out.splitlines():
        if m := CLASS.match(line):
            current = found.setdefault(m.group(2), {"kind": m.group(1)})
        elif current is not None and (m := SENT.search(line)):
            current.update(bytes=int(m.group(1)), packets=int(m.group(2)), dropped=int(m.group(3)),
                           overlimits=int(m.group(4)))
        elif current is not None and (m := BACKLOG.search(line)):
            current.update(backlog=_size(m.group(1), m.group(2)), qlen=int(m.group(3)))
    return found


class ClassSampler(threading.Thread):
    """Samples class `classid` of `dev` every `SAMPLE_EVERY_S` from `start()` until `finish()`."""

    def __init__(self, dev: str, classid: str) -> None:
        super().__init__(daemon=True)
        self.dev, self.classid = dev, classid
        self.t0 = time.monotonic()
        self.samples: list[tuple[float, dict]] = []
        self._done = threading.Event()
        self.sample()

    def sample(self) -> None:
        before = time.monotonic()
        stats = class_stats(self.dev).get(self.classid)
        if stats is None or "bytes" not in stats:
            raise LookupError(f"no htb class {self.classid} on {self.dev}")
        self.samples.append(((before + time.monotonic()) / 2 - self.t0, stats))

    def run(self) -> None:
        while not self._done.wait(SAMPLE_EVERY_S):
            try:
                self.sample()
            except (LookupError, OSError, ValueError):
                return  # the class went away (reverted meanwhile): the window ends with what it has

    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    def wait(self, min_s: float, max_s: float) -> None:
        """Until `min_s` into the window and settled, or `max_s` (the thread samples meanwhile)."""
        while self.is_alive() and self.elapsed() < max_s and (self.elapsed() < min_s or not self.settled()):
            self._done.wait(SAMPLE_EVERY_S)

    def finish(self) -> None:
        self._done.set()
        self.join(timeout=5)
        self.sample()

    def _moves(self) -> list[tuple[float, int]]:
        """(time, bytes) of the samples after the warm-up at which the byte counter had moved, preceded by the
        last sample before the first of them (the baseline)."""
        pts = [(t, s["bytes"]) for t, s in self.samples if t >= WARMUP_S]
        return [p for i, p in enumerate(pts) if i == 0 or p[1] != pts[i - 1][1]]

    def _counted(self) -> tuple[int, float, int]:
        """(bytes, seconds, largest jump) of the window: the jumps from the first move up to the last one, over the
        time from the first move to the last. A shaper that sends a packet when it has tokens and then pays it back
        (htb: a 64 KiB GSO packet at once, then a quarter of a second of nothing at 256 KiB/s) makes each jump be
        followed by the time it costs, so the last jump, whose time is not in the window, is not counted either."""
        moves = self._moves()
        if len(moves) < 3:
            return 0, 0.0, 0
        jumps = [b - a for (_, a), (_, b) in zip(moves, moves[1:], strict=False)]
        return moves[-2][1] - moves[0][1], moves[-1][0] - moves[1][0], max(jumps)

    def settled(self) -> bool:
        """The window counted at least `BURSTS` times the largest jump of the byte counter."""
        counted, seconds, largest = self._counted()
        return seconds > 0 and counted >= BURSTS * max(largest, 1)

    def rate_bps(self) -> float:
        counted, seconds, _ = self._counted()
        return counted / seconds if seconds > 0 else 0.0

    def rates(self) -> dict:
        """The class's send rate over the window and how its counters grew: `rate_bps`, `bytes`, `packets`,
        `overlimits`, `dropped` (growth), `backlog_max` (bytes queued at most), `window_s`, `samples`, `settled`."""
        (_, first), (t_last, last) = self.samples[0], self.samples[-1]
        return {"rate_bps": round(self.rate_bps()),
                **{k: last[k] - first[k] for k in ("bytes", "packets", "overlimits", "dropped")},
                "backlog_max": max(s.get("backlog", 0) for _, s in self.samples),
                "window_s": round(t_last, 3), "samples": len(self.samples), "settled": self.settled()}


CHAIN_RULE = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\S+)\s+\S+\s+\S+\s+\S+\s+\S+\s+(\S+)\s+(\S+)")


def chain_counters(iptables: str, chain: str) -> list[dict]:
    """The rules of `chain` in this namespace with their counters, in order: {target, source, destination,
    packets, bytes} (`iptables -L <chain> -v -x -n`)."""
    out = run_tool([tool_path(iptables), "-w", "5", "-L", chain, "-v", "-x", "-n"]).stdout
    rules = []
    for line in out.splitlines()[2:]:
        if m := CHAIN_RULE.match(line):
            rules.append({"target": m.group(3), "source": m.group(4), "destination": m.group(5),
                          "packets": int(m.group(1)), "bytes": int(m.group(2))})
    return rules

"""Room for a run before it starts: an estimate, from the scenario, of what the run writes where, against the free
space of the run directory's and the state directory's filesystems.

The run directory gets the request rows (rate or users x duration), the deliveries of each consumer group, the
read-back (every message from master and slave), metrics, logs and the report; the state directory holds the
brokers' stores (loop images, sparse: what the messages fill, at most `store_size` each) and the journal. A run
that would not fit is refused in one line before anything starts; one that fits with less than `WARN_FACTOR`
times its estimate to spare gets a warning. The figures per row are measured on this project's runs (docs/harness.md).
"""
from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from harness.scenario import Scenario

BYTES_PER_REQUEST_ROW = 70
BYTES_PER_CONSUME_ROW = 70
BYTES_PER_READBACK_ROW = 80
STORE_OVERHEAD_PER_MESSAGE = 200
"""commitlog entry header, properties and the consume queue entry of one stored message."""
METRICS_BYTES_PER_NODE_S = 300
LOGS_AND_REPORT = 64 * 1024 * 1024
CLOSED_SENDS_PER_S = 10_000.0
"""What a closed-model load may reach against one broker (the real 4.9.1 took 10.7k sends/s from 64 users, docs/loads.md):
the ceiling used for a load without a rate."""
WARN_FACTOR = 2.0


class NotEnoughSpace(RuntimeError):
    """The run would not fit (one line)."""


@dataclass(frozen=True)
class SpaceNeed:
    run_dir_bytes: int
    state_bytes: int
    sends: int


def estimate(scenario: Scenario) -> SpaceNeed:
    """What one run of `scenario` writes: into its run directory and into the state directory."""
    duration = scenario.total_s
    load = scenario.load
    open_rate = sum(c.rate or 0.0 for c in load.clients if load.model_of(c) == "open")
    shared = [c for c in load.clients if load.model_of(c) == "open" and c.rate is None]
    if shared:
        rates = [p.rate or load.rate or 0.0 for p in scenario.phases]
        open_rate += max(rates, default=load.rate or 0.0)
    closed = any(load.model_of(c) == "closed" for c in load.clients)
    rate = open_rate + (CLOSED_SENDS_PER_S if closed else 0.0)
    sends = int(rate * duration)
    size = max((c.message_size for c in load.clients), default=128)
    groups = len(scenario.consumers.groups)
    run_dir = (sends * (BYTES_PER_REQUEST_ROW + groups * BYTES_PER_CONSUME_ROW + 2 * BYTES_PER_READBACK_ROW)
               + int(3 * duration * METRICS_BYTES_PER_NODE_S) + LOGS_AND_REPORT)
    per_store = min(scenario.cluster.store_size, sends * (size + STORE_OVERHEAD_PER_MESSAGE))
    return SpaceNeed(run_dir, 2 * per_store, sends)


def check_space(scenario: Scenario, out_dir: str | os.PathLike[str], state_dir: str | os.PathLike[str]) -> list[str]:
    """Raise `NotEnoughSpace` when either filesystem lacks the room the run needs; return warnings when it is
    close. The run and state directories may share a filesystem: then the needs add up."""
    need = estimate(scenario)
    places = {"run directory": (_existing(out_dir), need.run_dir_bytes),
              "state directory": (_existing(state_dir), need.state_bytes)}
    by_device: dict[int, list[str]] = {}
    for what, (path, _) in places.items():
        by_device.setdefault(os.stat(path).st_dev, []).append(what)
    warnings = []
    for whats in by_device.values():
        path = places[whats[0]][0]
        wanted = sum(places[w][1] for w in whats)
        free = shutil.disk_usage(path).free
        label = " and ".join(f"{w} {places[w][0]}" for w in whats)
        if free < wanted:
            raise NotEnoughSpace(f"{scenario.name}: the {label} has {_mib(free)} free, the run needs about "
                                 f"{_mib(wanted)} (about {need.sends:,} sends over {scenario.total_s:g} s); "
                                 "allowed: free space, a shorter or slower run, or --out on a larger filesystem")
        if free < WARN_FACTOR * wanted:
            warnings.append(f"{scenario.name}: the {label} has {_mib(free)} free for a run that needs about "
                            f"{_mib(wanted)}: little to spare")
    return warnings


def _existing(path: str | os.PathLike[str]) -> Path:
    """The path, or its nearest existing parent (what will hold it once made)."""
    p = Path(path).resolve()
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def _mib(n: int) -> str:
    return f"{n / (1 << 20):,.0f} MiB"

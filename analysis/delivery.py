"""Whether each phase of a run got the load its scenario asked for, and how whole its records are: the gaps that make
expectations unknown instead of held or failed (issue 25: a verdict is never valid when the load missed its
schedule).

A phase was not delivered when:
- the load dropped slots in it (`schedule/` parts, reason `late`: sends not started within the load's max lag of
  their intended time: the load could not keep its schedule), unless the phase ran a sustainable-rate search: that
  asks for more than the cluster takes on purpose and judges each step's backlog itself (analysis.search);
- it ran (a `phase_start`) with a load running and not a single request row carries its name;
- the harness failed (`harness_failed`: a recorder that could not write, a load process that died) while it ran or
  within `FLUSH_GRACE_S` after it ended (rows of it may still have been waiting to be written);
- a consumer group that must keep up (`keep_up`) did not (`consumers_behind`: its clients held pulls back in it,
  and no fault of the phase acts on the group);
- it did not finish (no `phase_end`: an interrupt, a failure): every metric over it is unknown, whatever it is.

Rows are incomplete for the loss check (acknowledged sends may have no row, so "nothing lost" cannot be claimed)
when request part files were skipped or a load process ended without writing its last rows. A count over such
rows is a lower bound: it can still prove a bound broken (`lost` 3 > max 0), never that it held.

Pure Python over the run directory's timeline and the small `schedule/` parts, plus per-phase row counts the
caller takes in its one aggregation.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

NS = 1_000_000_000
FLUSH_GRACE_S = 2.0
"""Rows of a phase that ended this long before a recorder failed may not have been written yet (the load writes
every second and holds the last 200 ms back)."""
LOAD_PARTS = ("load", "events")


@dataclass
class Delivery:
    """The gaps of one run: phase -> why its expectations are unknown; and whether its request rows are whole."""

    gaps: dict[str, str] = field(default_factory=dict)
    rows_note: str | None = None  # None: every request row is there
    dropped: dict[str, int] = field(default_factory=dict)  # phase -> slots dropped late

    @property
    def rows_whole(self) -> bool:
        return self.rows_note is None

    def first_gap(self) -> str | None:
        return next(iter(self.gaps.values()), None)

    def gap_between(self, timeline, start_ns: int | None, end_ns: int | None) -> str | None:
        """The first gap of a phase that overlaps [start_ns, end_ns] (open ends reach the run's ends)."""
        for ph in timeline.phases:
            if ph.name not in self.gaps:
                continue
            if (end_ns is None or ph.start_ns <= end_ns) and (start_ns is None or ph.end_ns is None
                                                               or ph.end_ns >= start_ns):
                return self.gaps[ph.name]
        return None


def read_drops(paths: list[Path]) -> dict[str, int]:
    """Slots dropped late per phase, from the valid `schedule/` parts."""
    tables = [pq.read_table(p, columns=["phase", "reason", "dropped"]) for p in paths]
    if not tables:
        return {}
    t = pa.concat_tables(tables)
    late = t.filter(pc.equal(t.column("reason"), "late"))
    out: dict[str, int] = {}
    for phase, n in zip(late.column("phase").to_pylist(), late.column("dropped").to_pylist(), strict=True):
        out[phase or "?"] = out.get(phase or "?", 0) + int(n)
    return out


def delivery(run, phase_rows: dict[str, int]) -> Delivery:
    """The gaps of one run (`run`: analysis.rundir.RunDir; `phase_rows`: its request rows per phase)."""
    timeline, drops, failures = run.timeline, run.drops, run.timeline.failures
    d = Delivery(dropped=dict(drops))
    load_failures = [f for f in failures if f.get("part") in LOAD_PARTS]
    for ph in timeline.phases:
        if not ph.ended:
            d.gaps[ph.name] = f"phase {ph.name!r} did not finish (the run was {timeline.status})"
        elif drops.get(ph.name) and ph.name not in timeline.searched:  # a search's drops are its backlog
            d.gaps[ph.name] = (f"the load did not keep its schedule in phase {ph.name!r}: {drops[ph.name]} sends "
                               "dropped (not started within the load's max_lag of their intended time)")
        elif run.open_load and phase_rows.get(ph.name, 0) == 0 and (ph.seconds or 0) > 0:
            d.gaps[ph.name] = f"phase {ph.name!r} has no sends: the load sent nothing in it"
        elif behind := next((b for b in timeline.consumers_behind if b.get("phase") == ph.name), None):
            d.gaps[ph.name] = (f"consumer group {behind.get('group')!r} did not keep up in phase {ph.name!r}: its "
                               f"clients held pulls back {behind.get('flow_control')} times (flow control), and the "
                               "scenario says it must keep up (keep_up)")
        else:
            for f in load_failures:
                at = f.get("wall_ns")
                if isinstance(at, int) and ph.end_ns is not None and at < ph.end_ns + int(FLUSH_GRACE_S * NS):
                    d.gaps[ph.name] = f"its rows may be incomplete: {f.get('error')}"
                    break
    lost_rows = [f for f in failures if f.get("part") == "load"]
    if not run.requests_complete:
        d.rows_note = "request part files were skipped (truncated)"
    elif lost_rows:
        d.rows_note = f"not every send has its row: {lost_rows[0].get('error')}"
    return d


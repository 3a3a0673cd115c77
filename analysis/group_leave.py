"""`group_leave_s`: how fast sends leave a sick broker group (architecture §6). One Spark aggregation for every such
expectation of every run, then a few lines of Python per expectation.

The window is the fault's life: from the start of its apply (as `fault_to_first_error_s`: the clients may react
while the harness still verifies the effect, a disk throttle's verify takes seconds) to its `revert started` (else the
load's stop, else the last phase's end; a fault reverted only after the load stopped runs to the load's stop); a
fault never verified is not measured. Its sends (by actual start, `start_ns`; `client` narrows them) are counted per
second from the apply's start, second k = [apply + k s, apply + k+1 s),
with those that ended on the group (the request row's `broker`: the group of the send's last attempt). A second's
share is its sends on the group / its sends; a second without sends has no share: it neither holds nor breaks the
bound. The measured value is k of the first second with sends from which every later second with sends has a share
at or below `below`: 0 when the group's share was under the bound from the apply on; `never` (+inf) when the last
second with sends was above it. So the answer is the first second in which the producers were seen sending (almost)
nowhere else, and a pause in which they sent nothing at all (every thread waiting on the sick group) counts as not
left yet.

Unknown when the fault is not in events.jsonl, was never verified, or its window's end is not known; when no send
(matching `client`) started in the window; when request parts were skipped (a missing row could have been on the
group); `never` in a run that did not complete; when the expectation's broker is not a group of the run.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from analysis.expectations import Expectation
from analysis.rundir import RunDir
from analysis.timeline import NS, FaultWindow


@dataclass(frozen=True)
class LeaveWindow:
    """One group_leave_s expectation's rows: the fault's window in wall ns and the filters."""

    tag: str
    run_id: str
    start_ns: int  # the start of the fault's apply
    end_ns: int  # its revert started (else load stop, else the last phase's end)
    broker: str
    client: str | None
    below: float


def window_end(run: RunDir, fw: FaultWindow) -> int | None:
    """Where a fault's effect ends for group_leave_s: its `revert started`, else the load's stop, else the end of
    the last phase (else the run's end)."""
    tl = run.timeline
    last = tl.phases[-1].end_ns if tl.phases else None
    return next((t for t in (fw.revert_started_ns, tl.load_stop_ns, last, tl.run_end_ns) if t is not None), None)


def leave_window(tag: str, e: Expectation, run: RunDir) -> LeaveWindow | str:
    """The window of one expectation in one run, or why it cannot be measured."""
    fw = run.timeline.fault(e.fault or "")
    if fw is None:
        return f"no fault {e.fault!r} in events.jsonl"
    if fw.verified_ns is None:
        return f"fault {fw.fault_id!r} was never verified (no 'verify ok' event)"
    start = fw.shade_start_ns or fw.verified_ns
    end = window_end(run, fw)
    if end is None or end <= start:
        return f"fault {fw.fault_id!r}: the end of its window (revert started, load stop) is not in events.jsonl"
    if run.broker_groups and e.broker not in run.broker_groups:
        return f"broker {e.broker!r} is not a broker group of this run (its groups: {', '.join(run.broker_groups)})"
    if not run.requests_complete:
        return "request part files were skipped (truncated): a missing row may have been on the group"
    assert e.broker is not None and e.below is not None  # the model requires both
    return LeaveWindow(tag, run.run_id, start, end, e.broker, e.client, e.below)


def _in_window(w: LeaveWindow) -> Column:
    cond = ((F.col("run_id") == F.lit(w.run_id)) & (F.col("start_ns") >= F.lit(w.start_ns))
            & (F.col("start_ns") < F.lit(w.end_ns)))
    return cond if w.client is None else cond & (F.col("client") == F.lit(w.client))


def seconds_on_group(enriched: DataFrame, windows: Sequence[LeaveWindow]) -> dict[str, list[tuple[int, int, int]]]:
    """tag -> [(second from the apply, sends, sends on the group)] for the seconds with sends, in order: one
    aggregation over the request rows for every window."""
    if not windows:
        return {}
    tagged = F.array_compact(F.array(*[
        F.when(_in_window(w), F.struct(
            F.lit(w.tag).alias("tag"),
            F.floor((F.col("start_ns") - F.lit(w.start_ns)) / F.lit(float(NS))).cast("long").alias("sec"),
            F.coalesce(F.col("broker") == F.lit(w.broker), F.lit(False)).cast("long").alias("on")))
        for w in windows]))
    rows = (enriched.select(F.explode(tagged).alias("t")).groupBy("t.tag", "t.sec")
            .agg(F.count(F.lit(1)).alias("sends"), F.sum("t.on").alias("on")).collect())
    out: dict[str, list[tuple[int, int, int]]] = {w.tag: [] for w in windows}
    for r in rows:
        out[r["tag"]].append((int(r["sec"]), int(r["sends"]), int(r["on"])))
    return {tag: sorted(v) for tag, v in out.items()}


def leave_second(seconds: Sequence[tuple[int, int, int]], below: float) -> tuple[float, str]:
    """The measured value (k, or +inf) of `seconds` (second, sends, on the group; only seconds with sends, in
    order) and a note naming the last second above the bound."""
    left: int | None = None
    for sec, sends, on in reversed(seconds):
        if on / sends > below:
            where = f"the last second above {below:g}: {sec} ({on} of {sends} sends on the group)"
            if left is None:
                return math.inf, where
            return float(left), where
        left = sec
    assert left is not None
    return float(left), f"at or below {below:g} in every second with sends from the apply on"


def measure_leave(w: LeaveWindow | str, seconds: dict[str, list[tuple[int, int, int]]],
                  completed: bool) -> tuple[float | None, str, int]:
    """(value or None for unknown, note, sends in the window) of one expectation."""
    if isinstance(w, str):
        return None, w, 0
    got = seconds.get(w.tag) or []
    sends = sum(n for _, n, _ in got)
    if not got:
        return None, "no send (matching the filters) started while the fault was in effect", 0
    value, note = leave_second(got, w.below)
    if math.isinf(value) and not completed:
        return None, f"the share stayed above {w.below:g} in the rows there are, but the run did not complete", sends
    return value, note, sends

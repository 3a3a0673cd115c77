"""One run's consumer side out of the Spark aggregates (`analysis.consume_stats`): the per group per phase table,
the lag series and its maximum, end and committed-offset stall, the PAGECACHERT table, and the consumer and
pagecache expectations measured (no Spark).

Lag: per group, the lag summed over queues per second. `lag_max` is its largest sample, `lag_end` its last.
Committed-offset stall: the longest time the group's committed offsets (summed over queues) did not go above
their largest value so far while its lag was > 0: from the sample where they last advanced to the last sample
of the stretch (a sample with lag 0 ends a stretch). Offset rewind: the most, in any second, that the queues'
committed offsets stood below the highest each had reached before (summed over queues): messages a consumer
starting from the broker's offsets then would be given again (a failover's new master holds a copy of the
offsets up to a sync interval old).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from analysis import consumer_rules as rules
from analysis import pagecache as pcache
from analysis.consume_stats import ConsumeResults
from analysis.expectations import (
    CONSUME_COUNT_METRICS,
    CONSUME_LATENCY_METRICS,
    CONSUMER_LOSS_METRICS,
    LAG_METRICS,
    LATENCY_QUANTILE,
    Expectation,
)
from analysis.measures import Measurement
from analysis.rundir import RunDir
from analysis.timeline import NS

QUANTILE_COLUMN = {0.5: "p50", 0.9: "p90", 0.99: "p99", 0.999: "p999", 1.0: "max"}
LAG_GREW = rules.LAG_GREW
GREW_STALL_S = 8.0
"""A group's lag grew when its committed offsets stood still this long while it had lag (the Java client persists
offsets every 5 s, so shorter stands are normal: the healthy group of C2's backlog run on the real 4.9.1 had 2.0 s)
..."""
GREW_LAG = 1000
"""... or when its lag reached this many messages and more than twice its first sample (a slow, not stuck,
consumer advances its offsets while falling behind)."""


@dataclass
class LagSeries:
    group: str
    points: list[dict[str, Any]]  # sec, ts_ns, phase, lag, committed, rewound (sorted by sec)

    def window(self, phase: str | None) -> list[dict[str, Any]]:
        return self.points if phase is None else [p for p in self.points if p["phase"] == phase]


def stall_seconds(points: list[dict[str, Any]]) -> float:
    """Longest time the committed offsets did not advance while the lag was > 0 (seconds; 0 without a stall)."""
    best, high, since = 0.0, None, None
    for p in points:
        committed, lag, ts = p["committed"], p["lag"], p["ts_ns"]
        if committed is None or lag is None:
            continue
        if high is None or committed > high:
            high, since = committed, ts
        if lag <= 0:
            since = None
            continue
        if since is None:
            since = ts
        best = max(best, (ts - since) / NS)
    return best


@dataclass
class RunConsume:
    """The consumer side of one run."""

    has_consumes: bool
    has_lag: bool
    per_phase: list[dict[str, Any]] = field(default_factory=list)  # level, group, phase, basis-wide columns
    per_second: pa.Table = field(default_factory=lambda: pa.table({}))
    loss: dict[str, dict[str, Any]] = field(default_factory=dict)  # group -> loss row
    loss_measured: bool = False
    reordered: dict[str, int] = field(default_factory=dict)
    lag: dict[str, LagSeries] = field(default_factory=dict)
    pagecache: list[dict[str, Any]] = field(default_factory=list)
    verdicts: list[str] = field(default_factory=list)  # sentences for the report

    def groups(self) -> list[str]:
        names = {r["group"] for r in self.per_phase if r["group"] is not None} | set(self.lag) | set(self.loss)
        return sorted(names)

    def row(self, group: str | None, phase: str | None, basis: str = "born") -> dict[str, Any] | None:
        level = {(True, True): "group_phase", (True, False): "group", (False, True): "phase",
                 (False, False): "all"}[(group is not None, phase is not None)]
        return next((r for r in self.per_phase if r["level"] == level and r["group"] == group
                     and r["phase"] == phase and r["basis"] == basis), None)

    def to_json(self) -> dict[str, Any]:
        return {"groups": self.groups(), "per_phase": self.per_phase, "loss": self.loss,
                "loss_measured": self.loss_measured, "reordered": self.reordered,
                "lag": {g: {"max": lag_max(s.points), "end": lag_end(s.points), "stall_s": stall_seconds(s.points),
                            "rewind": rewind_max(s.points)} for g, s in self.lag.items()},
                "pagecache": self.pagecache, "verdicts": self.verdicts}


def lag_grew(points: list[dict[str, Any]]) -> bool:
    """Whether a group's lag grew (GREW_STALL_S, GREW_LAG)."""
    top = lag_max(points) or 0
    return stall_seconds(points) >= GREW_STALL_S or (top >= GREW_LAG and top > 2 * (points[0]["lag"] or 0))


def lag_max(points: list[dict[str, Any]]) -> int | None:
    vals = [p["lag"] for p in points if p["lag"] is not None]
    return max(vals) if vals else None


def lag_end(points: list[dict[str, Any]]) -> int | None:
    vals = [p["lag"] for p in points if p["lag"] is not None]
    return vals[-1] if vals else None


def rewind_max(points: list[dict[str, Any]]) -> int | None:
    """The most the group's queues' committed offsets stood below their own highest so far, in any second."""
    vals = [p.get("rewound") for p in points if p.get("rewound") is not None]
    return max(vals) if vals else None


def _split(table: pa.Table, run_id: str) -> pa.Table:
    if table.num_columns == 0:
        return table
    return table.filter(pc.equal(table["run_id"], run_id)).drop_columns(["run_id"])


def run_consume(run: RunDir, res: ConsumeResults, t0_ns: int | None) -> RunConsume:
    """Fold the aggregates of one run (rows of other runs ignored)."""
    rid = run.run_id
    out = RunConsume(has_consumes=bool(run.has_consumes), has_lag=bool(run.parts.get("metrics/lag")))
    phase_order = {p.name: i for i, p in enumerate(run.timeline.phases)}
    pp = _split(res.per_phase, rid).to_pylist()
    pp.sort(key=lambda r: (r["level"] != "group_phase", str(r["group"]), phase_order.get(r["phase"], 1e9),
                           str(r["phase"]), r["basis"]))
    for r in pp:
        drain = r["phase"] is None and r["level"] in ("group_phase", "phase")  # delivered outside every phase
        seconds = None if drain else _seconds(run, r["phase"])
        r["seconds"] = seconds
        r["rate"] = r["deliveries"] / seconds if seconds else None
    out.per_phase = pp
    ps = _split(res.per_second, rid)
    out.per_second = ps.sort_by([("group", "ascending"), ("sec", "ascending")]) if ps.num_rows else ps
    out.loss = {g: row for (r, g), row in res.loss.items() if r == rid}
    out.loss_measured = rid in res.loss_runs
    out.reordered = {g: v for (r, g), v in res.reordered.items() if r == rid}
    lag = _split(res.lag, rid)
    for p in sorted(lag.to_pylist(), key=lambda x: (x["group"], x["sec"])) if lag.num_rows else []:
        out.lag.setdefault(p["group"], LagSeries(p["group"], [])).points.append(p)
    out.pagecache = _pagecache_rows(run)
    out.verdicts = _sentences(out)
    return out


def _seconds(run: RunDir, phase: str | None) -> float | None:
    tl = run.timeline
    if phase is not None:
        ph = tl.phase(phase)
        return ph.seconds if ph else None
    if tl.phases and tl.phases[-1].end_ns is not None:
        return (tl.phases[-1].end_ns - tl.phases[0].start_ns) / NS
    return None


def _pagecache_rows(run: RunDir) -> list[dict[str, Any]]:
    rows = []
    for log in run.pagecache:
        whole = pcache.summary_row(log.node, "(whole run)", log.lines)
        rows.append(whole)
        if not whole["puts"]:
            continue  # a node that put nothing (the slave's lines count its own puts only): no phase rows
        for ph in run.timeline.phases:
            lines = pcache.in_window(log.lines, ph.start_ns, ph.end_ns)
            if lines:
                rows.append(pcache.summary_row(log.node, ph.name, lines))
    return rows


def _sentences(rc: RunConsume) -> list[str]:
    """The backlog's side by `analysis.consumer_rules` (shared with diagnose): the groups whose lag grew, those
    whose lag did not (every group consumes the run's one topic), and the master's put times over the whole run."""
    master = next((r for r in rc.pagecache if r["node"] == "master" and r["window"] == "(whole run)"), None)
    grew = tuple(g for g, s in rc.lag.items() if s.points and lag_grew(s.points))
    kept = tuple(g for g, s in rc.lag.items() if s.points and g not in grew)
    bound = master["p99_upper_ms"] if master else None
    said = rules.sentence(rules.Backlog(
        grew, kept, puts=master["puts"] if master else None,
        under_10ms_share=master["under_10ms_share"] if master else None,
        p99_upper=(f"{bound:g} ms" if bound is not None else "over 10 s") if master else None))
    return [said] if said else []


def measure_consumer(e: Expectation, run: RunDir, rc: RunConsume) -> Measurement:
    """One consumer or pagecache expectation of one run."""
    if e.metric == "pagecache_put_p99_ms":
        return _pagecache_value(e, run)
    if e.metric in LAG_METRICS:
        return _lag_value(e, rc)
    if not rc.has_consumes:
        return Measurement(None, "no consumes/ rows in this run")
    if e.metric in CONSUMER_LOSS_METRICS:
        return _loss_value(e, run, rc)
    row = rc.row(e.group, e.phase, e.basis if e.metric in CONSUME_LATENCY_METRICS else "born")
    n = int(row["deliveries"]) if row is not None and row["deliveries"] else 0
    if e.metric in CONSUME_COUNT_METRICS:
        incomplete = _incomplete(run, e.phase)
        if incomplete:
            return Measurement(None, f"not every delivery is there: {incomplete}", n)
        if e.group is not None and e.group not in rc.groups() and e.group not in run.consumer_groups:
            return Measurement(None, f"group {e.group!r} is neither in the scenario's consumers nor in consumes/", 0)
        if e.metric == "consume_count":
            return Measurement(float(n), None, n)  # a known group without deliveries in the window: 0
        if e.metric == "consume_from_slave":
            slave = int(row["from_slave"]) if row is not None and row["from_slave"] else 0
            return Measurement(float(slave), None, n)
        seconds = _seconds(run, e.phase)
        return Measurement(n / seconds, None, n) if seconds else Measurement(
            None, "the time window is not known from events.jsonl", n)
    if not n:
        return Measurement(None, "no deliveries match the filters", 0)
    value = row[QUANTILE_COLUMN[LATENCY_QUANTILE[e.metric]]]
    if value is None:
        return Measurement(None, f"no delivery matching the filters has a {e.basis} time", n)
    return Measurement(float(value), None, n)


def _incomplete(run: RunDir, phase: str | None) -> str | None:
    if run.skipped.get("consumes"):
        return "consume part files were skipped (truncated)"
    if phase is not None:
        ph = run.timeline.phase(phase)
        return None if ph and ph.complete else f"phase {phase!r} did not complete"
    return None if run.timeline.completed else f"run {run.timeline.status}"


def _loss_value(e: Expectation, run: RunDir, rc: RunConsume) -> Measurement:
    if e.metric == "consumer_reordered":
        if e.group is not None:
            return Measurement(float(rc.reordered.get(e.group, 0)))
        return Measurement(float(sum(rc.reordered.values())))
    why = _incomplete(run, None)
    if why is None and run.skipped.get("requests"):
        why = "request part files were skipped (truncated)"
    if why:
        return Measurement(None, f"needs the whole run and its drain: {why}")
    if not rc.loss_measured:
        return Measurement(None, "no consumer group to judge")
    groups = [e.group] if e.group is not None else sorted(rc.loss)
    if e.group is not None and e.group not in rc.loss:
        return Measurement(None, f"group {e.group!r} is neither in the scenario's consumers nor in consumes/")
    col = {"consumer_lost": "lost", "consumer_duplicated": "duplicated"}[e.metric]
    value = sum(int(rc.loss[g][col] or 0) for g in groups)
    note = None
    if e.metric == "consumer_lost" and value:
        keys = sorted(k for g in groups for k in (rc.loss[g]["lost_keys"] or []))[:5]
        note = f"first lost keys: {', '.join(keys)}"
    if e.metric == "consumer_duplicated":
        after = sum(int(rc.loss[g]["duplicated_after_restart"] or 0) for g in groups)
        note = f"{after} after a consumer restart"
    return Measurement(float(value), note)


def _lag_value(e: Expectation, rc: RunConsume) -> Measurement:
    if not rc.has_lag:
        return Measurement(None, "no metrics/lag/ rows in this run")
    series = [rc.lag[e.group]] if e.group is not None and e.group in rc.lag else (
        [] if e.group is not None else list(rc.lag.values()))
    values = []
    for s in series:
        pts = s.window(e.phase)
        if not pts:
            continue
        values.append({"lag_max": lag_max, "lag_end": lag_end, "offset_stall_s": stall_seconds,
                       "offset_rewind": rewind_max}[e.metric](pts))
    values = [v for v in values if v is not None]
    if not values:
        return Measurement(None, "no lag sample matches the filters")
    return Measurement(float(max(values)), None, None)


def _pagecache_value(e: Expectation, run: RunDir) -> Measurement:
    logs = [g for g in run.pagecache if e.node is None or g.node == e.node]
    lines = []
    for log in logs:
        if e.phase is not None:
            ph = run.timeline.phase(e.phase)
            lines += pcache.in_window(log.lines, ph.start_ns, ph.end_ns) if ph else []
        else:
            lines += log.lines
    value = pcache.quantile_upper_ms(pcache.sum_counts(lines), 0.99)
    if value is None:
        return Measurement(None, "no [PAGECACHERT] puts in store.log" + (f" of node {e.node!r}" if e.node else ""))
    if math.isinf(value):
        return Measurement(math.inf, "the 99th percentile put is in bucket [10s~] (no upper bound)")
    return Measurement(float(value), f"{len(lines)} line(s)")

"""Per broker group (issue 42): each slice of the Phases table (a phase's own sends, its transition slices, the whole
run: analysis.per_phase) split by the group its sends ended on (the request row's `broker`, the group of the send's
last attempt), with their outcome counts, rate and latency percentiles; and the sends per group per second.

Only for a run with more than one broker group (`RunDir.broker_groups`: cluster.json's `groups`): a one-group run
costs no Spark job and its report is as before. Every group of the run has a row in every slice (0 sends: it got
none); sends that reached no broker (no route: `broker` null) are the group `(no broker)`, which (as a broker the
run's groups do not name) has a row only where it had sends.
- `sends`, `outcomes` (outcome word -> sends), `send_ok`, `ok` / `fail` / `info` (Jepsen classes);
- `share`: the group's sends / the slice's sends (what `group_share` measures for a phase);
- `seconds`: the slice's (analysis.per_phase), `rate` = sends / seconds;
- `intended_p50`.. `actual_p999`: nearest-rank percentiles of the group's sends in the slice, as the Phases table's.
Per second: `sec` (by actual start, the report's time axis), `broker`, `sends`, `share` of that second's sends; a
row per group of the run for every second with a send (`(no broker)`: the seconds it had sends).

Spark: one aggregation (grouping sets: per slice, group and outcome; per second and group) and the latency
percentiles split by group (`stats.latency_percentiles(by=["broker"])`), both over the multi-group runs' rows only.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from analysis import contract as c
from analysis import stats
from analysis.rundir import RunDir

NO_BROKER = "(no broker)"
"""How the report names the sends whose row has no `broker` (they reached no broker: no route, no address)."""
QUANTILE_COLUMNS = [f"{b}_{q}" for b in stats.BASIS_COLUMNS for q in stats.QUANTILE_NAMES]
PER_GROUP_SCHEMA = pa.schema(
    [("phase", pa.string()), ("transition", pa.string()), ("slice", pa.string()), ("whole_run", pa.bool_()),
     ("broker", pa.string()), ("sends", pa.int64()), ("share", pa.float64()), ("send_ok", pa.int64()),
     ("ok", pa.int64()), ("fail", pa.int64()), ("info", pa.int64()),
     ("outcomes", pa.map_(pa.string(), pa.int64())), ("seconds", pa.float64()), ("rate", pa.float64())]
    + [(name, pa.float64()) for name in QUANTILE_COLUMNS])
GROUP_PER_SECOND_SCHEMA = pa.schema([("sec", pa.int64()), ("broker", pa.string()), ("sends", pa.int64()),
                                     ("share", pa.float64())])


@dataclass
class GroupTables:
    """What Spark returns for the multi-group runs: `counts` (run_id, phase, transition, broker, outcome, sends),
    `per_second` (run_id, sec, broker, sends), `percentiles` (stats.latency_percentiles' rows with `broker`)."""

    counts: pa.Table
    per_second: pa.Table
    percentiles: pa.Table


def multi_group_runs(runs: Sequence[RunDir]) -> list[str]:
    """The runs whose cluster had more than one broker group."""
    return [r.run_id for r in runs if len(r.broker_groups) > 1]


def group_tables(enriched: DataFrame, run_ids: Sequence[str]) -> GroupTables:
    """The two Spark jobs over the rows of `run_ids` (see the module docstring)."""
    rows = stats.with_slice(enriched).where(F.col("run_id").isin(list(run_ids)))
    keys = ["run_id", "phase", "transition", "broker", "outcome", "sec"]
    raw = rows.groupBy(*keys).agg(F.count(F.lit(1)).alias("sends"))
    both = raw.groupingSets([keys[:-1], ["run_id", "sec", "broker"]], *keys).agg(
        F.sum("sends").alias("sends"), F.grouping("sec").alias("by_slice")).toArrow()
    by_slice = pc.equal(both["by_slice"], 1)
    counts = both.filter(by_slice).select(["run_id", "phase", "transition", "broker", "outcome", "sends"])
    per_second = both.filter(pc.invert(by_slice)).select(["run_id", "sec", "broker", "sends"])
    pct = stats.latency_percentiles(rows, by=["broker"]).toArrow()
    return GroupTables(counts, per_second, pct)


def _order(run: RunDir, seen: Sequence[str | None]) -> list[str | None]:
    """The run's groups in their order, then other brokers the rows name (sorted), then the sends of no broker."""
    extra = sorted({b for b in seen if b is not None and b not in run.broker_groups})
    return [*run.broker_groups, *extra, *([None] if None in seen else [])]


def _percentiles(pct: pa.Table) -> dict[tuple[Any, ...], dict[str, float]]:
    """(phase, transition, broker, whole_run) -> `<basis>_<q>` columns of both bases."""
    out: dict[tuple[Any, ...], dict[str, float]] = {}
    for r in pct.to_pylist():
        whole = r["level"] == stats.LEVEL_RUN
        key = (None, None, r["broker"], True) if whole else (r["phase"], r["transition"], r["broker"], False)
        out.setdefault(key, {}).update({f"{r['basis']}_{q}": r[q] for q in stats.QUANTILE_NAMES})
    return out


def per_group(run: RunDir, slices: Sequence[dict[str, Any]], tables: GroupTables) -> list[dict[str, Any]]:
    """A row per (slice, group): the slices in the order of `slices` (analysis.per_phase rows), the groups as
    `_order`; see the module docstring for the columns."""
    counts = [r for r in tables.counts.to_pylist() if r["run_id"] == run.run_id]
    pct = _percentiles(tables.percentiles.filter(pc.equal(tables.percentiles["run_id"], run.run_id)))
    groups = _order(run, [r["broker"] for r in counts])
    outcomes: dict[tuple[Any, ...], dict[str, int]] = {}
    for r in counts:
        for key in ((r["phase"], r["transition"], r["broker"], False), (None, None, r["broker"], True)):
            cell = outcomes.setdefault(key, {})
            cell[r["outcome"]] = cell.get(r["outcome"], 0) + r["sends"]
    out = []
    for s in slices:
        whole = bool(s["whole_run"])
        for g in groups:
            key = (None, None, g, True) if whole else (s["phase"], s["transition"], g, False)
            words = outcomes.get(key, {})
            n = sum(words.values())
            if not n and g not in run.broker_groups:
                continue
            classes = {k: 0 for k in c.JEPSEN_CLASSES}
            for w, k in words.items():
                classes[c.outcome_class(w)] += k
            out.append({
                "phase": s["phase"], "transition": s["transition"], "slice": s["slice"], "whole_run": whole,
                "broker": NO_BROKER if g is None else g, "sends": n,
                "share": n / s["sends"] if s["sends"] else None, "send_ok": words.get(c.SEND_OK, 0), **classes,
                "outcomes": dict(sorted(words.items(), key=lambda kv: -kv[1])), "seconds": s["seconds"],
                "rate": n / s["seconds"] if s["seconds"] else None,
                **{q: pct.get(key, {}).get(q) for q in QUANTILE_COLUMNS}})
    return out


def per_group_table(rows: Sequence[dict[str, Any]]) -> pa.Table:
    """`per_group`'s rows as `per_group.parquet` (PER_GROUP_SCHEMA: outcomes as a map)."""
    return pa.Table.from_pylist([{**r, "outcomes": list(r["outcomes"].items())} for r in rows],
                                schema=PER_GROUP_SCHEMA)


def group_per_second(run: RunDir, tables: GroupTables) -> pa.Table:
    """sec, broker, sends, share: every group of the run in every second with a send (0 when it got none)."""
    t = tables.per_second.filter(pc.equal(tables.per_second["run_id"], run.run_id))
    cells: dict[tuple[int, str | None], int] = {}
    totals: dict[int, int] = {}
    for r in t.to_pylist():
        if r["sec"] is None:
            continue
        cells[(r["sec"], r["broker"])] = cells.get((r["sec"], r["broker"]), 0) + r["sends"]
        totals[r["sec"]] = totals.get(r["sec"], 0) + r["sends"]
    groups = _order(run, [b for _, b in cells])
    rows = [{"sec": sec, "broker": NO_BROKER if g is None else g, "sends": cells.get((sec, g), 0),
             "share": cells.get((sec, g), 0) / totals[sec]} for sec in sorted(totals) for g in groups
            if g in run.broker_groups or (sec, g) in cells]
    return pa.Table.from_pylist(rows, schema=GROUP_PER_SECOND_SCHEMA)

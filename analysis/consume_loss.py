"""Consumer-visible loss and duplicates per (run, consumer group), counted in the loss check's shuffle by key.

Per key, beside the loss check's counts (`analysis.loss`, FIELDS: `sent`, `acked`, ...), the key table carries per
judged group: its successful deliveries (CONSUME_SUCCESS), how many of them a restarted consumer process made, and
whether the first of them (by delivered_ns) was a restarted process's (`key_aggregates`). Per (run, group) that gives
acknowledged sends never delivered with success (`lost`), successful deliveries beyond the first per key
(`duplicated`), those made by a restarted process (`duplicated_after_restart`) and keys delivered but never
acknowledged (`unacknowledged_consumed`). `lost_keys`: up to SAMPLE_KEYS lost keys, those of the smallest ids (the
keys' 64-bit hashes, or the keys themselves when the table fell back to them), in key order.

Which groups are judged is decided before the shuffle (`judged_groups`): the scenario's groups and every group
the run's consume rows name (`consume_names`), up to MAX_JUDGED_GROUPS per run (a few columns each in that
shuffle).
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import Column
from pyspark.sql import functions as F

from analysis import contract as c
from analysis.loss import KeyFlags
from analysis.rundir import RunDir

SAMPLE_KEYS = 10
RESTARTED = re.compile(r"\.r[0-9]+$")
"""A consumer process started again by the harness: its worker name ends in `.r<n>`."""
MAX_JUDGED_GROUPS = 64
"""Consumer groups judged for loss and duplicates per run (a few columns each in the key table)."""


def judged_groups(runs: Sequence[RunDir], seen: dict[str, set[str]]) -> tuple[dict[str, list[str]],
                                                                              dict[str, list[str]]]:
    """run -> the groups judged (scenario groups and the groups `seen` in its consume parts, sorted, at most
    MAX_JUDGED_GROUPS by name), and run -> warnings about groups left out."""
    judged: dict[str, list[str]] = {}
    warnings: dict[str, list[str]] = {}
    for r in runs:
        names = sorted(set(r.consumer_groups) | seen.get(r.run_id, set()))
        if len(names) > MAX_JUDGED_GROUPS:
            warnings.setdefault(r.run_id, []).append(
                f"consumes/: {len(names)} consumer groups; loss and duplicates judged for the first "
                f"{MAX_JUDGED_GROUPS} by name only")
            names = names[:MAX_JUDGED_GROUPS]
        if names:
            judged[r.run_id] = names
    return judged, warnings


def consume_names(runs: Sequence[RunDir]) -> tuple[dict[str, set[str]], set[str]]:
    """run -> the groups its consume rows name, and the consumer processes that were restarts (worker
    `<group>.c<i>.r<n>`): each consume part read once with pyarrow (no Spark job), as the part files' footers are."""
    groups: dict[str, set[str]] = {}
    restarted: set[str] = set()
    for r in runs:
        for path in r.parts.get(c.CONSUMES_DIR, []):
            found = values_in(path, ("group", "worker"))
            groups.setdefault(r.run_id, set()).update(g for run, g in found["group"] if run == r.run_id)
            restarted.update(w for run, w in found["worker"] if run == r.run_id and RESTARTED.search(w))
    return groups, restarted


def values_in(path: Path, columns: Sequence[str]) -> dict[str, set[tuple[str, str]]]:
    """Per column of `columns`: the distinct (run_id, value) pairs of a consume part file, from the
    dictionary-encoded columns' indices (no row is decoded)."""
    out: dict[str, set[tuple[str, str]]] = {col: set() for col in columns}
    table = pq.read_table(path, columns=["run_id", *columns], read_dictionary=["run_id", *columns])
    for batch in table.to_batches():
        runs = batch.column(0)
        for i, col in enumerate(columns, start=1):
            values = batch.column(i)
            width = max(len(values.dictionary), 1)
            pairs = pc.add(pc.multiply(runs.indices.cast(pa.int64()), width), values.indices.cast(pa.int64()))
            out[col].update((runs.dictionary[x // width].as_py(), values.dictionary[x % width].as_py())
                            for x in pc.unique(pairs).to_pylist() if x is not None)
    return out


LOW32 = (1 << 32) - 1
NS_BOUND = (1 << 62) - 1  # delivered_ns is clamped to +-2^62 before it is shifted left by one


def key_aggregates(names: list[str]) -> dict[str, Column]:
    """The per-key columns of the groups `names` (`g` is a delivery row's index in `names`, null on other rows),
    two longs per group: `c{i}` = successful deliveries + (those by a restarted process << 32), `f{i}` = the
    smallest (delivered_ns << 1 | restarted) of them, so its low bit tells whether the first was by a restarted
    process."""
    out: dict[str, Column] = {}
    restart = F.coalesce(F.col("restart"), F.lit(0)).cast("long")
    first = F.shiftleft(F.greatest(F.least(F.col("delivered_ns"), F.lit(NS_BOUND)), F.lit(-NS_BOUND)), 1)
    for i in range(len(names)):
        mine = F.col("g") == F.lit(i)
        out[f"c{i}"] = F.sum(F.when(mine, F.lit(1) + F.shiftleft(restart, 32)))
        out[f"f{i}"] = F.min(F.when(mine, first.bitwiseOR(restart)))
    return out


def run_sums(names: list[str]) -> list[Column]:
    """The per-run sums over the key table that `consumer_loss` reads (its rows of other runs are not read)."""
    acked = F.col("acked") > 0
    out = [F.sum(acked.cast("long")).alias("acknowledged")]
    for i in range(len(names)):
        packed = F.coalesce(F.col(f"c{i}"), F.lit(0))
        n, by_restarted = packed.bitwiseAND(F.lit(LOW32)), F.shiftright(packed, 32)
        first_restarted = F.col(f"f{i}").bitwiseAND(F.lit(1))
        lost = acked & (n == 0)
        out += [
            F.sum(lost.cast("long")).alias(f"lost{i}"),
            F.slice(F.array_sort(F.collect_list(F.when(lost, F.col("id")))), 1, SAMPLE_KEYS).alias(f"ids{i}"),
            F.sum(F.greatest(n - 1, F.lit(0))).alias(f"dup{i}"),
            F.sum(F.coalesce(by_restarted - first_restarted, F.lit(0))).alias(f"dupr{i}"),
            F.sum(((n > 0) & ~acked).cast("long")).alias(f"unack{i}")]
    return out


def consumer_loss(kf: KeyFlags, groups: dict[str, list[str]]) -> list[dict[str, Any]]:
    """Per (run, group) of `groups` (the plan's judged groups): the counts of the module docstring, from the sums the
    key table's plan took (`run_sums`), and one scan for the names of lost keys when there are some."""
    names = sorted({g for gs in groups.values() for g in gs})
    rows = [kf.per_run[i] for i in (kf.runs.index(r) for r in groups) if i in kf.per_run]
    wanted = {x for r in rows for j in range(len(names)) for x in (r[f"ids{j}"] or [])}
    key_of = {} if kf.exact else kf.key_names(kf.requests, wanted)
    out = []
    for row in rows:
        run = kf.runs[row["run"]]
        for i, g in enumerate(names):
            if g not in groups.get(run, []):
                continue
            ids = row[f"ids{i}"] or []
            keys = ids if kf.exact else [key_of.get((row["run"], x), f"<hash {x}>") for x in ids]
            out.append({"run_id": run, "group": g, "acknowledged": int(row["acknowledged"] or 0),
                        "lost": int(row[f"lost{i}"] or 0),
                        "lost_keys": sorted(keys),
                        "duplicated": int(row[f"dup{i}"] or 0),
                        "duplicated_after_restart": int(row[f"dupr{i}"] or 0),
                        "unacknowledged_consumed": int(row[f"unack{i}"] or 0)})
    return out

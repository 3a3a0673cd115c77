"""The loss check, Jepsen total-queue semantics applied to RocketMQ (ROCKETMQ-FACTS.md, "Outcome classes").

attempted = request rows; acknowledged = rows whose outcome is in the ok class (SEND_OK, FLUSH_*,
SLAVE_NOT_AVAILABLE); lost = acknowledged keys not read back from the master; not_on_slave = acknowledged keys
read back from the master but not from the slave; recovered = keys read back from the master whose send was not
acknowledged (fail/info); duplicated = keys read back more than once from the master; unexpected = read-back keys
of this run (prefix `<run_id>:`) that no request row has. Keys of other runs found in the topic are `foreign`.

One shuffle does it: the request keys and the read-back keys are unioned and grouped by (run_id, key), giving one
row per key with how often it was sent, acknowledged, and read back from each node (`key_flags`).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from analysis import contract as c

SAMPLE_KEYS = 10
CATEGORIES = ("lost", "not_on_slave", "recovered", "duplicated", "unexpected")


def key_flags(requests: DataFrame, readback: DataFrame, runs: Sequence[str]) -> DataFrame:
    """One row per (run_id, key) of `runs`: sent (request rows), acked (any in the ok class), master_n, slave_n."""
    zero = F.lit(0).cast("long")
    sent = requests.where(F.col("run_id").isin(list(runs))).select(
        "run_id", "key", F.lit(1).cast("long").alias("sent"), (F.col("cls") == c.OK).cast("long").alias("acked"),
        zero.alias("master_n"), zero.alias("slave_n"))
    read = readback.where(F.col("key").isNotNull() & F.col("run_id").isin(list(runs))).select(
        "run_id", "key", zero.alias("sent"), zero.alias("acked"),
        (F.col("node") == "master").cast("long").alias("master_n"),
        (F.col("node") == "slave").cast("long").alias("slave_n"))
    return sent.unionByName(read).groupBy("run_id", "key").agg(
        F.sum("sent").alias("sent"), F.max("acked").alias("acked"), F.sum("master_n").alias("master_n"),
        F.sum("slave_n").alias("slave_n"))


def flags() -> dict[str, Column]:
    """Per key of `key_flags` (or per request row joined with it): which loss category it falls in."""
    sent, acked, on_master = F.col("sent") > 0, F.col("acked") > 0, F.col("master_n") > 0
    return {
        "lost": sent & acked & ~on_master,
        "not_on_slave": sent & acked & on_master & (F.col("slave_n") == 0),
        "recovered": sent & ~acked & on_master,
        "duplicated": sent & (F.col("master_n") > 1),
        "unexpected": ~sent & F.col("key").startswith(F.concat(F.col("run_id"), F.lit(":"))),
        "foreign": ~sent & ~F.col("key").startswith(F.concat(F.col("run_id"), F.lit(":"))),
    }


def annotate(requests: DataFrame, flags_df: DataFrame) -> DataFrame:
    """Request rows with their key's `acked`, `master_n`, `slave_n` (for loss metrics over filtered rows)."""
    return requests.join(flags_df.where(F.col("sent") > 0).select("run_id", "key", "master_n", "slave_n"),
                         ["run_id", "key"], "left").withColumn("sent", F.lit(1)).withColumn(
        "acked", (F.col("cls") == c.OK).cast("long"))


@dataclass
class LossCheck:
    """The loss check of one run. Category counts are None when the run has no complete read-back."""

    run_id: str
    measured: bool
    slave_read: bool
    counts: dict[str, int | None] = field(default_factory=dict)
    samples: dict[str, list[str]] = field(default_factory=dict)
    note: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"measured": self.measured, "slave_read": self.slave_read, **self.counts,
                "samples": self.samples, "note": self.note}


def loss_checks(flags_df: DataFrame | None, readback_runs: dict[str, list[str] | None],
                totals: dict[str, dict[str, int]], all_runs: Sequence[str]) -> dict[str, LossCheck]:
    """Loss check of every run. `readback_runs`: runs with a complete read-back -> the nodes read (None: infer
    from the rows); `totals`: run -> attempted / acknowledged / send_ok counted from the request rows.
    `read_master`/`read_slave` count the read-back rows that carry a key."""
    f = flags()
    by_run: dict[str, dict[str, Any]] = {}
    nodes_read: dict[str, dict[str, int]] = {}
    samples: dict[str, dict[str, list[str]]] = {}
    if flags_df is not None and readback_runs:
        for r in flags_df.groupBy("run_id").agg(*[F.sum(cond.cast("long")).alias(k) for k, cond in f.items()],
                                                F.sum("master_n").alias("master"), F.sum("slave_n").alias("slave"),
                                                ).collect():
            by_run[r["run_id"]] = r.asDict()
            nodes_read[r["run_id"]] = {n: int(r[n]) for n in ("master", "slave") if r[n]}
        samples = _samples(flags_df, f)
    out = {}
    for run in all_runs:
        t = totals.get(run, {})
        counts: dict[str, int | None] = {k: int(t.get(k) or 0) for k in ("attempted", "acknowledged", "send_ok")}
        if run not in readback_runs:
            counts.update(dict.fromkeys((*CATEGORIES, "foreign", "read_master", "read_slave")))
            out[run] = LossCheck(run, False, False, counts, note="no complete read-back: loss check not measured")
            continue
        declared, read, base = readback_runs[run], nodes_read.get(run, {}), by_run.get(run, {})
        slave_read = ("slave" in declared) if declared is not None else "slave" in read
        counts.update({k: int(base.get(k) or 0) for k in (*CATEGORIES, "foreign")})
        counts.update(read_master=read.get("master", 0), read_slave=read.get("slave", 0) if slave_read else None)
        if not slave_read:
            counts["not_on_slave"] = None
        smp = {k: v for k, v in samples.get(run, {}).items() if counts.get(k) is not None}
        out[run] = LossCheck(run, True, slave_read, counts, smp,
                             note=None if slave_read else "the slave was not read back: not_on_slave unknown")
    return out


def _samples(flags_df: DataFrame, f: dict[str, Column]) -> dict[str, dict[str, list[str]]]:
    """Up to SAMPLE_KEYS keys per run and category, smallest first (the same keys every time the job runs)."""
    cats = F.array_compact(F.array(*[F.when(f[name], F.lit(name)) for name in CATEGORIES]))
    flagged = flags_df.select("run_id", "key", F.explode(cats).alias("category"))
    w = Window.partitionBy("run_id", "category").orderBy("key")
    rows = flagged.withColumn("rn", F.row_number().over(w)).where(F.col("rn") <= SAMPLE_KEYS).collect()
    out: dict[str, dict[str, list[str]]] = {}
    for r in sorted(rows, key=lambda r: (r["run_id"], r["category"], r["rn"])):
        out.setdefault(r["run_id"], {}).setdefault(r["category"], []).append(r["key"])
    return out

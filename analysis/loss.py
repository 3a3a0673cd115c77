"""The loss check, Jepsen total-queue semantics applied to RocketMQ (ROCKETMQ-FACTS.md, "Outcome classes").

attempted = request rows; acknowledged = rows whose outcome is in the ok class (SEND_OK, FLUSH_*,
SLAVE_NOT_AVAILABLE); lost = acknowledged keys not read back from the master; not_on_slave = acknowledged keys
read back from the master but not from the slave; recovered = keys read back from the master whose send was not
acknowledged (fail/info); duplicated = keys read back more than once from the master; unexpected = read-back keys
of this run (prefix `<run_id>:`) that no request row has. Keys of other runs found in the topic are `foreign`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from analysis import contract as c

SAMPLE_KEYS = 10
CATEGORIES = ("lost", "not_on_slave", "recovered", "duplicated")


def readback_keys(readback: DataFrame) -> DataFrame:
    """One row per (run_id, key) read back: how often from the master and from the slave."""
    return (
        readback.where(F.col("key").isNotNull())
        .groupBy("run_id", "key")
        .agg(
            F.sum(F.when(F.col("node") == "master", 1).otherwise(0)).alias("master_n"),
            F.sum(F.when(F.col("node") == "slave", 1).otherwise(0)).alias("slave_n"),
        )
    )


def annotate(requests: DataFrame, rb_keys: DataFrame | None, runs_with_readback: list[str]) -> DataFrame:
    """Requests with `master_n`/`slave_n` (0 when not read back; null for runs without a complete read-back)."""
    if rb_keys is None or not runs_with_readback:
        return requests.withColumn("master_n", F.lit(None).cast("long")).withColumn("slave_n",
                                                                                  F.lit(None).cast("long"))
    has = F.col("run_id").isin(runs_with_readback)
    return (
        requests.join(rb_keys, ["run_id", "key"], "left")
        .withColumn("master_n", F.when(has, F.coalesce(F.col("master_n"), F.lit(0))).cast("long"))
        .withColumn("slave_n", F.when(has, F.coalesce(F.col("slave_n"), F.lit(0))).cast("long"))
    )


def flags() -> dict[str, Column]:
    """Per request row: is it lost / not on the slave / recovered / duplicated (null when not measurable)."""
    acked = F.col("cls") == c.OK
    on_master = F.col("master_n") > 0
    return {
        "lost": acked & (F.col("master_n") == 0),
        "not_on_slave": acked & on_master & (F.col("slave_n") == 0),
        "recovered": (~acked) & on_master,
        "duplicated": F.col("master_n") > 1,
    }


@dataclass
class LossCheck:
    """The loss check of one run. Counts are None when the run has no complete read-back."""

    run_id: str
    measured: bool
    slave_read: bool
    counts: dict[str, int | None] = field(default_factory=dict)
    samples: dict[str, list[str]] = field(default_factory=dict)
    note: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"measured": self.measured, "slave_read": self.slave_read, **self.counts,
                "samples": self.samples, "note": self.note}


def loss_checks(annotated: DataFrame, readback: DataFrame, rb_keys: DataFrame | None,
                readback_runs: dict[str, list[str] | None], all_runs: list[str]) -> dict[str, LossCheck]:
    """Loss check of every run. `readback_runs` maps runs with a complete read-back to the nodes read
    (None: infer from the rows)."""
    f = flags()
    rows = annotated.groupBy("run_id").agg(
        F.count(F.lit(1)).alias("attempted"),
        F.sum((F.col("cls") == c.OK).cast("long")).alias("acknowledged"),
        F.sum((F.col("outcome") == c.SEND_OK).cast("long")).alias("send_ok"),
        *[F.sum(cond.cast("long")).alias(name) for name, cond in f.items()],
    ).collect()
    by_run = {r["run_id"]: r.asDict() for r in rows}
    nodes_read: dict[str, dict[str, int]] = {}
    extra: dict[str, dict[str, int]] = {}
    if readback_runs and rb_keys is not None:
        for r in readback.groupBy("run_id", "node").count().collect():
            nodes_read.setdefault(r["run_id"], {})[r["node"]] = r["count"]
        extra = _unexpected(annotated, rb_keys)
    samples = _samples(annotated, f) if readback_runs else {}
    out = {}
    for run in all_runs:
        base = by_run.get(run, {"attempted": 0, "acknowledged": 0, "send_ok": 0})
        counts: dict[str, int | None] = {k: int(base.get(k) or 0) for k in ("attempted", "acknowledged", "send_ok")}
        measured = run in readback_runs
        if not measured:
            counts.update({k: None for k in (*CATEGORIES, "unexpected", "foreign", "read_master", "read_slave")})
            out[run] = LossCheck(run, False, False, counts, note="no complete read-back: loss check not measured")
            continue
        declared = readback_runs[run]
        read = nodes_read.get(run, {})
        slave_read = ("slave" in declared) if declared is not None else "slave" in read
        for k in CATEGORIES:
            counts[k] = int(base.get(k) or 0)
        if not slave_read:
            counts["not_on_slave"] = None
        counts.update({"unexpected": extra.get(run, {}).get("unexpected", 0),
                       "foreign": extra.get(run, {}).get("foreign", 0),
                       "read_master": read.get("master", 0), "read_slave": read.get("slave", 0) if slave_read else None})
        smp = {k: v for k, v in samples.get(run, {}).items() if counts.get(k) is not None}
        if extra.get(run, {}).get("sample"):
            smp["unexpected"] = extra[run]["sample"]
        out[run] = LossCheck(run, True, slave_read, counts, smp,
                             note=None if slave_read else "the slave was not read back: not_on_slave unknown")
    return out


def _unexpected(annotated: DataFrame, rb_keys: DataFrame) -> dict[str, dict[str, Any]]:
    """Read-back keys no request row has: `unexpected` (this run's prefix) and `foreign` (another run's)."""
    missing = rb_keys.join(annotated.select("run_id", "key"), ["run_id", "key"], "left_anti").withColumn(
        "own", F.col("key").startswith(F.concat(F.col("run_id"), F.lit(":"))))
    out: dict[str, dict[str, Any]] = {}
    for r in missing.groupBy("run_id").agg(F.sum(F.col("own").cast("long")).alias("unexpected"),
                                           F.sum((~F.col("own")).cast("long")).alias("foreign")).collect():
        out[r["run_id"]] = {"unexpected": int(r["unexpected"]), "foreign": int(r["foreign"]), "sample": []}
    w = Window.partitionBy("run_id").orderBy("key")
    firsts = missing.where("own").withColumn("rn", F.row_number().over(w)).where(F.col("rn") <= SAMPLE_KEYS)
    for r in sorted(firsts.collect(), key=lambda r: (r["run_id"], r["rn"])):
        out[r["run_id"]]["sample"].append(r["key"])
    return out


def _samples(annotated: DataFrame, f: dict[str, Column]) -> dict[str, dict[str, list[str]]]:
    """Up to SAMPLE_KEYS keys per run and category, the smallest keys first (stable across runs of the job)."""
    cats = F.array(*[F.when(cond, F.lit(name)) for name, cond in f.items()])
    flagged = (
        annotated.select("run_id", "key", F.explode(F.array_compact(cats)).alias("category"))
    )
    w = Window.partitionBy("run_id", "category").orderBy("key")
    rows = flagged.withColumn("rn", F.row_number().over(w)).where(F.col("rn") <= SAMPLE_KEYS).collect()
    out: dict[str, dict[str, list[str]]] = {}
    for r in sorted(rows, key=lambda r: (r["run_id"], r["category"], r["rn"])):
        out.setdefault(r["run_id"], {}).setdefault(r["category"], []).append(r["key"])
    return out

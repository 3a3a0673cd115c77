"""The loss check, Jepsen total-queue semantics applied to RocketMQ (ROCKETMQ-FACTS.md, "Outcome classes").

attempted = request rows; acknowledged = rows whose outcome is in the ok class (SEND_OK, FLUSH_*,
SLAVE_NOT_AVAILABLE); lost = acknowledged keys not read back from the master; not_on_slave = acknowledged keys
read back from the master but not from the slave; recovered = keys read back from the master whose send was not
acknowledged (fail/info); duplicated = keys read back more than once from the master; unexpected = read-back keys
of this run (prefix `<run_id>:`) that no request row has. Keys of other runs found in the topic are `foreign`.

A queue a node could not serve to the end (`readback/queues.json`, `analysis.coverage`) was not seen from its
`read_to` offset up to its `max_offset` (past which the node has no entry, so a message placed there is known absent):
an acknowledged send placed in that range (its request row's broker, queue_id, queue_offset; the
slave stores a message at the master's queue offset) is `unseen_master` instead of lost, or `unseen_slave` instead
of not_on_slave, so lost and not_on_slave are measured over the places that were read.

One shuffle does it: request keys and read-back keys are unioned and grouped per key, giving how often each key
was sent, acknowledged, and read back from each node (`KeyFlags`). To keep that shuffle small, keys travel as a
64-bit hash (xxhash64) with the seven counts packed in one long; a second, independent 32-bit hash of every key
(murmur3) is compared within each group, and if two different keys ever share a 64-bit hash (about 1e-5 chance
per 10^7 keys), or a count does not fit its bits, the check is redone on the key strings. Only a pair of keys
equal in both hashes (about 1e-14 per 10^7 keys) would go unnoticed. Sample keys are looked up from their hashes.

The consumers' loss rides in the same shuffle (`Deliveries`, `analysis.consume_loss`): the successful deliveries of
the judged groups are unioned in too, with per-group columns, so the request keys are read and shuffled once for
both; keys that were only delivered, and runs without a complete read-back, stay out of the loss check's flags.
"""
from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from analysis import contract as c
from analysis.coverage import Coverage, UnreadQueue, describe_unread

SAMPLE_KEYS = 10
CATEGORIES = ("lost", "not_on_slave", "recovered", "duplicated", "unexpected", "unseen_master", "unseen_slave")
FIELDS = ("sent", "acked", "master_n", "slave_n", "own_n", "unseen_m", "unseen_s")
FIELD_BITS = 9  # 7 fields in 63 bits; a key with more rows than FIELD_MAX goes to the exact fallback
FIELD_MAX = (1 << FIELD_BITS) - 1
BYPASS_PARTIAL_AGG = "spark.sql.execution.bypassPartialAggregation"  # Spark >= 4.1; unknown keys are ignored
KEY_TABLE_CONF = {BYPASS_PARTIAL_AGG: "true", "spark.sql.inMemoryColumnarStorage.compressed": "false"}
"""How the per-key table is planned and cached: nearly every key is unique before the shuffle, so a partial
aggregation there only costs; its columns are ids and counts, which the cache's compression hardly shrinks (the
ten-minute shape's 1.2M keys: the table built 0.7 s sooner of 6.2 s, warm, local[2])."""

KeyHash = Callable[[Column], Column]


def key_hash(key: Column) -> Column:
    return F.xxhash64(key)


def check_hash(key: Column) -> Column:
    return F.hash(key)


def _pack(**fields: Column) -> Column:
    out = F.lit(0).cast("long")
    for i, name in enumerate(FIELDS):
        if name in fields:
            out = out + fields[name].cast("long") * F.lit(1 << (FIELD_BITS * i))
    return out


def _unpacked(packed: Column) -> list[Column]:
    return [F.shiftright(packed, FIELD_BITS * i).bitwiseAND(F.lit(FIELD_MAX)).alias(name)
            for i, name in enumerate(FIELDS)]


def flags() -> dict[str, Column]:
    """Per key (a `KeyFlags` row, or a request row annotated with its key's counts): its loss categories."""
    sent, acked, on_master = F.col("sent") > 0, F.col("acked") > 0, F.col("master_n") > 0
    off_slave = F.col("slave_n") == 0
    unseen_m, unseen_s = F.col("unseen_m") > 0, F.col("unseen_s") > 0
    return {
        "lost": sent & acked & ~on_master & ~unseen_m,
        "unseen_master": sent & acked & ~on_master & unseen_m,
        "not_on_slave": sent & acked & on_master & off_slave & ~unseen_s,
        "unseen_slave": sent & acked & on_master & off_slave & unseen_s,
        "recovered": sent & ~acked & on_master,
        "duplicated": sent & (F.col("master_n") > 1),
        "unexpected": ~sent & (F.col("own_n") > 0),
        "foreign": ~sent & (F.col("own_n") == 0),
    }


def unseen_place(unread: Mapping[str, Sequence[UnreadQueue]] | None, node: str) -> Column:
    """True for a request row (`run_id, broker, queue_id, queue_offset`) placed where `node` was not read: at or past
    `read_to` of one of its queues that was not read completely, and before that queue's `max_offset` where the node
    told it (`unread`: run -> those queues)."""
    conds = []
    for run, queues in (unread or {}).items():
        for q in queues:
            if q.node != node:
                continue
            cond = ((F.col("run_id") == F.lit(run)) & (F.col("queue_id") == F.lit(q.queue_id))
                    & (F.col("queue_offset") >= F.lit(q.read_to)))
            if q.max_offset is not None:  # the node's own queue ends there: past it, known absent, not unseen
                cond = cond & (F.col("queue_offset") < F.lit(q.max_offset))
            if q.broker is not None:
                cond = cond & (F.col("broker") == F.lit(q.broker))
            conds.append(cond)
    return F.coalesce(functools.reduce(operator.or_, conds), F.lit(False)) if conds else F.lit(False)


def run_index(runs: Sequence[str]) -> Column:
    """A run's index in `runs` (an int travels through a shuffle cheaper than the run id)."""
    return F.create_map(*[F.lit(x) for i, r in enumerate(runs) for x in (r, i)])[F.col("run_id")]


@dataclass
class KeyFlags:
    """One row per key of the runs with a read-back: `run` (index into `runs`), `id` (the key's 64-bit hash, or
    the key itself when `exact`), and the counts of FIELDS. `table`: the same rows with the consumer groups'
    columns (`analysis.consume_loss`), for every run of the plan (the runs judged for consumer loss come after the
    runs with a read-back in `runs`); `per_run`: the loss check's and the consumers' sums per run, taken in the same
    scan as the collision check. `release()` frees what it keeps cached."""

    df: DataFrame
    runs: list[str]
    exact: bool
    requests: DataFrame
    readback: DataFrame | None
    cached: DataFrame | None = None
    table: DataFrame | None = None
    per_run: dict[int, dict[str, Any]] = field(default_factory=dict)  # run index -> the sums of `KeyFlagsPlan`

    def run_index(self) -> Column:
        return run_index(self.runs)

    def release(self) -> None:
        if self.cached is not None:
            self.cached.unpersist()

    def key_id(self) -> Column:
        return F.col("key") if self.exact else key_hash(F.col("key"))

    def annotate(self, requests: DataFrame) -> DataFrame:
        """Request rows with their key's counts (for loss metrics over filtered rows)."""
        counts = self.df.where(F.col("sent") > 0).select("run", "id", "master_n", "slave_n", "own_n", "unseen_m",
                                                          "unseen_s")
        return (requests.withColumn("run", self.run_index()).withColumn("id", self.key_id())
                .join(counts, ["run", "id"], "left")
                .withColumn("sent", F.lit(1)).withColumn("acked", (F.col("cls") == c.OK).cast("long")))

    def samples(self, categories: Sequence[str] = CATEGORIES) -> dict[str, dict[str, list[str]]]:
        """Up to SAMPLE_KEYS keys per run and category (the smallest ids) of `categories`, in key order; no Spark
        job when there are none."""
        if not categories:
            return {}
        f = flags()
        cats = F.array_compact(F.array(*[F.when(f[name], F.lit(name)) for name in categories]))
        w = Window.partitionBy("run", "category").orderBy("id")
        picked = (self.df.select("run", "id", F.explode(cats).alias("category"))
                  .withColumn("rn", F.row_number().over(w)).where(F.col("rn") <= SAMPLE_KEYS).collect())
        names: dict[tuple[int, int], str] = {}
        if not self.exact:  # sent keys are in the request rows; only unexpected ones need the read-back rows
            names = self.key_names(self.requests, {r["id"] for r in picked if r["category"] != "unexpected"})
            names |= self.key_names(self.readback, {r["id"] for r in picked if r["category"] == "unexpected"})
        out: dict[str, dict[str, list[str]]] = {}
        for r in picked:
            key = r["id"] if self.exact else names.get((r["run"], r["id"]), f"<hash {r['id']}>")
            out.setdefault(self.runs[r["run"]], {}).setdefault(r["category"], []).append(key)
        return {run: {k: sorted(v) for k, v in cats_.items()} for run, cats_ in out.items()}

    def key_names(self, source: DataFrame, ids: set[int]) -> dict[tuple[int, int], str]:
        """(run, hash) -> key for the wanted hashes, found in `source` (one scan)."""
        if not ids:
            return {}
        rows = (source.where(F.col("run_id").isin(self.runs) & F.col("key").isNotNull())
                .select(self.run_index().alias("run"), key_hash(F.col("key")).alias("h"), "key")
                .where(F.col("h").isin(sorted(ids))).distinct().collect())
        return {(r["run"], r["h"]): r["key"] for r in rows}


def key_flags(requests: DataFrame, readback: DataFrame, runs: Sequence[str], hash_fn: KeyHash = key_hash,
              check_fn: KeyHash = check_hash, unread: Mapping[str, Sequence[UnreadQueue]] | None = None) -> KeyFlags:
    """Per-key counts of `runs` (requests need `run_id, key, cls`, and `broker, queue_id, queue_offset` when
    `unread` names queues; read-back `run_id, node, key`). `unread`: run -> its queues not read completely. Hashed,
    with the exact fallback described in the module docstring (`hash_fn`/`check_fn` exist for testing it)."""
    return plan_key_flags(requests, readback, runs, hash_fn, check_fn, unread).resolve()


@dataclass
class KeyFlagsPlan:
    """The hashed per-key counts planned and marked for caching, not computed yet: `resolve()` runs the job (from
    any thread). Partial aggregation is off in the plan itself, so a query planned meanwhile keeps the session's
    own setting (only the exact redo, rare, sets it around its own `persist()`: a query planned in that moment runs
    without partial aggregation, slower, with the same rows)."""

    both: DataFrame
    checked: DataFrame
    runs: list[str]
    requests: DataFrame
    readback: DataFrame | None
    read_runs: int  # runs[:read_runs] had a complete read-back (the loss check's runs)
    extra: dict[str, Column] = field(default_factory=dict)  # the consumer groups' per-key aggregates by name
    sums: list[Column] = field(default_factory=list)  # the consumers' per-run sums over the table
    exact: DataFrame | None = None  # the redo on the key strings, when there was one

    def resolve(self) -> KeyFlags:
        """Compute the counts and their per-run sums in one scan of the cached table; if two keys share a hash or a
        count overflows, redo them on the key strings."""
        checked = self.checked
        bad = ((F.col("lo") != F.col("hi")) | (F.col("n") > FIELD_MAX)).cast("int")
        table = checked.select("run", "id", "n", *_unpacked(F.col("p")), *self.extra, bad.alias("bad"))
        rows = table.groupBy("run").agg(F.max("bad").alias("bad"), *self._per_run()).collect()
        if not any(r["bad"] for r in rows):
            return self._flags(table.drop("bad"), False, checked, rows)
        checked.unpersist()
        with sql_conf(self.both.sparkSession, KEY_TABLE_CONF):
            self.exact = self.both.groupBy("run", F.col("key").alias("id")).agg(
                *[F.sum(F.shiftright("p", FIELD_BITS * i).bitwiseAND(F.lit(FIELD_MAX))).alias(name)
                  for i, name in enumerate(FIELDS)], _rows_not_delivered(self.extra).alias("n"),
                *self._extra_columns()).persist(StorageLevel.MEMORY_AND_DISK)
        rows = self.exact.groupBy("run").agg(*self._per_run()).collect()
        return self._flags(self.exact, True, self.exact, rows)

    def _extra_columns(self) -> list[Column]:
        return [col.alias(name) for name, col in self.extra.items()]

    def _checked_rows(self) -> Column:
        """True for a row of the loss check: not a key that was only delivered, of a run with a read-back."""
        if not self.extra:
            return F.lit(True)
        return (F.col("n") > 0) & (F.col("run") < F.lit(self.read_runs))

    def _per_run(self) -> list[Column]:
        """The per-run sums over the table: the loss check's categories and read-back rows (`run_counts`), then
        the consumers' (`Deliveries.sums`)."""
        mine = self._checked_rows()
        return [*[F.sum(F.when(mine, col)).alias(name) for name, col in run_counts().items()], *self.sums]

    def _flags(self, table: DataFrame, exact: bool, cached: DataFrame, rows: list) -> KeyFlags:
        return KeyFlags(table.where(self._checked_rows()).select("run", "id", *FIELDS), self.runs, exact, self.requests, self.readback,
                        cached=cached, table=table, per_run={r["run"]: r.asDict() for r in rows})

    def release(self) -> None:
        """Free what the plan and its `resolve()` cached, whether or not that finished."""
        for df in (self.checked, self.exact):
            if df is not None:
                df.unpersist()


@dataclass
class Deliveries:
    """The consumer side of a key-flags plan: `rows` (consume rows with `run_id, key, group, ok, restart,
    delivered_ns`), of which the successful deliveries of `groups` (run -> the groups judged) are counted per key;
    `aggregates(names)` gives the per-key columns and `sums(names)` the per-run sums over them
    (analysis.consume_loss)."""

    rows: DataFrame
    groups: dict[str, list[str]]
    aggregates: Callable[[list[str]], dict[str, Column]]
    sums: Callable[[list[str]], list[Column]]

    def names(self) -> list[str]:
        return sorted({g for gs in self.groups.values() for g in gs})


def plan_key_flags(requests: DataFrame, readback: DataFrame | None, runs: Sequence[str], hash_fn: KeyHash = key_hash,
                   check_fn: KeyHash = check_hash,
                   unread: Mapping[str, Sequence[UnreadQueue]] | None = None,
                   deliveries: Deliveries | None = None) -> KeyFlagsPlan:
    """`key_flags` planned, not run (no Spark job): `resolve()` computes them. With `deliveries`, the same shuffle
    also counts each key's successful deliveries per consumer group (one pass over the request keys for both the
    loss check and the consumers' loss); `readback` None: no read-back rows (only the consumers' loss is
    wanted)."""
    read_runs = list(runs)
    all_runs = read_runs + [r for r in (deliveries.groups if deliveries else {}) if r not in read_runs]
    run_idx, own = run_index(all_runs), F.col("key").startswith(F.concat(F.col("run_id"), F.lit(":")))
    names = deliveries.names() if deliveries is not None else []
    nothing = [F.lit(None).cast("int").alias("g"), F.lit(None).cast("long").alias("restart"),
               F.lit(None).cast("long").alias("delivered_ns")] if deliveries is not None else []
    sent = requests.where(F.col("run_id").isin(all_runs)).select(
        run_idx.alias("run"), F.col("key"),
        _pack(sent=F.lit(1), acked=F.col("cls") == c.OK, unseen_m=unseen_place(unread, "master"),
              unseen_s=unseen_place(unread, "slave")).alias("p"), *nothing)
    both = sent
    if readback is not None:
        both = both.unionByName(readback.where(F.col("key").isNotNull() & F.col("run_id").isin(read_runs)).select(
            run_idx.alias("run"), F.col("key"),
            _pack(master_n=F.col("node") == "master", slave_n=F.col("node") == "slave", own_n=own).alias("p"),
            *nothing))
    extra: dict[str, Column] = {}
    if deliveries is not None:
        group_idx = F.create_map(*[F.lit(x) for i, g in enumerate(names) for x in (g, i)])[F.col("group")]
        judged = functools.reduce(operator.or_, [(F.col("run_id") == F.lit(r)) & F.col("group").isin(gs)
                                                 for r, gs in deliveries.groups.items()])
        got = deliveries.rows.where((F.col("ok") == 1) & F.col("key").isNotNull() & judged).select(
            run_idx.alias("run"), F.col("key"), F.lit(0).cast("long").alias("p"), group_idx.cast("int").alias("g"),
            F.col("restart").cast("long").alias("restart"), F.col("delivered_ns"))
        both = both.unionByName(got)
        extra = deliveries.aggregates(names)
    rest = ["g", "restart", "delivered_ns"] if deliveries is not None else []
    hashed = both.select("run", hash_fn(F.col("key")).alias("id"), check_fn(F.col("key")).alias("chk"), "p", *rest)
    # persist() plans and caches the query with the session's conf of that moment (a copy of it), so
    # KEY_TABLE_CONF is needed only around it.
    with sql_conf(requests.sparkSession, KEY_TABLE_CONF):
        checked = hashed.groupBy("run", "id").agg(
            F.sum("p").alias("p"), _rows_not_delivered(extra).alias("n"), F.min("chk").alias("lo"),
            F.max("chk").alias("hi"), *[col.alias(name) for name, col in extra.items()]).persist(
            StorageLevel.MEMORY_AND_DISK)
    return KeyFlagsPlan(both, checked, all_runs, requests, readback, len(read_runs), extra,
                        deliveries.sums(names) if deliveries is not None else [])


def _rows_not_delivered(extra: Mapping[str, Column]) -> Column:
    """Per key: its rows that are sends or read-back rows (all its rows when the plan has no deliveries)."""
    return F.count(F.when(F.col("g").isNull(), F.lit(1))) if extra else F.count(F.lit(1))


@contextmanager
def sql_conf(spark: SparkSession, settings: Mapping[str, str]) -> Iterator[None]:
    """Set SQL confs for the queries planned inside the block, then put the old values back."""
    old = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in old.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def run_counts() -> dict[str, Column]:
    """Per-run sums over `KeyFlags` rows: each category's keys, and the read-back rows of master and slave."""
    return {**{k: cond.cast("long") for k, cond in flags().items()}, "master": F.col("master_n"),
            "slave": F.col("slave_n")}


SLAVE_METRICS = ("not_on_slave", "unseen_slave")
"""Loss metrics about the slave (the others are about the master)."""


@dataclass
class LossCheck:
    """The loss check of one run. Category counts are None when the run has no complete read-back (the slave's
    when the slave was not read). `unread`: the queues not read completely (their places are not judged)."""

    run_id: str
    measured: bool
    slave_read: bool
    counts: dict[str, int | None] = field(default_factory=dict)
    samples: dict[str, list[str]] = field(default_factory=dict)
    note: str | None = None
    unread: list[UnreadQueue] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"measured": self.measured, "slave_read": self.slave_read, **self.counts,
                "samples": self.samples, "note": self.note, "unread": [q.to_json() for q in self.unread]}

    def metric_note(self, metric: str) -> str | None:
        """What a measured loss metric could not see: the unread places of the node it is about."""
        node, unseen = ("slave", "unseen_slave") if metric in SLAVE_METRICS else ("master", "unseen_master")
        queues = [q for q in self.unread if q.node == node]
        if not queues:
            return None
        return (f"measured over what was read; {describe_unread(queues)}; {unseen} {self.counts.get(unseen)} "
                "(acknowledged sends placed there in the run, not judged)")


def loss_checks(kf: KeyFlags | None, readback_runs: dict[str, list[str] | None],
                totals: dict[str, dict[str, int]], all_runs: Sequence[str],
                coverage: Mapping[str, Coverage] | None = None) -> dict[str, LossCheck]:
    """Loss check of every run. `readback_runs`: runs with a complete read-back -> the nodes read (None: infer
    from the rows); `totals`: run -> attempted / acknowledged / send_ok counted from the request rows; `coverage`:
    run -> its read-back coverage (absent: every queue read). A node of which no queue could be read counts as not
    read. `read_master`/`read_slave` count the read-back rows that carry a key."""
    by_run: dict[str, dict[str, Any]] = {}
    samples: dict[str, dict[str, list[str]]] = {}
    if kf is not None and readback_runs:
        by_run = {kf.runs[i]: row for i, row in kf.per_run.items()}
        samples = kf.samples([k for k in CATEGORIES if any(row.get(k) for row in by_run.values())])
    out = {}
    for run in all_runs:
        t = totals.get(run, {})
        cov = (coverage or {}).get(run) or Coverage()
        counts: dict[str, int | None] = {k: int(t.get(k) or 0) for k in ("attempted", "acknowledged", "send_ok")}
        not_read = {_role(n) for n in cov.nodes_not_read}
        if run not in readback_runs or "master" in not_read:
            counts.update(dict.fromkeys((*CATEGORIES, "foreign", "read_master", "read_slave")))
            note = (f"{cov.node_note('master')}: loss check not measured" if run in readback_runs
                    else "no complete read-back: loss check not measured")
            out[run] = LossCheck(run, False, False, counts, note=note, unread=cov.unread)
            continue
        declared, base = readback_runs[run], by_run.get(run, {})
        read = {n: int(base.get(n) or 0) for n in ("master", "slave")}
        slave_read = _every_slave(declared) if declared is not None else read["slave"] > 0
        slave_read = slave_read and "slave" not in not_read
        counts.update({k: int(base.get(k) or 0) for k in (*CATEGORIES, "foreign")})
        counts.update(read_master=read["master"], read_slave=read["slave"] if slave_read else None)
        notes = []
        if not slave_read:
            counts.update(not_on_slave=None, unseen_slave=None)
            why = cov.node_note("slave") if "slave" in not_read else "the slave was not read back"
            notes.append(f"{why}: not_on_slave unknown")
        partly = [q for q in cov.unread if _role(q.node) not in not_read]
        if partly:
            seen = ", ".join(f"{k} {counts[k]}" for k in ("unseen_master", "unseen_slave") if counts[k] is not None)
            notes.append(f"measured over the places that were read; {describe_unread(partly)}; acknowledged sends "
                         f"placed there are not judged ({seen})")
        smp = {k: v for k, v in samples.get(run, {}).items() if counts.get(k) is not None}
        out[run] = LossCheck(run, True, slave_read, counts, smp, note="; ".join(notes) or None, unread=cov.unread)
    return out


def _role(node: str) -> str:
    """`master` / `slave` of a read-back node label (`broker-b/slave` with several broker groups)."""
    return str(node).rpartition("/")[2]


def _every_slave(declared: list[str]) -> bool:
    """Whether the read-back read a slave of every group whose master it read (`slave`; `broker-a/slave`, ...)."""
    groups = {str(n).rpartition("/")[0]: [] for n in declared}
    for n in declared:
        groups[str(n).rpartition("/")[0]].append(_role(n))
    return bool(groups) and all("slave" in roles for g, roles in groups.items() if "master" in roles)

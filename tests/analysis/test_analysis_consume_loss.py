"""Consumer-visible loss and duplicates counted in the loss check's shuffle (analysis.consume_loss): per (run, group)
exactly what a count over the rows in Python gives, for a run with a read-back and a run without one side by side;
the loss check's own flags are the same with the consumers' columns as without; and a colliding hash falls back to
the key strings with the same counts."""
from __future__ import annotations

import random

import pytest
from pyspark.sql import functions as F

from analysis import contract as c
from analysis.consume_loss import SAMPLE_KEYS, consumer_loss, key_aggregates, run_sums
from analysis.frames import jepsen_class
from analysis.loss import Deliveries, flags, key_flags, plan_key_flags

pytestmark = pytest.mark.spark

GROUPS = {"r": ["app", "audit"], "q": ["app"]}


def _runs(spark, seed: int):
    """Run `r` (read back) and run `q` (consumers only): random outcomes; each group misses some acknowledged keys,
    gets some twice, some from a restarted process (sometimes first), some keys never acknowledged, failed
    deliveries that do not count, and a key no send has. Returns the frames and the counts expected per (run,
    group)."""
    rnd = random.Random(seed)
    words = list(c.OUTCOME_CLASS)
    requests, readback, deliveries = [], [], []
    want = {}
    for run, groups in GROUPS.items():
        acked_keys = set()
        per_group = {g: {} for g in groups}  # key -> [(delivered_ns, restart)] of successful deliveries
        for n in range(1500):
            key, outcome = f"{run}:w:{n}", rnd.choice(words)
            requests.append((run, key, outcome))
            acked = c.outcome_class(outcome) == c.OK
            acked_keys |= {key} if acked else set()
            if run == "r" and rnd.random() < 0.95:
                readback.append((run, "master", key))
            for g in groups:
                if rnd.random() < (0.04 if acked else 0.8):
                    continue
                for _ in range(2 if rnd.random() < 0.05 else 1):
                    t, restart = rnd.randrange(10**9), int(rnd.random() < 0.1)
                    per_group[g].setdefault(key, []).append((t, restart))
                    deliveries.append((run, key, g, 1, restart, t))
                if rnd.random() < 0.05:
                    deliveries.append((run, key, g, 0, 0, rnd.randrange(10**9)))  # RECONSUME_LATER: not counted
        for g in groups:
            per_group[g].setdefault(f"{run}:ghost:1", []).append((5, 0))
            deliveries.append((run, f"{run}:ghost:1", g, 1, 0, 5))
            got = per_group[g]
            lost = {k for k in acked_keys if k not in got}
            want[(run, g)] = {
                "acknowledged": len(acked_keys), "lost": len(lost), "lost_set": lost,
                "duplicated": sum(len(v) - 1 for v in got.values()),
                "duplicated_after_restart": sum(sum(r for _, r in v) - min(v)[1] for v in got.values()),
                "unacknowledged_consumed": sum(1 for k in got if k not in acked_keys)}
            assert lost and want[(run, g)]["duplicated"] and want[(run, g)]["duplicated_after_restart"]
    req = spark.createDataFrame(requests, "run_id string, key string, outcome string").withColumn(
        "cls", jepsen_class(F.col("outcome")))
    rb = spark.createDataFrame(readback, "run_id string, node string, key string")
    ce = spark.createDataFrame(deliveries, "run_id string, key string, group string, ok long, restart long, "
                                           "delivered_ns long")
    return req, rb, ce, want


def _check(rows, want, exact: bool):
    assert {(r["run_id"], r["group"]) for r in rows} == set(want)
    for r in rows:
        w = want[(r["run_id"], r["group"])]
        assert {k: r[k] for k in ("acknowledged", "lost", "duplicated", "duplicated_after_restart",
                                  "unacknowledged_consumed")} == {k: v for k, v in w.items() if k != "lost_set"}
        keys = r["lost_keys"]
        assert keys == sorted(keys) and len(keys) == min(SAMPLE_KEYS, w["lost"]) and set(keys) <= w["lost_set"]
        if exact:  # the ids are the keys: the smallest lost keys
            assert keys == sorted(w["lost_set"])[:SAMPLE_KEYS]


def test_consumer_loss_per_group_is_exact_and_leaves_the_loss_check_alone(spark):
    req, rb, ce, want = _runs(spark, 11)
    plan = plan_key_flags(req, rb, ["r"], deliveries=Deliveries(ce, GROUPS, key_aggregates, run_sums))
    alone = key_flags(req, rb, ["r"])
    try:
        kf = plan.resolve()
        assert not kf.exact and kf.runs == ["r", "q"]
        _check(consumer_loss(kf, GROUPS), want, exact=False)
        for name, cond in flags().items():  # the loss check sees only run r, and the same keys as without
            assert sorted(r["id"] for r in kf.df.where(cond).select("id").collect()) == sorted(
                r["id"] for r in alone.df.where(cond).select("id").collect()), name
        assert {r["run"] for r in kf.df.select("run").distinct().collect()} == {0}
    finally:
        plan.release()
        alone.release()


def test_a_hash_collision_falls_back_to_the_key_strings_with_the_same_counts(spark):
    req, rb, ce, want = _runs(spark, 12)
    plan = plan_key_flags(req, rb, ["r"], hash_fn=lambda key: F.pmod(F.hash(key), F.lit(500)).cast("long"),
                          deliveries=Deliveries(ce, GROUPS, key_aggregates, run_sums))
    try:
        kf = plan.resolve()
        assert kf.exact
        _check(consumer_loss(kf, GROUPS), want, exact=True)
    finally:
        plan.release()


def test_consumers_only_need_no_read_back(spark):
    """`readback` None (the consumers' loss alone, as `consume_results` plans it without the loss check)."""
    req, _, ce, want = _runs(spark, 13)
    plan = plan_key_flags(req, None, [], deliveries=Deliveries(ce, GROUPS, key_aggregates, run_sums))
    try:
        kf = plan.resolve()
        assert kf.df.count() == 0
        _check(consumer_loss(kf, GROUPS), want, exact=False)
    finally:
        plan.release()

"""The loss check (Jepsen total-queue): it finds exactly the keys dropped from the read-back, and zero when none
were; not-on-slave, recovered, duplicated and unexpected likewise; acknowledged keys placed where a node was not
read are unseen there, not lost / not on the slave."""
from __future__ import annotations

import random

import pytest
from pyspark.sql import functions as F

from analysis import contract as c
from analysis.coverage import UnreadQueue
from analysis.frames import jepsen_class
from analysis.loss import flags, key_flags, key_hash

pytestmark = pytest.mark.spark


def test_incident_counts_and_samples_are_exactly_the_dropped_keys(analysed):
    loss = analysed.result("ro-run").loss
    a = analysed.answers["ro-run"]
    assert loss.measured and loss.slave_read
    assert loss.counts["attempted"] == 3010
    assert loss.counts["acknowledged"] == a.numbers["acknowledged"]
    assert loss.counts["lost"] == len(a.lost) == 7
    assert loss.samples["lost"] == sorted(a.lost)  # fewer than 10: the sample is the whole set
    assert loss.counts["not_on_slave"] == len(a.not_on_slave)
    assert set(loss.samples["not_on_slave"]) <= a.not_on_slave and len(loss.samples["not_on_slave"]) == 10
    assert loss.counts["recovered"] == len(a.recovered) == 120
    assert set(loss.samples["recovered"]) <= a.recovered
    assert loss.counts["duplicated"] == 5 and loss.samples["duplicated"] == sorted(a.duplicated)
    assert loss.counts["unexpected"] == 2 and loss.samples["unexpected"] == sorted(a.unexpected)
    assert loss.counts["foreign"] == 1


def test_clean_run_reports_zero(analysed):
    counts = analysed.result("clean-run").loss.counts
    assert {k: counts[k] for k in ("lost", "not_on_slave", "recovered", "duplicated", "unexpected")} == dict.fromkeys(
        ("lost", "not_on_slave", "recovered", "duplicated", "unexpected"), 0)
    assert counts["acknowledged"] == counts["attempted"] == 1500
    assert analysed.result("clean-run").loss.samples == {}


def test_run_without_readback_is_not_measured(analysed):
    loss = analysed.result("cut-run").loss
    assert not loss.measured and loss.counts["lost"] is None and loss.counts["attempted"] == 1300


UNREAD = {"r": [UnreadQueue("master", "b", 1, 600, 750, 600, "partial", "MQBrokerException", 1, "x"),
                UnreadQueue("slave", "b", 3, 500, 750, 500, "partial", "MQBrokerException", 1, "x")]}
"""The master's queue 1 was read up to offset 600, the slave's queue 3 up to 500 (send n sits at n % 4, n // 4)."""


def _random_run(spark, seed: int):
    """Random outcomes, a random set of keys missing from the master (and the slave), duplicates, one unknown key
    of this run and one of another run, and nothing read where UNREAD says a node was not read; returns the frames
    and the sets decided here."""
    rnd = random.Random(seed)
    words = list(c.OUTCOME_CLASS)
    requests, readback, lost, nos, rec, dup, unseen_m, unseen_s = [], [], set(), set(), set(), set(), set(), set()
    for n in range(3000):
        key, outcome = f"r:w:{n}", rnd.choice(words)
        requests.append(("r", key, outcome, "b", n % 4, n // 4))
        acked = c.outcome_class(outcome) == c.OK
        off_master, off_slave = n % 4 == 1 and n // 4 >= 600, n % 4 == 3 and n // 4 >= 500
        if off_master or rnd.random() >= (0.97 if acked else 0.3):
            if acked:
                (unseen_m if off_master else lost).add(key)
            continue
        times = 2 if rnd.random() < 0.02 else 1
        dup |= {key} if times == 2 else set()
        rec |= set() if acked else {key}
        readback += [("r", "master", key)] * times
        if not off_slave and rnd.random() < 0.9:
            readback.append(("r", "slave", key))
        elif acked:
            (unseen_s if off_slave else nos).add(key)
    req = spark.createDataFrame(
        requests, "run_id string, key string, outcome string, broker string, queue_id int, queue_offset long"
    ).withColumn("cls", jepsen_class(F.col("outcome")))
    rb = spark.createDataFrame(readback + [("r", "master", "r:ghost:1"), ("r", "master", "other:w:1")],
                               "run_id string, node string, key string")
    want = {"lost": lost, "not_on_slave": nos, "recovered": rec, "duplicated": dup, "unexpected": {"r:ghost:1"},
            "foreign": {"other:w:1"}, "unseen_master": unseen_m, "unseen_slave": unseen_s}
    assert lost and nos and rec and dup and unseen_m and unseen_s
    return req, rb, want


def _found(kf, req):
    """The keys of each category: from the per-key rows (hash ids mapped back to keys) and from the request rows."""
    keys = {r["key"]: r["key"] for r in req.select("key").collect()}
    by_id = {} if kf.exact else {r["h"]: r["key"] for r in req.select(key_hash(F.col("key")).alias("h"), "key")
                                 .unionByName(kf.readback.select(key_hash(F.col("key")).alias("h"), "key")).collect()}
    got = {}
    for name, cond in flags().items():
        ids = [r["id"] for r in kf.df.where(cond).select("id").collect()]
        got[name] = {keys.get(i, i) if kf.exact else by_id[i] for i in ids}
    lost_rows = {r["key"] for r in kf.annotate(req).where(flags()["lost"]).select("key").collect()}
    return got, lost_rows


def test_random_drops_are_found_exactly(spark):
    req, rb, want = _random_run(spark, 7)
    kf = key_flags(req, rb, ["r"], unread=UNREAD)
    try:
        assert not kf.exact  # the 64-bit hashes of 3000 keys do not collide
        got, lost_rows = _found(kf, req)
        assert got == want
        assert lost_rows == want["lost"]  # the same flags on the request rows (filtered loss expectations)
        unseen_rows = {r["key"] for r in kf.annotate(req).where(flags()["unseen_slave"]).select("key").collect()}
        assert unseen_rows == want["unseen_slave"]
        samples = kf.samples()["r"]
        assert samples["unexpected"] == ["r:ghost:1"]
        assert all(len(v) == 10 and set(v) <= want[k] for k, v in samples.items() if k != "unexpected")
    finally:
        kf.release()


def test_a_hash_collision_falls_back_to_exact_keys(spark):
    """With a hash that collides often (1000 values for 3000 keys), the check notices and groups by the keys."""
    req, rb, want = _random_run(spark, 8)
    kf = key_flags(req, rb, ["r"], hash_fn=lambda key: F.pmod(F.hash(key), F.lit(1000)).cast("long"),
                   unread=UNREAD)
    try:
        assert kf.exact
        got, lost_rows = _found(kf, req)
        assert got == want and lost_rows == want["lost"]
        assert set(kf.samples()["r"]["lost"]) <= want["lost"]
    finally:
        kf.release()

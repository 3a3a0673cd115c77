"""The loss check (Jepsen total-queue): it finds exactly the keys dropped from the read-back, and zero when none
were; not-on-slave, recovered, duplicated and unexpected likewise."""
from __future__ import annotations

import random

import pytest
from pyspark.sql import functions as F

from analysis import contract as c
from analysis.frames import jepsen_class
from analysis.loss import annotate, flags, key_flags

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


@pytest.mark.parametrize("seed", [7])
def test_random_drops_are_found_exactly(spark, seed):
    """Random outcomes and a random set of keys missing from the master (and from the slave): the flags per key
    equal the sets decided here."""
    rnd = random.Random(seed)
    words = list(c.OUTCOME_CLASS)
    requests, readback, lost, nos, rec, dup = [], [], set(), set(), set(), set()
    for n in range(3000):
        key, outcome = f"r:w:{n}", rnd.choice(words)
        requests.append(("r", key, outcome))
        acked = c.outcome_class(outcome) == c.OK
        on_master = rnd.random() < (0.97 if acked else 0.3)
        if not on_master:
            if acked:
                lost.add(key)
            continue
        times = 2 if rnd.random() < 0.02 else 1
        dup |= {key} if times == 2 else set()
        rec |= set() if acked else {key}
        readback += [("r", "master", key)] * times
        if rnd.random() < 0.9:
            readback.append(("r", "slave", key))
        elif acked:
            nos.add(key)
    req = spark.createDataFrame(requests, "run_id string, key string, outcome string").withColumn(
        "cls", jepsen_class(F.col("outcome")))
    rb = spark.createDataFrame(readback + [("r", "master", "r:ghost:1"), ("r", "master", "other:w:1")],
                               "run_id string, node string, key string")
    per_key = key_flags(req, rb, ["r"])
    got = {name: {r["key"] for r in per_key.where(cond).select("key").collect()} for name, cond in flags().items()}
    assert got == {"lost": lost, "not_on_slave": nos, "recovered": rec, "duplicated": dup,
                   "unexpected": {"r:ghost:1"}, "foreign": {"other:w:1"}}
    assert lost and nos and rec and dup
    # the same flags on the request rows (what filtered loss expectations use)
    rows = annotate(req, per_key)
    assert {r["key"] for r in rows.where(flags()["lost"]).select("key").collect()} == lost

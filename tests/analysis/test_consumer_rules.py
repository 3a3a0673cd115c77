"""`analysis.consumer_rules`: the one sentence the run report and `rmq-chaos diagnose` give on a consumer backlog,
in the seed's order: a group that kept up on the same topic names the consumer side whatever the broker's put
times; else the master's puts, fast or not; nothing without a group behind or anything to name a side by."""
from __future__ import annotations

from analysis.consumer_rules import KEPT_UP, LAG_GREW, Backlog, sentence
from harness.diagnose.evidence import Evidence
from harness.diagnose.render import backlog_sentence


def test_a_group_that_kept_up_names_the_consumer_side_even_with_slow_puts() -> None:
    said = sentence(Backlog(("light", "heavy"), ("ok",), puts=1000, under_10ms_share=0.747, p99_upper="100 ms"))
    assert said == (f"{KEPT_UP} (group ok kept up on the same topic while the lag grew in group heavy, light; 74.7% "
                    "of the master's 1000 puts took under 10 ms)")
    assert sentence(Backlog(("heavy",), ("ok",))).startswith(KEPT_UP)  # no [PAGECACHERT] lines: still named


def test_without_a_group_that_kept_up_the_put_times_decide() -> None:
    assert sentence(Backlog(("stuck",), puts=500, under_10ms_share=0.995)) == (
        f"{LAG_GREW} (99.5% of the master's 500 puts took under 10 ms; lag grew in group stuck)")
    assert sentence(Backlog(("stuck",), puts=500, under_10ms_share=0.9, p99_upper="over 10 s")) == (
        "lag grew in group stuck; the master's puts were not all fast: 90.0% of 500 under 10 ms, the 99th "
        "percentile up to over 10 s")


def test_nothing_to_say() -> None:
    assert sentence(Backlog((), ("ok",), puts=10, under_10ms_share=1.0)) is None
    assert sentence(Backlog(("stuck",))) is None  # neither side can be named


def test_diagnose_says_what_the_report_says_of_the_same_evidence() -> None:
    evidence = Evidence(groups_in_flow_control={"stuck"}, pagecache_puts=500, pagecache_fast_puts=498)
    assert backlog_sentence(evidence) == sentence(Backlog(("stuck",), puts=500, under_10ms_share=498 / 500))
    assert backlog_sentence(Evidence(pagecache_puts=5, pagecache_fast_puts=5)) is None

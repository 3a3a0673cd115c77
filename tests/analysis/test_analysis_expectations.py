"""The expectation model (architecture §6): what it accepts, and one-line errors naming key and allowed values."""
from __future__ import annotations

import math

import pytest
import yaml

from analysis.expectations import FAULT_METRICS, GROUP_METRICS, METRICS, Expectation, parse_expectations

ARCHITECTURE_EXAMPLE = """
expect:
  - {name: ok-before, phase: healthy, outcome: SEND_OK, metric: share, min: 0.99}
  - {phase: readonly, client: probe, outcome: RemotingTooMuchRequestException, metric: count, min: 1}
  - {phase: readonly, outcome: SLAVE_NOT_AVAILABLE, metric: latency_p99_ms, basis: actual, max: 100}
  - {phase: readonly, after_s: 30, outcome: SEND_OK, metric: share, max: 0.0}
  - {metric: lost, max: 0}
  - {metric: not_on_slave, min: 1}
  - {fault: ro, metric: fault_to_first_error_s, max: 30}
  - {fault: ro, metric: recovery_s, max: 60}
"""


def test_the_architecture_example_parses():
    exps = parse_expectations(yaml.safe_load(ARCHITECTURE_EXAMPLE)["expect"])
    assert [e.metric for e in exps] == ["share", "count", "latency_p99_ms", "share", "lost", "not_on_slave",
                                        "fault_to_first_error_s", "recovery_s"]
    assert exps[0].label() == "ok-before"
    assert exps[2].basis == "actual" and exps[1].basis == "intended"
    assert exps[3].filters == {"phase": "readonly", "outcome": "SEND_OK", "after_s": 30.0}


@pytest.mark.parametrize("item, message", [
    ({"metric": "shares", "min": 1}, "expect[0].metric: metric 'shares' is not one of: count, share, rate"),
    ({"metric": "lost", "max": 0, "colour": 1}, "expect[0]: unknown key 'colour'; allowed keys: name, phase"),
    ({"metric": "count"}, "expect[0]: expectation on count needs min or max"),
    ({"metric": "count", "min": 2, "max": 1}, "min 2.0 is above max 1.0"),
    ({"metric": "recovery_s", "max": 3}, "metric recovery_s needs key 'fault'"),
    ({"metric": "count", "outcome": "SEND_KO", "min": 1}, "outcome 'SEND_KO' is not one of: SEND_OK"),
    ({"metric": "latency_p99_ms", "basis": "wall", "max": 1}, "basis 'wall' is not one of: intended, actual"),
    ({"metric": "count", "basis": "actual", "min": 1}, "key 'basis' applies only to metrics latency_p50_ms"),
    ({"metric": "unexpected", "phase": "x", "max": 0}, "key 'phase' does not apply to metric unexpected"),
    ({"metric": "share", "phase": "x", "min": 0.5}, "metric share needs one of keys outcome, response_code"),
    ({"metric": "count", "after_s": 5, "before_s": 5, "min": 1}, "before_s 5.0 must be above after_s 5.0"),
    ("count", "expect[0]: an expectation is a mapping"),
])
def test_bad_expectations_name_key_and_allowed_values(item, message):
    with pytest.raises(ValueError) as err:
        parse_expectations([item], source="runs/x/scenario.yaml")
    text = str(err.value)
    assert text.startswith("runs/x/scenario.yaml: ")
    assert message in text
    assert "\n" not in text


def test_duplicate_labels_are_refused():
    with pytest.raises(ValueError, match="both named 'a'"):
        parse_expectations([{"name": "a", "metric": "lost", "max": 0}, {"name": "a", "metric": "count", "min": 1}])


def test_bounds_are_inclusive_and_never_is_infinite():
    e = Expectation(metric="recovery_s", fault="ro", max=60)
    assert e.holds(60) and not e.holds(60.001) and not e.holds(math.inf)
    assert Expectation(metric="count", min=1).holds(math.inf)


def test_every_metric_is_accepted_with_its_own_filters():
    for metric in METRICS:
        extra = {"fault": "f"} if metric in FAULT_METRICS else {"outcome": "SEND_OK"} if metric == "share" else {}
        extra.update({"broker": "broker-a"} if metric in GROUP_METRICS else {})
        extra.update({"fault": "f", "below": 0.05} if metric == "group_leave_s" else {})
        assert Expectation.model_validate({"metric": metric, "max": 1, **extra}).metric == metric

"""Analysis per broker group (issue 42): the `broker` filter, `group_share` and `group_leave_s` (architecture §6),
the per-group panel and aggregates of a run with several groups (analysis/per_group.py), none for one group, and the
outcomes chart that shows the rare outcomes beside the dominant one (analysis/figures.py).

Pure-Python parts first (the model, the leave rule, the scenario's name check, the chart's data); then the
two-group run of `group_runs.py` analysed by the real job; then a one-group run directory made before groups
existed, reported as before."""
from __future__ import annotations

import json
import math

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from group_runs import ANSWERS, EXPECT, MEASURED, two_group_run

from analysis import contract as c
from analysis.expectations import Expectation, parse_expectations
from analysis.group_leave import leave_second
from analysis.rundir import _broker_groups


def test_the_broker_filter_and_the_group_metrics_in_the_model():
    e = Expectation(phase="sick", broker="broker-a", outcome="SEND_OK", metric="share", min=0.9)
    assert e.filters == {"phase": "sick", "broker": "broker-a", "outcome": "SEND_OK"}
    leave = Expectation(fault="f", broker="broker-a", metric="group_leave_s", below=0.05, max=10)
    assert leave.label() == "broker=broker-a fault=f group_leave_s[below=0.05] max=10"
    assert parse_expectations(EXPECT)[0].label() == "steady-a-half"
    for item, message in (
            ({"phase": "x", "metric": "group_share", "max": 1}, "metric group_share needs key 'broker'"),
            ({"broker": "broker-a", "metric": "group_leave_s", "below": 0.1, "max": 1},
             "metric group_leave_s needs key 'fault'"),
            ({"fault": "f", "broker": "broker-a", "metric": "group_leave_s", "max": 1},
             "metric group_leave_s needs key 'below'"),
            ({"broker": "broker-a", "metric": "count", "below": 0.1, "min": 1},
             "key 'below' applies only to metric group_leave_s"),
            ({"fault": "f", "broker": "broker-a", "metric": "group_leave_s", "below": 2, "max": 1},
             "expect[0].below: Input should be less than or equal to 1"),
            ({"broker": "broker-a", "outcome": "SEND_OK", "metric": "group_share", "max": 1},
             "key 'outcome' does not apply to metric group_share"),
            ({"broker": "broker-a", "fault": "f", "metric": "recovery_s", "max": 1},
             "key 'broker' does not apply to metric recovery_s")):
        with pytest.raises(ValueError, match=message.replace("[", r"\[")):
            parse_expectations([item])


@pytest.mark.parametrize("seconds, below, value", [
    ([(0, 100, 50), (1, 100, 30), (2, 100, 10), (3, 100, 0), (5, 100, 1), (6, 100, 0)], 0.05, 3.0),
    ([(0, 100, 50), (1, 100, 30), (2, 100, 10), (3, 100, 0), (5, 100, 1), (6, 100, 0)], 0.0, 6.0),
    ([(0, 100, 3), (1, 10, 0)], 0.05, 0.0),  # under the bound from the apply on
    ([(0, 100, 50), (4, 100, 0)], 0.05, 4.0),  # seconds without sends (1-3) do not count as left
    ([(0, 100, 0), (1, 100, 40)], 0.05, math.inf),  # the last second with sends is above: never
])
def test_the_leave_second_rule(seconds, below, value):
    assert leave_second(seconds, below)[0] == value


def test_a_runs_broker_groups():
    groups = [{"name": "broker-a", "members": ["broker-a-master"]}, {"name": "broker-b", "members": []}]
    assert _broker_groups({"groups": groups, "broker_name": "broker-a"}, {}) == ["broker-a", "broker-b"]
    assert _broker_groups(None, {"cluster": {"groups": 3}}) == ["broker-a", "broker-b", "broker-c"]
    assert _broker_groups({}, {"cluster": {"groups": ["east", "west"]}}) == ["east", "west"]
    assert _broker_groups({"broker_name": "broker-x"}, {"cluster": {"groups": 1}}) == ["broker-x"]
    assert _broker_groups({"nodes": {}}, {}) == []  # a run made before cluster.json named its broker


SCENARIO = """
name: g
cluster: {groups: 2}
load: {clients: [{name: flood, users: 4}]}
phases:
  - {name: steady, duration: 5s}
  - {name: sick, duration: 5s, faults: [{id: kill-a, kind: kill, target: broker-a/master}]}
expect:
  - {phase: sick, broker: BROKER, metric: group_share, max: 0.1}
  - {fault: kill-a, broker: BROKER, metric: group_leave_s, below: 0.05, max: 10}
"""


def test_the_scenario_checks_the_broker_names():
    from harness.scenario import SourceError, load_scenario_text

    (scenario,) = load_scenario_text("g.yaml", SCENARIO.replace("BROKER", "broker-b"))
    assert [e.broker for e in scenario.expect] == ["broker-b", "broker-b"]
    with pytest.raises(SourceError, match="'broker-c' is not a broker of this scenario; allowed: broker-a, broker-b"):
        load_scenario_text("g.yaml", SCENARIO.replace("BROKER", "broker-c"))


def test_the_outcomes_chart_draws_a_rare_outcome_on_its_own_scale():
    """5,000 SEND_OK a second and, in one second, 2 SLAVE_NOT_AVAILABLE: the second panel has their series, on a
    log scale whose floor keeps them well above the axis (a property of the figure, no pixel matching)."""
    from analysis.figures import outcomes_figure, plt

    secs = list(range(10))
    rows = [{"sec": s, "outcome": c.SEND_OK, "sends": 5000} for s in secs] + [
        {"sec": 6, "outcome": c.SLAVE_NOT_AVAILABLE, "sends": 2},
        {"sec": 7, "outcome": c.REMOTING_TOO_MUCH_REQUEST, "sends": 40}]
    fig = outcomes_figure(pa.Table.from_pylist(rows), secs, [], [], 0.0, 10.0)
    try:
        top, low = fig.axes
        lines = {ln.get_label(): ln for ln in low.get_lines()}
        assert set(lines) == {c.SLAVE_NOT_AVAILABLE, c.REMOTING_TOO_MUCH_REQUEST}  # SEND_OK is not on it
        ys = list(lines[c.SLAVE_NOT_AVAILABLE].get_ydata())
        assert ys[6] == 2 and all(math.isnan(y) for i, y in enumerate(ys) if i != 6)
        assert low.get_yscale() == "log"
        fig.canvas.draw()
        bottom = low.transData.transform((6.5, low.get_ylim()[0]))[1]
        two = low.transData.transform((6.5, 2))[1]
        forty = low.transData.transform((7.5, 40))[1]
        height = low.bbox.height
        assert two - bottom > 0.15 * height and forty - two > 0.15 * height  # both stand apart, off the axis
        assert top.get_ylim()[1] >= 5000  # the stacked panel as before
    finally:
        plt.close(fig)
    only_ok = [r for r in rows if r["outcome"] == c.SEND_OK]
    fig = outcomes_figure(pa.Table.from_pylist(only_ok), secs, [], [], 0.0, 10.0)
    assert len(fig.axes) == 1  # nothing rare: one panel, as before
    plt.close(fig)


@pytest.mark.spark
def test_percentiles_by_group_agree_both_ways(spark):
    """`stats.latency_percentiles(by=["broker"])`: the JVM aggregates and the SQL expressions give the same figures,
    per group per slice and per group over the run (a null group included)."""
    from analysis import stats

    rows = [("r", ["broker-a", "broker-b", None][i % 3], "p", None if i % 4 else "f apply", float(i % 13),
             float(i % 7)) for i in range(240)]
    df = spark.createDataFrame(rows, "run_id string, broker string, phase string, transition string, "
                                     "latency_ms double, service_ms double")
    ways = [{(r["broker"], r["basis"], r["level"], r["phase"], r["transition"]): r.asDict()
             for r in stats.latency_percentiles(df, jvm, by=["broker"]).collect()} for jvm in (True, False)]
    assert ways[0] == ways[1] and len(ways[0]) == 3 * 2 * 3  # groups x bases x (2 slices + the run)
    mine = sorted(float(i % 13) for i in range(0, 240, 3))  # broker-a's latencies over the run
    assert ways[0][("broker-a", "intended", stats.LEVEL_RUN, None, None)]["p50"] == mine[39]


@pytest.fixture(scope="module")
def groups_run(spark, tmp_path_factory):
    from analysis.job import analyze

    path, answers = two_group_run(tmp_path_factory.mktemp("groups"))
    job = analyze([path], spark=spark, progress=False)
    return path, job.results[0], job


@pytest.mark.spark
def test_per_group_counts_latency_and_rate(groups_run):
    path, res, _ = groups_run
    got = {(r["slice"], r["broker"]): r for r in res.per_group}
    assert got.keys() == ANSWERS.keys()  # (no broker) only where it had sends
    for key, (sends, ok, p99) in ANSWERS.items():
        r = got[key]
        assert (r["sends"], r["send_ok"], r["intended_p99"]) == (sends, ok, p99), key
    slices = {p["slice"]: p for p in res.per_phase}
    for (name, _), r in got.items():  # every group of a slice sums to the slice
        assert sum(g["sends"] for (n, _), g in got.items() if n == name) == slices[name]["sends"]
        assert r["rate"] == pytest.approx(r["sends"] / slices[name]["seconds"])
    sick_a = got[("sick", "broker-a")]
    assert sick_a["outcomes"] == {c.MQ_BROKER_EXCEPTION: 91} and sick_a["fail"] == 91
    assert sick_a["share"] == pytest.approx(91 / 660) and sick_a["rate"] == pytest.approx(91 / 7.6)
    assert got[("steady", "broker-a")]["share"] == 0.5 and ("steady", "(no broker)") not in got
    table = pq.read_table(path / "report" / "per_group.parquet")
    assert table.num_rows == len(res.per_group)
    assert dict(table.to_pylist()[0]["outcomes"]) == {c.SEND_OK: 200}
    seconds = {(r["sec"], r["broker"]): r for r in pq.read_table(path / "report" / "per_group_per_second.parquet")
               .to_pylist()}
    assert (seconds[(9, "broker-a")]["sends"], seconds[(9, "broker-a")]["share"]) == (1, 1 / 80)
    assert seconds[(13, "(no broker)")]["share"] == pytest.approx(2 / 102) and (1, "(no broker)") not in seconds
    assert seconds[(1, "broker-b")]["share"] == 0.5
    summary = json.loads((path / "report" / "summary.json").read_text())
    assert summary["broker_groups"] == ["broker-a", "broker-b"]
    assert {"per_group.parquet", "per_group_per_second.parquet"} <= set(summary["files"])


@pytest.mark.spark
def test_the_broker_filter_group_share_and_group_leave(groups_run):
    _, res, job = groups_run
    results = {r.name: r for r in res.verdict.results}
    assert results.keys() == MEASURED.keys()
    for name, (value, status) in MEASURED.items():
        r = results[name]
        assert r.status == status, (name, r.measured, r.note)
        assert r.measured == (None if value is None else pytest.approx(value)), name
    assert "last second above 0.05: 2 (14 of 100 sends on the group)" in results["a-leaves"].note  # from the apply
    assert "broker 'broker-c' is not a broker group of this run" in results["no-such-group"].note
    verdict = json.loads((res.run.path / "report" / "verdict.json").read_text())
    leave = next(e for e in verdict["expectations"] if e["name"] == "a-leaves")
    assert leave["below"] == 0.05 and leave["filters"] == {"broker": "broker-a", "fault": "slow-a"}
    assert job.exit_code == 1  # b-never-leaves failed


@pytest.mark.spark
def test_the_page_has_the_group_panel(groups_run):
    path, _, _ = groups_run
    html = (path / "report" / "index.html").read_text()
    panel = html.split('<h2 id="broker-groups">Broker groups</h2>')[1].split("</table>")[0]
    assert 'alt="share of the sends per broker group per second"' in panel
    assert panel.count("<tr ") == len(ANSWERS)
    sick_a = panel.split('data-slice="sick" data-broker="broker-a">')[1].split("</tr>")[0]
    assert "<td>broker-a</td>" in sick_a and "13.79%" in sick_a and "MQBrokerException 91" in sick_a
    assert "outcomes other than SEND_OK" not in html  # the chart title is in the PNG, not the page
    assert "group_leave_s (below 0.05)" in html


@pytest.mark.spark
def test_a_one_group_run_made_before_is_reported_as_before(analysed):
    """The known runs' cluster.json has no `groups` (made before groups existed): no per-group job, panel or file."""
    res = analysed.result("ro-run")
    assert res.per_group is None and res.group_per_second is None and res.run.broker_groups == []
    report = analysed.paths["ro-run"] / "report"
    assert sorted(p.name for p in report.iterdir()) == sorted([
        "index.html", "verdict.json", "junit.xml", "summary.json", "per_second.parquet",
        "outcomes_per_second.parquet", "outcome_counts.parquet", "per_phase.parquet", "metrics_per_second.parquet"])
    html = (report / "index.html").read_text()
    assert "Broker groups" not in html
    summary = json.loads((report / "summary.json").read_text())
    assert "broker_groups" not in summary and "per_group" not in summary


def test_the_slave_read_back_counts_per_group():
    """`not_on_slave` needs a slave of every group whose master was read back (the read-back names its nodes
    `broker-a/master`, `broker-a/slave`, ... with several groups)."""
    from analysis.loss import _every_slave, _role

    assert _role("broker-b/slave") == "slave" and _role("master") == "master"
    assert _every_slave(["master", "slave"]) and not _every_slave(["master"])
    assert _every_slave(["broker-a/master", "broker-a/slave", "broker-b/master", "broker-b/slave"])
    assert not _every_slave(["broker-a/master", "broker-a/slave", "broker-b/master"])

"""The sustainable-rate search (analysis/search.py, issue 27): each step's figures recomputed from the request rows of
crafted runs (tests/analysis/search_runs.py), within decided per bound, the sustainable rate (a value, 0.0 when no
run of `hold` steps is within, unknown in an interrupted run or a phase without search), the `sustainable_rate`
expectations, verdict.json, the run page's section and chart and the comparison page's table. One analysis of the
two runs for the whole module; the rules without Spark first."""
from __future__ import annotations

import base64
import json
import re

import pytest
from search_runs import FAST_MS, FAULTED, PROBE, PROBE_EXCEEDED, SLOW_MS, cut_search_run, search_run

from analysis.expectations import parse_expectations
from analysis.search import bounds_text, sentence, sustainable


def _steps(within: list[bool], achieved: list[float]) -> list[dict]:
    return [{"within": w, "achieved": a} for w, a in zip(within, achieved, strict=True)]


def test_sustainable_is_the_best_lowest_of_hold_steps_within():
    steps = _steps([True, True, False, True, True, True], [10, 20, 50, 40, 45, 30])
    assert sustainable(steps, 2, True)[0] == 40  # pairs within: (1, 2) -> 10, (4, 5) -> 40, (5, 6) -> 30
    assert sustainable(steps, 3, True)[0] == 30
    assert sustainable(steps, 1, True)[0] == 45  # step 3 achieved more, outside the bounds
    assert sustainable(steps, 4, True) == (0.0, "no 4 consecutive steps within bounds")
    assert sustainable(steps, 4, False)[0] is None
    assert sustainable(steps, 2, False)[0] == 40  # a window found before the run was cut still counts


def test_bounds_and_sentences():
    bounds = {"p99_ms": 200.0, "error_share": 0.01, "backlog": None, "lag_max": None}
    assert bounds_text(bounds) == "p99 <= 200 ms, errors <= 1 %"
    ph = {"sustainable_rate": 1840.0, "hold": 3, "bounds_text": bounds_text(bounds),
          "note": "the highest rate held for 3 consecutive steps within bounds"}
    assert sentence(ph) == "Highest rate held for 3 consecutive steps within p99 <= 200 ms, errors <= 1 %: 1,840 sends/s."
    assert sentence({**ph, "sustainable_rate": 0.0, "note": "no 3 consecutive steps within bounds"}) == (
        "No 3 consecutive steps within p99 <= 200 ms, errors <= 1 %: sustainable rate 0 sends/s.")
    assert sentence({**ph, "sustainable_rate": None, "note": "x"}) == "Sustainable rate unknown: x."


def test_expectation_takes_only_phase():
    [e] = parse_expectations([{"phase": "probe", "metric": "sustainable_rate", "min": 100}])
    assert e.filters == {"phase": "probe"}
    with pytest.raises(ValueError, match="key 'outcome' does not apply to metric sustainable_rate; its filters: phase"):
        parse_expectations([{"outcome": "SEND_OK", "metric": "sustainable_rate", "min": 1}])


def test_events_that_are_no_step_are_passed_over_and_bad_bounds_make_it_unknown():
    from types import SimpleNamespace

    from analysis.search import _phase_result, _phases

    def step(n, start, end, rate=10.0):
        return {"event": "search_step", "phase": "p", "step": n, "rate": rate, "start_ns": start, "end_ns": end}

    events = [step(1, 0, 10**9), step(True, 0, 10**9), step(2, "x", 10**9), step(3, 5, 5), step(4, 0, 2**63),
              step(5, 0, 10**9, rate="fast"), step(1, 0, 2 * 10**9), {"event": "search_step", "phase": 7}]
    ph = _phases(events)["p"]
    assert list(ph["steps"]) == [1] and ph["steps"][1]["end_ns"] == 2 * 10**9  # the last event of a step number
    run = SimpleNamespace(run_id="r", timeline=SimpleNamespace(completed=True))
    figs = {("r", "p", 1): {"rows": 20, "errors": 0, "p99": 5.0}}
    assert _phase_result(ph, figs, run, "p", None)["note"] == "phase 'p': no search_start event with its bounds and hold"
    ph["start"] = {"hold": 1, "bounds": {"p99_ms": "200ms"}}
    got = _phase_result(ph, figs, run, "p", None)
    assert (got["sustainable_rate"], got["note"]) == (None, "phase 'p': search_start bounds.p99_ms is not a number")
    ph["start"] = {"hold": 1, "bounds": {"p99_ms": 200}}
    got = _phase_result(ph, figs, run, "p", None)
    assert got["sustainable_rate"] == 10.0 and got["steps"][0]["backlog"] == 0  # 20 rows over 2 s at 10/s


@pytest.fixture(scope="module")
def searched(spark, tmp_path_factory):
    from analysis.job import analyze

    root = tmp_path_factory.mktemp("search")
    job = analyze([search_run(root), cut_search_run(root)], spark=spark, progress=False)
    return {r.run.run_id: r for r in job.results}, job.compare_dir


def _result(res, name):
    return next(r for r in res.verdict.results if r.expectation.label() == name)


@pytest.mark.spark
def test_steps_recomputed_from_the_rows(searched):
    results, _ = searched
    probe = results["search-run"].search["probe"]
    steps = probe["steps"]
    assert [s["step"] for s in steps] == list(range(1, len(PROBE) + 1))
    for s, (rate, rows, slow, errors, lag, live), exceeded in zip(steps, PROBE, PROBE_EXCEEDED, strict=True):
        assert (s["rate"], s["rows"], s["achieved"]) == (rate, rows, rows)
        assert s["p99_ms"] == (SLOW_MS if slow else FAST_MS)
        assert s["error_share"] == errors / rows
        assert s["backlog"] == rate - rows
        assert s["lag_max"] == lag
        assert s["exceeded"] == exceeded and s["within"] == (not exceeded)
        assert s["live_within"] is live
    assert probe["sustainable_rate"] == 36.0 and probe["hold"] == 2
    assert probe["live_sustainable_rate"] == 36.0
    faulted = results["search-run"].search["faulted"]
    assert [s["within"] for s in faulted["steps"]] == [not slow for _, _, slow, *_ in FAULTED]
    assert [s["lag_max"] for s in faulted["steps"]] == [None] * len(FAULTED)  # not bounded there: no matter
    assert (faulted["sustainable_rate"], faulted["note"]) == (0.0, "no 2 consecutive steps within bounds")
    cut = results["cut-search"].search["probe"]
    assert [s["rows"] for s in cut["steps"]] == [20, 0] and not any(s["within"] for s in cut["steps"])
    assert cut["steps"][1]["achieved"] == 0 and cut["steps"][1]["backlog"] == 40
    assert cut["sustainable_rate"] is None and "did not complete" in cut["note"]


@pytest.mark.spark
def test_sustainable_rate_expectations(searched):
    results, _ = searched
    res = results["search-run"]
    got = {r.name: (r.status, r.measured) for r in res.verdict.results}
    assert got == {"probe-rate": ("held", 36.0), "first-search": ("failed", 36.0),
                   "faulted-zero": ("held", 0.0), "healthy-none": ("unknown", None)}
    assert _result(res, "healthy-none").note == "phase 'healthy' has no search events"
    assert "no 2 consecutive steps within bounds" in _result(res, "faulted-zero").note
    cut = _result(results["cut-search"], "cut-rate")
    assert cut.status == "unknown" and "did not complete" in cut.note
    verdict = json.loads((res.run.layout.report / "verdict.json").read_text())
    assert verdict["search"]["probe"]["sustainable_rate"] == 36.0
    assert verdict["search"]["probe"]["bounds"] == {"p99_ms": 200.0, "error_share": 0.01, "backlog": 5,
                                                    "lag_max": 1000}
    assert [s["within"] for s in verdict["search"]["faulted"]["steps"]] == [True, False, True, False]
    cut_verdict = json.loads((results["cut-search"].run.layout.report / "verdict.json").read_text())
    assert cut_verdict["search"]["probe"]["sustainable_rate"] is None


@pytest.mark.spark
def test_report_pages_show_the_search(searched):
    results, compare_dir = searched
    page = (results["search-run"].run.layout.report / "index.html").read_text()
    assert '<h3 class="search" data-phase="probe">' in page and '<h3 class="search" data-phase="faulted">' in page
    assert ("Highest rate held for 2 consecutive steps within p99 &lt;= 200 ms, errors &lt;= 1 %, backlog &lt;= 5 "
            "sends, consumer lag &lt;= 1000: 36 sends/s.") in page
    assert "No 2 consecutive steps within p99 &lt;= 200 ms: sustainable rate 0 sends/s." in page
    charts = re.findall(r'alt="search in phase (\w+)[^"]*" src="data:image/png;base64,([^"]+)"', page)
    assert [p for p, _ in charts] == ["probe", "faulted"]
    assert all(base64.b64decode(data)[:8] == b"\x89PNG\r\n\x1a\n" for _, data in charts)
    table = page.split('<table class="search-steps" data-phase="probe">')[1].split("</table>")[0]
    assert table.count('<tr class="held">') == 5 and table.count('<tr class="failed">') == 4
    compare = (compare_dir / "index.html").read_text()
    section = compare.split('<table class="search-compare">')[1].split("</table>")[0]
    cells = dict(re.findall(r'<tr data-phase="(\w+)">(.*?)</tr>', section, re.S))
    assert re.search(r'data-run="search-run"[^>]*>36 /s', cells["probe"])
    assert re.search(r'data-run="cut-search"[^>]*>unknown', cells["probe"])
    assert re.search(r'data-run="search-run"[^>]*>0 /s', cells["faulted"])
    assert re.search(r'data-run="cut-search"[^>]*><span class="muted">no search', cells["faulted"])
    assert 'alt="sustainable rate per run"' in compare

"""The comparison page's per-phase table (analysis/compare_phases.py) against the runs' own rows: the incident run
and the interrupted run share `healthy` and `readonly`; `readonly` (where fault `ro` was applied) comes first, and
each run's outcome mix and nearest-rank p50/p99 there are those of its request part files, the sends started in the
fault's transitions counted apart. No Consumers section
when no run had consumers."""
from __future__ import annotations

import math
from html.parser import HTMLParser

import pyarrow.parquet as pq
import pytest
from known_runs import transition_of

pytestmark = pytest.mark.spark


class PhaseTable(HTMLParser):
    """The rows of `<table class="per-phase">`: (phase, run) -> the texts of the row's cells (phase cell left out)."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[tuple[str, str], list[str]] = {}
        self.order: list[tuple[str, str]] = []
        self._row: tuple[str, str] | None = None
        self._cells: list[str] = []
        self._in_table = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table":
            self._in_table = a.get("class") == "per-phase"
        elif tag == "tr" and self._in_table and "data-phase" in a:
            self._row, self._cells = (a["data-phase"], a["data-run"]), []
        elif tag == "td" and self._row is not None:
            self._cells.append("")
        elif tag == "br" and self._row is not None and self._cells:
            self._cells[-1] += "\n"

    def handle_endtag(self, tag):
        if tag == "tr" and self._row is not None:
            cells = self._cells[1:] if len(self._cells) == 9 else self._cells  # the first row of a phase has its name
            self.rows[self._row] = [x.strip() for x in cells]
            self.order.append(self._row)
            self._row = None
        elif tag == "table":
            self._in_table = False

    def handle_data(self, data):
        if self._row is not None and self._cells:
            self._cells[-1] += data


def raw_rows(run_dir):
    """The request rows of a run's readable part files (the interrupted run's truncated part is left out, as the
    job leaves it out)."""
    rows = []
    for part in sorted((run_dir / "requests").rglob("*.parquet")):
        try:
            rows += pq.read_table(part, columns=["phase", "outcome", "latency_ms", "service_ms",
                                                 "start_ns"]).to_pylist()
        except Exception:  # noqa: BLE001 - the truncated part
            continue
    return rows


def nearest_rank(values, q):
    v = sorted(values)
    return v[max(0, math.ceil(q * len(v)) - 1)]


def number(text):
    return float(text.replace(",", ""))


def test_per_phase_table_matches_the_runs_rows(analysed, tmp_path):
    from analysis.pages import render_compare_page

    results = [analysed.result("ro-run"), analysed.result("cut-run")]
    html = render_compare_page(results, tmp_path)
    assert html.index("<h2>Per phase</h2>") < html.index("<h2>Runs</h2>")
    table = PhaseTable()
    table.feed(html)
    assert table.order == [("readonly", "ro-run"), ("readonly", "cut-run"), ("healthy", "ro-run"),
                           ("healthy", "cut-run")]
    assert "fault ro" in html.split("<h2>Per phase</h2>")[1].split("</table>")[0]
    for run_id in ("ro-run", "cut-run"):
        rows = raw_rows(analysed.paths[run_id])
        answers = analysed.answers[run_id]
        for phase in ("readonly", "healthy"):
            mine = [r for r in rows if r["phase"] == phase and transition_of(answers, r["start_ns"]) is None]
            apart = sum(r["phase"] == phase for r in rows) - len(mine)  # started in the fault's transitions
            sends, mix, p50, p99, a50, a99, expectations = table.rows[(phase, run_id)][1:]
            assert sends.split("\n") == [f"{len(mine):,}"] + ([f"+{apart} in transitions"] if apart else [])
            assert apart == {("readonly", "ro-run"): 100, ("readonly", "cut-run"): 50}.get((phase, run_id), 0)
            counts: dict[str, int] = {}
            for r in mine:
                counts[r["outcome"]] = counts.get(r["outcome"], 0) + 1
            want = [f"{o} {100 * n / len(mine):.2f}%" for o, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
            assert mix.split("\n") == want, (run_id, phase)
            lat = [r["latency_ms"] for r in mine if r["latency_ms"] is not None]
            svc = [r["service_ms"] for r in mine if r["service_ms"] is not None]
            assert number(p50) == pytest.approx(nearest_rank(lat, 0.5), abs=1e-3)
            assert number(p99) == pytest.approx(nearest_rank(lat, 0.99), abs=1e-3)
            assert number(a50) == pytest.approx(nearest_rank(svc, 0.5), abs=1e-3)
            assert number(a99) == pytest.approx(nearest_rank(svc, 0.99), abs=1e-3)
            named = {line.split(":")[0] for line in expectations.split("\n") if line}
            res = analysed.result(run_id)
            want_names = {r.name for r in res.verdict.results
                          if r.expectation.phase == phase or (phase == "readonly" and r.expectation.fault == "ro")}
            assert named == want_names, (run_id, phase)
    assert "ok-during-ro: 0.164835 (min 0.9)" in table.rows[("readonly", "ro-run")][-1]


def test_no_consumers_section_when_no_run_had_consumers(analysed):
    html = (analysed.job.compare_dir / "index.html").read_text()
    assert "<h2>Consumers</h2>" not in html and "consumer lost" not in html
    assert "The runs share no phase." in html  # clean-run has other phases than the incident runs


def test_a_matrix_ends_with_its_comparison_page(analysed, tmp_path, capsys):
    """`rmq-chaos run` of a matrix calls `compare_runs` with its run directories at the end: the page is written
    beside them, named after the first, with the per-phase table; a run without a verdict is left out."""
    import shutil

    from harness.commands.run import compare_runs

    dirs = [tmp_path / name for name in ("ro-run", "cut-run")]
    for d in dirs:
        shutil.copytree(analysed.paths[d.name], d)
    no_verdict = tmp_path / "never-analysed"
    compare_runs([*dirs, no_verdict, None])
    page = tmp_path / "report-compare-ro-run" / "index.html"
    assert page.exists(), capsys.readouterr().err
    table = PhaseTable()
    table.feed(page.read_text())
    assert table.order[0] == ("readonly", "ro-run") and len(table.order) == 4
    assert f"comparison of the matrix: {page}" in capsys.readouterr().err

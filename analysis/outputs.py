"""Write what the job produced: per run `report/` (index.html, verdict.json, junit.xml, aggregates in Parquet and
JSON), and the comparison page of several runs.

Each output directory is built under a hidden temporary name beside it and renamed into place at the end, so a
failed job leaves the previous report (or nothing) and never a half-written one.
"""
from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from analysis import contract as c
from analysis.compute import RunResults
from analysis.junit import write_junit
from analysis.pages import render_compare_page, render_run_page
from analysis.per_group import per_group_table

COMPARE_DIR = "report-compare"
AGGREGATES = ("per_second", "outcomes_per_second", "outcome_counts", "metrics_per_second")
CONSUME_FILES = ("consume_per_second", "consume_per_phase", "consumer_lag_per_second")
"""Written only for a run with a consumer side (consumes/, metrics/lag/ or PAGECACHERT lines)."""
GROUP_FILES = ("per_group", "per_group_per_second")
"""Written only for a run with more than one broker group (analysis.per_group)."""


def _json(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, indent=2, default=str, allow_nan=False) + "\n", encoding="utf-8")


def replace_dir(dest: Path, fill: Callable[[Path], None]) -> Path:
    """Build a directory with `fill(tmp)` then put it at `dest` (replacing an older one) in two renames."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    stage = dest.parent / f".{dest.name}.tmp-{os.getpid()}"
    old = dest.parent / f".{dest.name}.old-{os.getpid()}"
    shutil.rmtree(stage, ignore_errors=True)
    stage.mkdir()
    try:
        fill(stage)
        if dest.exists():
            os.rename(dest, old)
        os.rename(stage, dest)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
        shutil.rmtree(old, ignore_errors=True)
    return dest


def summary(res: RunResults) -> dict[str, Any]:
    return {
        "run_id": res.run.run_id, "scenario": res.run.scenario_name, "run_status": res.run.timeline.status,
        "t0_ns": res.t0_ns, "rows": res.rows, "valid": res.verdict.valid, "phases": res.per_phase,
        "faults": res.faults, "loss": res.loss.to_json(), "warnings": res.warnings,
        "files": [f"{name}.parquet" for name in AGGREGATES] + ["per_phase.parquet", c.VERDICT_FILE, c.JUNIT_FILE]
        + ([f"{name}.parquet" for name in CONSUME_FILES] if res.consume is not None else [])
        + ([f"{name}.parquet" for name in GROUP_FILES] if res.per_group is not None else []),
        **({"consumers": res.consume.to_json()} if res.consume is not None else {}),
        **({"broker_groups": res.run.broker_groups, "per_group": res.per_group} if res.per_group is not None else {}),
    }


def write_run_report(res: RunResults, dest: Path | None = None) -> Path:
    """Write one run's report into `dest` (default `<run dir>/report/`)."""
    def fill(d: Path) -> None:
        for name in AGGREGATES:
            pq.write_table(getattr(res, name), d / f"{name}.parquet")
        pq.write_table(pa.Table.from_pylist(res.per_phase), d / "per_phase.parquet")
        if res.consume is not None:
            rc = res.consume
            lag = [{"group": g, **{k: p[k] for k in ("sec", "ts_ns", "phase", "lag", "committed")}}
                   for g, s in sorted(rc.lag.items()) for p in s.points]
            for name, table in zip(CONSUME_FILES, (rc.per_second, pa.Table.from_pylist(rc.per_phase),
                                                   pa.Table.from_pylist(lag)), strict=True):
                pq.write_table(table, d / f"{name}.parquet")
        if res.per_group is not None and res.group_per_second is not None:
            pq.write_table(per_group_table(res.per_group), d / "per_group.parquet")
            pq.write_table(res.group_per_second, d / "per_group_per_second.parquet")
        _json(d / "summary.json", summary(res))
        res.verdict.write(d / c.VERDICT_FILE)
        write_junit(res.verdict, d / c.JUNIT_FILE)
        (d / c.REPORT_INDEX).write_text(render_run_page(res), encoding="utf-8")

    return replace_dir(dest or res.run.layout.report, fill)


def default_compare_dir(results: Sequence[RunResults]) -> Path:
    """`report-compare/` in the deepest directory that holds every run directory."""
    parent = Path(os.path.commonpath([str(r.run.path.resolve().parent) for r in results]))
    return parent / COMPARE_DIR


def write_compare(results: Sequence[RunResults], dest: Path) -> Path:
    """The comparison page of several runs, with its table as JSON and Parquet."""
    def fill(d: Path) -> None:
        (d / c.REPORT_INDEX).write_text(render_compare_page(results, dest), encoding="utf-8")
        rows = [{"run_id": r.run.run_id, "scenario": r.run.scenario_name, "valid": str(r.verdict.valid),
                 "exit_code": r.verdict.exit_code, "run_status": r.run.timeline.status, "sends": r.rows,
                 **{f"loss_{k}": v for k, v in r.loss.counts.items()},
                 **{f"whole_{k}": v for p in r.per_phase if p["whole_run"] for k, v in p.items()
                    if k.startswith(("intended_", "actual_")) or k in ("rate", "ok_share")}}
                for r in results]
        pq.write_table(pa.Table.from_pylist(rows), d / "runs.parquet")
        _json(d / "runs.json", {"runs": rows, "verdicts": [r.verdict.to_json() for r in results]})

    return replace_dir(dest, fill)

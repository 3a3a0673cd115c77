"""A qualification check in one line: `assert_run_expectations(scenario)` runs the scenario as `rmq-chaos run` does
(`harness.runner.Runner`: cluster up, load, phases with faults, read-back, cluster down, the Spark analysis) and
raises an `AssertionError` naming every expectation that did not hold, with its measured value and its limit (from
the run's `report/verdict.json`), or why the run did not complete. Returns the verdict when every expectation held.

Example::

    verdict = assert_run_expectations("scenarios/slave-readonly-default.yaml", out="runs")
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness.qualify import isolate_for, load_one, new_run_id
from harness.scenario import Scenario

STATUS_WORD = {"failed": "FAILED", "unknown": "UNKNOWN (not measured)"}


def run_scenario(scenario: Scenario, out: str | Path, state_dir: str | Path | None = None) -> Any:
    """Run one scenario with its analysis; the `harness.runner.RunResult`. A run interrupted by Ctrl-C/SIGTERM (the
    wind-down done, as the CLI does it) raises KeyboardInterrupt afterwards, so the test session stops too."""
    from harness.runner import STATUS_INTERRUPTED, Runner

    isolate_for(scenario)
    result = Runner(scenario, out, state_dir=state_dir, run_id=new_run_id(scenario, "run")).run()
    if result.status == STATUS_INTERRUPTED:
        raise KeyboardInterrupt(f"{scenario.name}: run interrupted ({result.error}); {result.run_dir}")
    return result


def failure_lines(verdict: Mapping[str, Any]) -> list[str]:
    """One line per expectation of a verdict.json that did not hold: name, status, measured value, limit, note."""
    lines = []
    for e in verdict.get("expectations", []):
        if e.get("status") == "held":
            continue
        limit = " ".join(f"{k} {v:g}" if isinstance(v, int | float) else f"{k} {v}"
                         for k, v in (e.get("limit") or {}).items())
        filters = ", ".join(f"{k}={v}" for k, v in (e.get("filters") or {}).items())
        text = (f"{e['name']}: {STATUS_WORD.get(e.get('status'), e.get('status'))}: measured "
                f"{e.get('measured_text', e.get('measured'))} ({e.get('metric')}{'; ' + filters if filters else ''})"
                f", limit {limit or '-'}")
        lines.append(text + (f"; {e['note']}" if e.get("note") else ""))
    return lines


def read_verdict(run_dir: Path) -> dict[str, Any] | None:
    try:
        return json.loads((Path(run_dir) / "report" / "verdict.json").read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return None


def assert_run_expectations(source: str | Path | Mapping[str, Any] | Scenario, *, out: str | Path,
                            program: str | None = None, state_dir: str | Path | None = None,
                            base: Path | None = None) -> dict[str, Any]:
    """Run `source` (a scenario file, a dict of one, or a `Scenario`; `program` overrides `cluster.program`) and
    assert that every expectation held; the verdict (verdict.json) is returned. The AssertionError lists each
    expectation that failed or could not be measured, with its measured value, and the run directory."""
    __tracebackhide__ = True  # pytest shows the test's line, not this helper's
    scenario = load_one(source, program, base)
    result = run_scenario(scenario, out, state_dir)
    verdict = read_verdict(result.run_dir)
    if result.exit_code == 0 and verdict is not None:
        return verdict
    head = f"scenario {scenario.name}: run {result.status}"
    if result.error:
        head += f" ({result.error})"
    lines = failure_lines(verdict) if verdict else []
    if verdict is None:
        head += "; the analysis wrote no verdict"
    else:
        counts = verdict.get("counts", {})
        head += (f"; verdict {verdict.get('valid')}: {counts.get('failed', 0)} failed, {counts.get('unknown', 0)} "
                 f"unknown, {counts.get('held', 0)} held" + (f"; history incomplete: {verdict['incomplete']}"
                                                             if verdict.get("incomplete") else ""))
    body = "".join(f"\n  - {line}" for line in lines)
    raise AssertionError(f"{head}{body}\n  run directory: {result.run_dir}")

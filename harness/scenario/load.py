"""Reading a scenario file: YAML with line marks, matrix expansion, schema validation, then the checks that need
the rest of the system (fault kinds and their parameters, client profiles, the version-aware broker.conf lint).

Everything is checked for every run of the matrix before anything is started; the first problem is raised as one
`SourceError` line: `<file>:<line>: <key path>: <problem>; allowed: <values>`.

Example::

    runs = load_scenarios("scenarios/slave-readonly-default.yaml")   # list[Scenario]
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from harness.scenario.check import check_scenario
from harness.scenario.matrix import expand
from harness.scenario.model import Scenario
from harness.scenario.reader import Marks, SourceError, load_marked
from harness.scenario.schema import first_error

__all__ = ["SourceError", "load_scenarios", "load_scenario_text"]
MAX_MATRIX_VALUES = 500_000
"""Runs of a matrix times the values of the file: the work of expanding and checking every run is bounded by it."""


def load_scenarios(path: str | Path) -> list[Scenario]:
    """Every run a scenario file describes, fully validated."""
    return load_scenario_text(path, None)


def load_scenario_text(path: str | Path, text: str | None) -> list[Scenario]:
    """As `load_scenarios`, with the file's text given (`path` then only names it in messages)."""
    data, marks = load_marked(path, text)
    if not isinstance(data, dict):
        raise marks.error((), f"a scenario is a mapping of keys to values, got {type(data).__name__}")
    _check_matrix_work(data, marks)
    runs = []
    for combo in expand(data, marks):
        try:
            scenario = Scenario.model_validate(combo.data)
        except ValidationError as err:
            raise first_error(err, combo.marks) from None
        scenario.variant = combo.variant
        _resolve_inventory(scenario, Path(path))
        _check_finite(scenario, combo.marks)
        check_scenario(scenario, combo.marks)
        runs.append(scenario)
    return runs


def _resolve_inventory(scenario: Scenario, source: Path) -> None:
    """An inventory file named relative to the scenario file is found beside it."""
    hosts = scenario.cluster.hosts
    if isinstance(hosts, str) and not Path(hosts).is_absolute():
        scenario.cluster.hosts = str((source.resolve().parent / hosts).resolve())


def _check_finite(scenario: Scenario, marks: Marks) -> None:
    """A number written as text (`min: "1e400"`) may validate to infinity or NaN: refuse it at its key."""
    stack: list[tuple[tuple[str | int, ...], Any]] = [((), scenario.model_dump(mode="python"))]
    while stack:
        path, value = stack.pop()
        if isinstance(value, float) and not math.isfinite(value):
            if path[:1] == ("phases",) and len(path) > 1 and isinstance(path[1], int):
                path = ("phases", scenario.source_phase(path[1]), *path[2:])
            raise marks.error(path, f"{value} is not a finite number; allowed: finite numbers")
        if isinstance(value, dict):
            stack += [(path + (k,), v) for k, v in value.items()]
        elif isinstance(value, list):
            stack += [(path + (i,), v) for i, v in enumerate(value)]


def _check_matrix_work(data: dict[str, Any], marks: Marks) -> None:
    """Refuse, before expanding anything, a matrix whose runs would copy and check too many values in all."""
    matrix = data.get("matrix")
    if not isinstance(matrix, dict):
        return
    runs = math.prod(len(v) if isinstance(v, list) and v else 1 for v in matrix.values())
    values = max(len(marks.lines), 1)
    if runs * values > MAX_MATRIX_VALUES:
        raise marks.error(("matrix",), f"{runs} runs of {values} values each is more than {MAX_MATRIX_VALUES} "
                                       "values to expand and check; allowed: fewer runs or a smaller file")

"""Reading a scenario file: YAML with line marks, matrix expansion, schema validation, then the checks that need
the rest of the system (fault kinds and their parameters, client profiles, the version-aware broker.conf lint).

Everything is checked for every run of the matrix before anything is started; the first problem is raised as one
`SourceError` line: `<file>:<line>: <key path>: <problem>; allowed: <values>`.

Example::

    runs = load_scenarios("scenarios/slave-readonly-default.yaml")   # list[Scenario]
"""
from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from harness.matrix import expand
from harness.scenario import Scenario
from harness.scenariocheck import check_scenario
from harness.schemabase import first_error
from harness.yamlsource import SourceError, load_marked

__all__ = ["SourceError", "load_scenarios", "load_scenario_text"]


def load_scenarios(path: str | Path) -> list[Scenario]:
    """Every run a scenario file describes, fully validated."""
    return load_scenario_text(path, None)


def load_scenario_text(path: str | Path, text: str | None) -> list[Scenario]:
    """As `load_scenarios`, with the file's text given (`path` then only names it in messages)."""
    data, marks = load_marked(path, text)
    if not isinstance(data, dict):
        raise marks.error((), f"a scenario is a mapping of keys to values, got {type(data).__name__}")
    runs = []
    for combo in expand(data, marks):
        try:
            scenario = Scenario.model_validate(combo.data)
        except ValidationError as err:
            raise first_error(err, combo.marks) from None
        scenario.variant = combo.variant
        check_scenario(scenario, combo.marks)
        runs.append(scenario)
    return runs

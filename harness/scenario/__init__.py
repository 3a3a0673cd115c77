"""Scenario files: reading, checking, linting and expanding them into the runs the harness executes.

Example::

    from harness.scenario import SourceError, load_scenarios

    runs = load_scenarios("scenarios/slave-readonly-default.yaml")   # list[Scenario], one per run of a matrix

The modules, in the order a file goes through them:

- `reader`: the YAML reader. Line-numbered values and one-line `SourceError`s (`<file>:<line>: <key path>:
  <problem>`). It is built on `analysis.boundedyaml` (bounded work: size, depth, alias expansion, tags, numbers),
  which stays in `analysis` because the report reads a run directory's `scenario.yaml` with the same limits and
  the analysis imports nothing of ours. `reader` is the only module of `harness` that imports `boundedyaml`.
- `matrix`: a `matrix:` expanded into one document per run.
- `units`, `schema`: durations and sizes with their units; the strict pydantic base and pydantic's errors as one
  line.
- `model` (the top level, `Scenario`), `cluster`, `workload`, `phases`: the sections of the schema.
- `check`: what the rest of the system must accept (fault kinds and parameters, client profiles, the load spec,
  store sizes); `lint`: broker.conf keys and values against the chosen version's known keys.
- `load`: all of the above for one file, every run of its matrix checked before anything starts.

The names below are imported on first use (PEP 562): `harness.consumergroups` defines the `consumers:` section on
top of `schema`, and `model` embeds it, so importing every module here at once would make an import cycle for a
caller that imports `harness.consumergroups` first.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.scenario.cluster import BROKER_NODES, ClusterSpec
    from harness.scenario.lint import conf_text, effective_differences
    from harness.scenario.load import load_scenario_text, load_scenarios
    from harness.scenario.model import Scenario
    from harness.scenario.phases import FaultSpec
    from harness.scenario.reader import SourceError
    from harness.scenario.schema import Duration, Strict, at, problem_text
    from harness.scenario.units import format_duration, format_size, parse_duration, parse_size

MODULE_OF = {
    "BROKER_NODES": "cluster", "ClusterSpec": "cluster",
    "conf_text": "lint", "effective_differences": "lint",
    "load_scenario_text": "load", "load_scenarios": "load",
    "Scenario": "model",
    "FaultSpec": "phases",
    "SourceError": "reader",
    "Duration": "schema", "Strict": "schema", "at": "schema", "problem_text": "schema",
    "format_duration": "units", "format_size": "units", "parse_duration": "units", "parse_size": "units",
}
"""Each public name and the module of this package that defines it."""

__all__ = [
    "BROKER_NODES", "ClusterSpec", "Duration", "FaultSpec", "Scenario", "SourceError", "Strict", "at", "conf_text",
    "effective_differences", "format_duration", "format_size", "load_scenario_text", "load_scenarios",
    "parse_duration", "parse_size", "problem_text",
]


def __getattr__(name: str) -> Any:
    module = MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value

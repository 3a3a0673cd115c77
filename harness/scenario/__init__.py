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

- `consumers`: the `consumers:` section (groups, consumer fault targets); `loadplan`: the `load:` section as the
  load generator's `LoadSpec`.

Modules of the package import each other by module, never through this `__init__`, so importing any of them first
makes no cycle.
"""
from __future__ import annotations

from harness.scenario.cluster import BROKER_NODES, ClusterSpec
from harness.scenario.consumers import GROUP_TARGET_PREFIX
from harness.scenario.lint import conf_text, effective_differences
from harness.scenario.load import load_scenario_text, load_scenarios
from harness.scenario.loadplan import load_spec, load_spec_data
from harness.scenario.model import Scenario
from harness.scenario.phases import FaultSpec
from harness.scenario.reader import SourceError
from harness.scenario.schema import Duration, Strict, at, problem_text
from harness.scenario.units import format_duration, format_size, parse_duration, parse_size

__all__ = [
    "BROKER_NODES", "GROUP_TARGET_PREFIX", "ClusterSpec", "Duration", "FaultSpec", "Scenario", "SourceError", "Strict",
    "at", "conf_text", "effective_differences", "format_duration", "format_size", "load_scenario_text",
    "load_scenarios", "load_spec", "load_spec_data", "parse_duration", "parse_size", "problem_text",
]

"""Reading an explore file: the YAML (with line marks, through the scenario reader), the schema (`spec`), the
scenario it refers to (with `override:` merged in) and the fault space against that scenario's cluster: every
target must be one its nodes have, and each (kind, target) with the parameters at both ends of their ranges must be
a scenario the scenario schema takes (fault kind, parameters, which nodes a fault can act on). Every problem is one
`SourceError` line naming the explore file, the line, the key and the allowed values; nothing is made on disk.

Example::

    exploration = load_exploration("scenarios/explore/controller-5.1.4.yaml")
"""
from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from harness.explore.invariants import expectations
from harness.explore.schedule import DrawnFault, Schedule, Window, scenario_data, to_scenario
from harness.explore.spec import ExploreFile, Space, is_range
from harness.scenario import Scenario, SourceError
from harness.scenario.reader import Marks, load_marked
from harness.scenario.schema import first_error


@dataclass
class Exploration:
    source: Path
    name: str
    description: str
    space: Space
    base: dict[str, Any]
    """the referred scenario's data with the override merged in (its phases and expect are replaced per run)"""
    scenario_path: Path
    consumer_groups: list[str]
    targets: list[str]
    override: dict[str, Any]

    def data(self, schedule: Schedule, name: str, expect: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        """The scenario file's data of `schedule` (every invariant unless `expect` is given)."""
        inv = expectations(self.space, self.consumer_groups) if expect is None else expect
        return scenario_data(self.base, name, self.description or f"explored from {self.source.name}", schedule, inv)

    def scenario(self, schedule: Schedule, name: str) -> Scenario:
        return to_scenario(f"{self.source} (schedule {name})", self.data(schedule, name))


def load_exploration(path: str | Path) -> Exploration:
    source = Path(path)
    data, marks = load_marked(source)
    if not isinstance(data, dict):
        raise marks.error((), f"an explore file is a mapping of keys to values, got {type(data).__name__}")
    try:
        spec = ExploreFile.model_validate(data)
    except ValidationError as err:
        raise first_error(err, marks) from None
    scenario_path = (source.resolve().parent / spec.scenario).resolve()
    base, _ = _base(scenario_path, marks, spec.override)
    name = spec.name or source.stem
    ex = Exploration(source, name, spec.description, spec.explore, base, scenario_path, [], [], spec.override)
    probe = _probe(ex, marks)
    ex.consumer_groups = [g.name for g in probe.consumers.groups]
    if spec.explore.cluster == "reuse" and ex.consumer_groups:
        raise marks.error(("explore", "cluster"), "reuse: the scenario has consumer groups, whose committed offsets "
                                                  "would carry over from one run to the next; allowed: restart")
    ex.targets = _targets(probe)
    _check_space(ex, marks)
    return ex


def _base(path: Path, marks: Marks, override: Mapping[str, Any]) -> tuple[dict[str, Any], Marks]:
    if not path.is_file():
        raise marks.error(("scenario",), f"{path}: no such scenario file; allowed: a scenario file's path relative "
                                         "to this file")
    data, base_marks = load_marked(path)
    if not isinstance(data, dict):
        raise base_marks.error((), "a scenario is a mapping of keys to values")
    if "matrix" in data:
        raise marks.error(("scenario",), f"{path.name} has a matrix; allowed: a scenario of one run (explore one "
                                         "combination: put its values in override)")
    return merged(data, override), base_marks


def merged(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """`override` merged into `base`: mappings key by key, anything else replaced."""
    out = copy.deepcopy(dict(base))
    for k, v in override.items():
        out[k] = merged(out[k], v) if isinstance(v, Mapping) and isinstance(out.get(k), Mapping) else copy.deepcopy(v)
    return out


def _probe(ex: Exploration, marks: Marks) -> Scenario:
    """The referred scenario with one quiet window: its own sections must validate (with the override)."""
    quiet = Schedule((Window(ex.space.lead.min, ex.space.duration.min, ()),), ex.space.after)
    try:
        return to_scenario(f"{ex.scenario_path} (with {ex.source.name}'s override)", ex.data(quiet, "probe"))
    except SourceError as err:
        path = tuple(err.path)
        if path[:1] == ("expect",):
            raise marks.error(_expect_path(ex, path), err.problem) from None
        if path[:1] and path[0] in ex.override:
            raise marks.error(("override", *path), err.one_line()) from None
        raise marks.error(("scenario",), err.one_line()) from None


def _expect_path(ex: Exploration, path: tuple[str | int, ...]) -> tuple[str | int, ...]:
    """An error about the generated scenario's expectation i, placed at the file's own `explore.expect`."""
    builtin = len(expectations(ex.space, ex.consumer_groups)) - len(ex.space.expect)
    i = path[1] if len(path) > 1 and isinstance(path[1], int) else builtin
    return ("explore", "expect", max(0, i - builtin), *path[2:])


def _targets(scenario: Scenario) -> list[str]:
    from harness.scenario.controller_keys import CONTROLLER_LEADER
    from harness.topology import Topology

    out = Topology.of(scenario.cluster).targets()
    if scenario.cluster.mode == "controller" and scenario.cluster.controllers == 3:
        out.append(CONTROLLER_LEADER)
    for g in scenario.consumers.groups:
        out += [f"consumer:{g.name}", *(g.worker(i) for i in range(g.consumers))]
    return out


def _check_space(ex: Exploration, marks: Marks) -> None:
    """Each target is a node's; each (kind, target) at the low and the high end of its ranges is a valid scenario.
    Expectations of the file are checked against the phases every schedule has (`steady`, `after`)."""
    for ci, choice in enumerate(ex.space.faults):
        for ti, target in enumerate(choice.targets):
            if target not in ex.targets:
                raise marks.error(("explore", "faults", ci, "targets", ti),
                                  f"{target!r} is not a target of this cluster; allowed: {', '.join(ex.targets)}")
            for end in ("min", "max"):
                params = {k: (v[end] if is_range(v) else v[0] if isinstance(v, list) else v)
                          for k, v in choice.params.items()}
                window = Window(ex.space.lead.min, ex.space.duration.min, (DrawnFault(choice.kind, target, params, ci),))
                try:
                    to_scenario("probe", ex.data(Schedule((window,), ex.space.after), "probe"))
                except SourceError as err:
                    raise marks.error(_where(ex, err, ci, ti), err.problem) from None


def _where(ex: Exploration, err: SourceError, ci: int, ti: int) -> tuple[str | int, ...]:
    path = tuple(err.path)
    if path[:1] == ("expect",):
        return _expect_path(ex, path)
    if path[:1] == ("phases",) and "faults" in path:
        rest = path[path.index("faults") + 2:]
        if rest[:1] == ("params",):
            return ("explore", "faults", ci, *rest)
        if rest[:1] == ("kind",):
            return ("explore", "faults", ci, "kind")
        return ("explore", "faults", ci, "targets", ti)
    return ("explore",)


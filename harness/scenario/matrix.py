"""`matrix:` in a scenario file: one file, several runs.

Each axis is either a dotted key path into the scenario with a list of values::

    matrix:
      cluster.version: ["4.9.1", "4.9.3", "5.3.0"]
      cluster.broker.master.haSlaveFallbehindMax: [268435456, 1048576]

or a named axis whose items each set several paths at once (for example a version and the expectations that
encode what that version does)::

    matrix:
      fault:
        - {name: readonly, set: {phases.outage.faults.0.kind: readonly_fs}}
        - {name: frozen, set: {phases.outage.faults.0.kind: disk_freeze}}

In a path, a list is indexed by number or by the `name` (phases, clients) or `id` (faults) of an item. Every
combination of the axes is one run named `<name>.<axis>=<value>...`; its `variant` records the axes and values.
"""
from __future__ import annotations

import copy
import itertools
import re
from dataclasses import dataclass
from typing import Any

from harness.scenario.model import Scenario
from harness.scenario.reader import Marks

MAX_RUNS = 256
LABEL_RE = re.compile(r"[^A-Za-z0-9_.-]+")
ITEM_KEYS = ("name", "id")


@dataclass
class Combination:
    """One run of a matrix: its data, the marks that place its values in the file, and its axes' labels."""

    data: dict[str, Any]
    marks: Marks
    variant: dict[str, str]


def expand(data: dict[str, Any], marks: Marks) -> list[Combination]:
    """The runs of a scenario document (one when it has no `matrix`). Raises `SourceError` for a bad matrix."""
    matrix = data.get("matrix")
    base = {k: v for k, v in data.items() if k != "matrix"}
    if matrix is None:
        return [Combination(base, marks, {})]
    if not isinstance(matrix, dict) or not matrix:
        raise marks.error(("matrix",), "expected a mapping of axes to lists of values")
    axes: list[list[tuple[str, list[tuple[tuple[str, ...], Any, tuple[Any, ...]]]]]] = []
    for axis, values in matrix.items():
        where = ("matrix", axis)
        if not isinstance(values, list) or not values:
            raise marks.error(where, "an axis is a non-empty list of values")
        top = str(axis).split(".")[0]
        if top in base or top in _top_keys():
            axes.append([(_label(v), [(tuple(str(axis).split(".")), v, where + (i,))]) for i, v in enumerate(values)])
        else:
            axes.append([_variant_item(v, where + (i,), marks) for i, v in enumerate(values)])
    combos = list(itertools.product(*axes))
    if len(combos) > MAX_RUNS:
        raise marks.error(("matrix",), f"{len(combos)} combinations; allowed: at most {MAX_RUNS}")
    out = []
    for combo in combos:
        doc = copy.deepcopy(base)
        m = Marks(marks.source, dict(marks.lines))
        variant: dict[str, str] = {}
        for axis, (label, sets) in zip(matrix, combo, strict=True):
            variant[str(axis)] = label
            for path, value, where in sets:
                real = _set(doc, path, copy.deepcopy(value), marks, where)
                m.graft(real, marks, where)
        labels = ".".join(f"{a.split('.')[-1]}={v}" for a, v in variant.items())
        doc["name"] = f"{doc.get('name', 'scenario')}.{labels}"
        m.lines[("name",)] = marks.lines.get(("name",), 1)
        out.append(Combination(doc, m, variant))
    names = [c.data["name"] for c in out]
    for i, n in enumerate(names):
        if names.index(n) != i:
            raise marks.error(("matrix",), f"two combinations are both named {n!r}; give axis items distinct names")
    return out


def _top_keys() -> tuple[str, ...]:
    return tuple(Scenario.model_fields)


def _label(value: Any) -> str:
    text = value if isinstance(value, str) else repr(value).lower() if isinstance(value, bool) else str(value)
    return LABEL_RE.sub("_", text)[:40] or "_"


def _variant_item(item: Any, where: tuple[Any, ...], marks: Marks) -> tuple[str, list]:
    if not isinstance(item, dict) or set(item) - {"name", "set"} or "set" not in item or "name" not in item:
        raise marks.error(where, "an item of a named axis is {name: <label>, set: {<dotted.path>: <value>, ...}}; "
                                 "an axis that is a path must start with a scenario key; allowed: "
                                 + ", ".join(_top_keys()))
    if not isinstance(item["set"], dict):
        raise marks.error(where + ("set",), "expected a mapping of dotted key paths to values")
    sets = [(tuple(str(k).split(".")), v, where + ("set", k)) for k, v in item["set"].items()]
    return _label(item["name"]), sets


def _set(doc: dict[str, Any], path: tuple[str, ...], value: Any, marks: Marks,
         where: tuple[Any, ...]) -> tuple[str | int, ...]:
    """Set `value` at `path` in `doc`, creating missing mappings; returns the path with list items as indexes."""
    node: Any = doc
    real: list[str | int] = []
    for depth, seg in enumerate(path):
        last = depth == len(path) - 1
        if isinstance(node, list):
            idx = _index(node, seg)
            if idx is None:
                named = [str(it.get(k)) for it in node if isinstance(it, dict) for k in ITEM_KEYS if it.get(k)]
                raise marks.error(where, f"path {'.'.join(path)}: no item {seg!r} in the list at "
                                         f"{'.'.join(map(str, real)) or 'top'}; allowed: "
                                         f"0..{len(node) - 1}{', ' if named else ''}{', '.join(named)}")
            real.append(idx)
            if last:
                node[idx] = value
            else:
                node = node[idx]
        elif isinstance(node, dict):
            real.append(seg)
            if last:
                node[seg] = value
            else:
                node = node.setdefault(seg, {})
        else:
            raise marks.error(where, f"path {'.'.join(path)}: {'.'.join(map(str, real))} is a value, not a mapping")
    return tuple(real)


def _index(items: list[Any], seg: str) -> int | None:
    if seg.isdigit():
        return int(seg) if int(seg) < len(items) else None
    for i, it in enumerate(items):
        if isinstance(it, dict) and any(it.get(k) == seg for k in ITEM_KEYS):
            return i
    for i, it in enumerate(items):  # faults without an id are found by their kind
        if isinstance(it, dict) and it.get("kind") == seg:
            return i
    return None

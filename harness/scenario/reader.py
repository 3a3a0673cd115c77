"""YAML files that remember where every value was written, so errors can name the file and the line.

`load_marked(path)` returns the data (plain dicts, lists and scalars, as `yaml.safe_load` would) and a `Marks`
table from key paths (`("phases", 1, "faults", 0, "kind")`) to 1-based line numbers. Duplicate keys in one mapping,
which PyYAML would silently collapse to the last one, are refused.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from analysis.boundedyaml import YamlLimit, compose_bounded, read_capped

Path_ = tuple[str | int, ...]
MAX_LINE = 1000
"""An error line is cut to this many characters (values quoted in it may be long)."""
SHOW_CHARS = 80
"""A value quoted in a message is cut to this many characters (a giant value would drown the line)."""


class SourceError(ValueError):
    """One-line error about a place in a source file: `<file>:<line>: <key path>: <problem>`."""

    def __init__(self, source: str, line: int | None, path: Sequence[str | int], problem: str) -> None:
        self.source = source
        self.line = line
        self.path = tuple(path)
        self.problem = problem
        super().__init__(self.one_line())

    def one_line(self) -> str:
        where = f"{self.source}:{self.line}" if self.line else self.source
        key = format_path(self.path)
        text = f"{where}: {key}: {self.problem}" if key else f"{where}: {self.problem}"
        return shorten(" ".join(text.split()), MAX_LINE)


def shorten(text: str, limit: int = SHOW_CHARS) -> str:
    """`text` cut to `limit` characters, with how much was left out."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def format_path(path: Sequence[str | int]) -> str:
    """`phases[1].faults[0].kind` for `("phases", 1, "faults", 0, "kind")`."""
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


@dataclass
class Marks:
    """Line numbers of the values of a YAML document by key path, and the file's name for messages."""

    source: str
    lines: dict[Path_, int] = field(default_factory=dict)

    def line_of(self, path: Sequence[str | int]) -> int | None:
        """The line of the deepest prefix of `path` that was written in the file."""
        p = tuple(path)
        while p:
            if p in self.lines:
                return self.lines[p]
            p = p[:-1]
        return self.lines.get((), None)

    def error(self, path: Sequence[str | int], problem: str) -> SourceError:
        return SourceError(self.source, self.line_of(path), path, problem)

    def graft(self, at: Sequence[str | int], other: Marks, under: Sequence[str | int]) -> None:
        """Make the subtree `at` point at the lines of `other`'s subtree `under` (for values set by a matrix)."""
        at, under = tuple(at), tuple(under)
        for p in [p for p in self.lines if p[: len(at)] == at]:
            del self.lines[p]
        for p, line in other.lines.items():
            if p[: len(under)] == under:
                self.lines[at + p[len(under):]] = line


def load_marked(path: str | Path, text: str | None = None) -> tuple[Any, Marks]:
    """Parse one YAML document with bounded work (`analysis.boundedyaml`: size, depth, alias expansion, tags,
    numbers). Raises `SourceError` for unreadable or oversized files, syntax errors, duplicate keys and values
    past those limits."""
    source = str(path)
    try:
        if text is None:
            text = read_capped(path)
        node, loader = compose_bounded(text)
    except YamlLimit as err:
        raise SourceError(source, err.line, err.path, err.problem) from None
    except yaml.MarkedYAMLError as err:
        raise _syntax_error(source, err) from None
    except yaml.YAMLError as err:
        raise SourceError(source, None, (), f"YAML error: {err}") from None
    try:
        if node is None:
            raise SourceError(source, 1, (), "the file is empty; a scenario is a mapping with at least a name")
        marks = Marks(source)
        _check_duplicates(node, (), marks)
        data = loader.construct_document(node)
        _collect(node, (), marks)
    except yaml.MarkedYAMLError as err:
        raise _syntax_error(source, err) from None
    except yaml.YAMLError as err:
        raise SourceError(source, None, (), f"YAML error: {err}") from None
    finally:
        loader.dispose()
    return data, marks


def _syntax_error(source: str, err: yaml.MarkedYAMLError) -> SourceError:
    mark = err.problem_mark or err.context_mark
    line = mark.line + 1 if mark else None
    problem = " ".join(str(x) for x in (err.context, err.problem) if x)
    return SourceError(source, line, (), f"YAML syntax error: {problem}")


def _check_duplicates(node: yaml.Node, path: Path_, marks: Marks) -> None:
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for k, v in node.value:
            if isinstance(k, yaml.ScalarNode) and k.value != "<<":
                line = k.start_mark.line + 1
                if k.value in seen:
                    raise SourceError(marks.source, line, path + (k.value,),
                                      f"duplicate key (first written on line {seen[k.value]})")
                seen[k.value] = line
                _check_duplicates(v, path + (k.value,), marks)
    elif isinstance(node, yaml.SequenceNode):
        for i, v in enumerate(node.value):
            _check_duplicates(v, path + (i,), marks)


def _collect(node: yaml.Node, path: Path_, marks: Marks) -> None:
    marks.lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            if isinstance(k, yaml.ScalarNode):
                key = path + (k.value,)
                marks.lines[key] = k.start_mark.line + 1
                _collect(v, key, marks)
    elif isinstance(node, yaml.SequenceNode):
        for i, v in enumerate(node.value):
            _collect(v, path + (i,), marks)

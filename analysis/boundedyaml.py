"""YAML with bounded work: the files the CLI reads (scenario files, a run's `scenario.yaml`) come from people and
from crashed runs, so a crafted or damaged file must be refused quickly instead of hanging or crashing the reader.

Limits checked before anything is built from the file: its size (`MAX_BYTES`, read with a cap, regular files
only), nesting depth (`MAX_DEPTH`, checked while composing, so a deep file never reaches Python's recursion limit),
the number of nodes once aliases are expanded (`MAX_NODES`: a "billion laughs" file is refused after counting its
few distinct nodes), aliases to a node that contains them, YAML tags outside plain data, numbers too long to be
meant (`MAX_NUMBER_CHARS`) and numbers that are not finite. Standard library and PyYAML only (the harness and the
analysis both use it).

Example::

    node, loader = compose_bounded(read_capped("scenario.yaml"))   # raises YamlLimit(line, problem)
"""
from __future__ import annotations

import math
import os
import stat
from pathlib import Path
from typing import Any

import yaml

MAX_BYTES = 256 * 1024
MAX_DEPTH = 48
MAX_NODES = 20_000
MAX_SCALAR_CHARS = 64 * 1024
MAX_NUMBER_CHARS = 40
PLAIN_TAGS = {f"tag:yaml.org,2002:{t}" for t in ("str", "int", "float", "bool", "null", "map", "seq", "merge")}
PLAIN_ALLOWED = "strings, numbers, true/false, null, lists and mappings"


class YamlLimit(ValueError):
    """A file the bounded reader refuses: `line` (1-based, or None), the key `path` of the value when known, and a
    one-line `problem`."""

    def __init__(self, line: int | None, problem: str, path: tuple[str | int, ...] = ()) -> None:
        self.line = line
        self.path = path
        self.problem = " ".join(problem.split())
        super().__init__(self.problem)


def read_capped(path: str | os.PathLike[str], limit: int = MAX_BYTES) -> str:
    """The UTF-8 text of a regular file of at most `limit` bytes. Raises `YamlLimit` (no line) otherwise; a FIFO or
    device is never opened for reading (it could block or never end)."""
    p = Path(path)
    try:
        st = p.stat()
    except OSError as err:
        raise YamlLimit(None, f"cannot read the file: {err.strerror or err}") from None
    if not stat.S_ISREG(st.st_mode):
        raise YamlLimit(None, "not a regular file; allowed: a YAML file")
    try:
        with open(p, "rb") as f:
            data = f.read(limit + 1)
    except OSError as err:
        raise YamlLimit(None, f"cannot read the file: {err.strerror or err}") from None
    if len(data) > limit:
        raise YamlLimit(None, f"the file is larger than {limit // 1024} KiB; allowed: at most {limit // 1024} KiB")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise YamlLimit(line, f"not UTF-8 text (byte {data[err.start]:#04x} at offset {err.start}: {err.reason})") \
            from None


class BoundedLoader(yaml.SafeLoader):
    """SafeLoader whose composer refuses nesting deeper than `MAX_DEPTH` before recursing further."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._count = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        self._depth += 1
        self._count += 1
        try:
            mark = self.peek_event().start_mark
            if self._depth > MAX_DEPTH:
                raise YamlLimit(mark.line + 1, f"nested deeper than {MAX_DEPTH} levels; allowed: at most {MAX_DEPTH}")
            if self._count > MAX_NODES:
                raise YamlLimit(mark.line + 1, f"more than {MAX_NODES} values; allowed: at most {MAX_NODES}")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def open_loader(text: str) -> BoundedLoader:
    """A loader over `text`; control characters the YAML reader refuses raise `YamlLimit` naming line and code."""
    if len(text) > MAX_BYTES:
        raise YamlLimit(None, f"the text is longer than {MAX_BYTES // 1024} KiB")
    try:
        return BoundedLoader(text)
    except yaml.reader.ReaderError as err:
        line = text[: err.position].count("\n") + 1
        char = err.character if isinstance(err.character, int) else ord(err.character)
        raise YamlLimit(line, f"control character #x{char:04x} is not allowed in YAML; allowed: printable "
                              "characters, newlines and tabs") from None


def compose_bounded(text: str) -> tuple[yaml.Node | None, BoundedLoader]:
    """The node graph of one document, checked by `check_node`. The caller disposes of the loader."""
    loader = open_loader(text)
    try:
        node = loader.get_single_node()
    except yaml.reader.ReaderError as err:
        loader.dispose()
        line = text[: err.position].count("\n") + 1
        raise YamlLimit(line, f"character not allowed in YAML ({err.reason})") from None
    except BaseException:
        loader.dispose()
        raise
    if node is not None:
        check_node(node, loader)
    return node, loader


def check_node(root: yaml.Node, loader: yaml.SafeLoader) -> None:
    """Refuse alias cycles, an expansion past `MAX_NODES`, tags outside plain data and unmeant numbers; the work
    is linear in the distinct nodes (an alias's expansion is counted once and reused)."""
    sizes: dict[int, int] = {}
    stack: list[tuple[yaml.Node, bool, tuple[str | int, ...]]] = [(root, False, ())]
    active: set[int] = set()
    while stack:
        node, done, path = stack.pop()
        key = id(node)
        if done:
            active.discard(key)
            sizes[key] = 1 + sum(sizes[id(c)] for c, _ in _children(node, path))
            if sizes[key] > MAX_NODES:
                raise YamlLimit(node.start_mark.line + 1, f"more than {MAX_NODES} values once aliases are expanded "
                                                          f"(an alias bomb?); allowed: at most {MAX_NODES}", path)
            continue
        if key in sizes:
            continue
        if key in active:
            raise YamlLimit(node.start_mark.line + 1, "an alias refers to a node that contains it (a cycle); "
                                                      "allowed: aliases to nodes outside themselves", path)
        _check_scalar(node, loader, path)
        active.add(key)
        stack.append((node, True, path))
        stack.extend((c, False, p) for c, p in _children(node, path) if id(c) not in sizes)


def _children(node: yaml.Node, path: tuple[str | int, ...]) -> list[tuple[yaml.Node, tuple[str | int, ...]]]:
    if isinstance(node, yaml.MappingNode):
        out = []
        for k, v in node.value:
            name = k.value if isinstance(k, yaml.ScalarNode) else "?"
            out += [(k, path), (v, path + (name,))]
        return out
    if isinstance(node, yaml.SequenceNode):
        return [(v, path + (i,)) for i, v in enumerate(node.value)]
    return []


def _check_scalar(node: yaml.Node, loader: yaml.SafeLoader, path: tuple[str | int, ...]) -> None:
    line = node.start_mark.line + 1
    if node.tag not in PLAIN_TAGS:
        raise YamlLimit(line, f"YAML tag {node.tag.replace('tag:yaml.org,2002:', '!!')!r} is not allowed "
                              f"(quote the value if it is text); allowed: {PLAIN_ALLOWED}", path)
    if not isinstance(node, yaml.ScalarNode):
        return
    if len(node.value) > MAX_SCALAR_CHARS:
        raise YamlLimit(line, f"a value of {len(node.value)} characters; allowed: at most {MAX_SCALAR_CHARS}", path)
    if node.tag.endswith((":int", ":float")):
        if len(node.value) > MAX_NUMBER_CHARS:
            raise YamlLimit(line, f"a number of {len(node.value)} characters; allowed: at most {MAX_NUMBER_CHARS}", path)
        if node.tag.endswith(":float") and not math.isfinite(loader.construct_yaml_float(node)):
            raise YamlLimit(line, f"{node.value} is not a finite number; allowed: finite numbers", path)


def safe_load_bounded(text: str) -> Any:
    """`yaml.safe_load` of one document within the limits; raises `YamlLimit` or `yaml.YAMLError`."""
    node, loader = compose_bounded(text)
    try:
        return None if node is None else loader.construct_document(node)
    finally:
        loader.dispose()

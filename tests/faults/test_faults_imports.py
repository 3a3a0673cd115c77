"""`faults/` as docs/architecture.md draws it: it imports nothing of ours but its own modules (what it acts on is
handed to it), and its modules import each other without a circle. Every import counts, also one inside a
function."""
from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "faults"
OURS = ("remoting", "emulator", "loads", "harness", "analysis", "benchmarks", "tests")


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """Every module `path` names in an `import` or `from ... import`, wherever it stands."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(package[:len(package) - node.level + 1] + [node.module or ""]).strip(".") \
                if node.level else node.module or ""
            found.add(base)
            found |= {f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in known}
    return found


def _graph() -> dict[str, set[str]]:
    known = _modules()
    return {name: _imports(name, path, known) for name, path in known.items()}


def test_faults_imports_nothing_of_ours_but_itself() -> None:
    foreign = {name: sorted(m for m in imports if m.split(".")[0] in OURS) for name, imports in _graph().items()}
    assert {name: found for name, found in foreign.items() if found} == {}


def test_faults_modules_import_each_other_without_a_circle() -> None:
    graph = _graph()
    graph = {name: {m for m in imports if m in graph and m != name} for name, imports in graph.items()}
    done: set[str] = set()

    def walk(name: str, path: list[str]) -> None:
        if name in path:
            raise AssertionError("import circle: " + " -> ".join(path[path.index(name):] + [name]))
        if name in done:
            return
        for nxt in sorted(graph[name]):
            walk(nxt, path + [name])
        done.add(name)

    for name in sorted(graph):
        walk(name, [])

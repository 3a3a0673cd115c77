"""docs/architecture.md's dependency diagram against the code: every import of one of our packages from another
(at module level or inside a function: a lazy import is still a dependency) is an arrow the diagram draws, every
arrow it draws is used, no module imports itself through a circle, and the claims the doc makes in words beside the
diagram (what `remoting`, `emulator`, `faults` and the analysis's shared modules import) hold.

The diagram's lines read `TARGETS <- IMPORTERS (why)`: each side a comma-separated list of packages or modules
(`analysis.contract`), `(...)` comments ignored; `<- (cli)` and `<- nothing ...` draw no arrow."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("remoting", "emulator", "faults", "loads", "harness", "analysis")
DOC = REPO / "docs" / "architecture.md"


def _modules() -> dict[str, Path]:
    found = {}
    for pkg in PACKAGES:
        for f in (REPO / pkg).rglob("*.py"):
            parts = list(f.relative_to(REPO).with_suffix("").parts)
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = f
    return found


MODULES = _modules()


def _ours(name: str) -> str | None:
    """The longest module of ours that `name` is or lies in."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module: str, path: Path) -> set[str]:
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, base] if base else up)
            names = [f"{base}.{a.name}" for a in node.names]
        found |= {m for m in map(_ours, names) if m and m != module}
    return found


GRAPH = {m: _imports(m, p) for m, p in MODULES.items()}


def _covers(pattern: str, module: str) -> bool:
    return module == pattern or module.startswith(pattern + ".")


def _diagram() -> list[tuple[list[str], list[str]]]:
    text = DOC.read_text(encoding="utf-8")
    block = re.search(r"Direction of dependence.*?```\n(.*?)```", text, re.S)
    assert block, "docs/architecture.md has no dependency diagram"
    arrows = []
    for line in block.group(1).splitlines():
        targets, _, importers = line.partition("<-")
        importers = re.sub(r"\([^)]*\)", "", importers).split(";")[0]
        if importers.strip().startswith("nothing"):
            importers = ""
        arrows.append(([t.strip() for t in targets.split(",") if t.strip()],
                       [i.strip() for i in importers.split(",") if i.strip()]))
    return arrows


ARROWS = _diagram()
EDGES = sorted((m, d) for m, ds in GRAPH.items() for d in ds if m.split(".")[0] != d.split(".")[0])


def _drawn(importer: str, imported: str) -> bool:
    return any(any(_covers(t, imported) for t in targets) and any(_covers(i, importer) for i in importers)
               for targets, importers in ARROWS)


def test_every_import_between_packages_is_an_arrow_of_the_diagram():
    missing = [f"{m} -> {d}" for m, d in EDGES if not _drawn(m, d)]
    assert not missing, "imports the diagram does not draw:\n" + "\n".join(missing)


def test_every_arrow_of_the_diagram_is_an_import():
    unused = [f"{t} <- {i}" for targets, importers in ARROWS for t in targets for i in importers
              if not any(_covers(t, d) and _covers(i, m) for m, d in EDGES)]
    assert not unused, "arrows no import uses:\n" + "\n".join(unused)


def test_no_import_circle():
    circles = []
    state: dict[str, int] = {}  # 1 on the path, 2 done

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for d in sorted(GRAPH[m]):
            if state.get(d) == 1:
                circles.append(" -> ".join([*path[path.index(d):], d]))
            elif d not in state:
                visit(d, [*path, d])
        state[m] = 2

    for m in sorted(GRAPH):
        if m not in state:
            visit(m, [m])
    assert not circles, "import circles:\n" + "\n".join(circles)


@pytest.mark.parametrize("package, allowed", [
    ("remoting", ()),
    ("faults", ()),
    ("emulator", ("remoting",)),
    ("analysis.contract", ()),
    ("analysis.expectations", ()),
])
def test_what_a_package_imports_of_ours(package, allowed):
    outside = sorted({f"{m} -> {d}" for m, d in EDGES if _covers(package, m) and not _covers(package.split(".")[0], d)
                      and not any(_covers(a, d) for a in allowed)})
    assert not outside, f"{package} imports outside {allowed or 'itself'}:\n" + "\n".join(outside)


def _closure(module: str) -> set[str]:
    seen, todo = set(), [module]
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo.extend(GRAPH[m])
    return seen


@pytest.mark.parametrize("module", ["analysis.contract", "analysis.expectations", "analysis.boundedyaml"])
def test_the_analysis_modules_writers_use_never_load_spark(module):
    spark = re.compile(r"^\s*(import|from)\s+pyspark\b", re.M)
    loading = sorted(m for m in _closure(module) if spark.search(MODULES[m].read_text(encoding="utf-8")))
    assert not loading, f"{module} loads pyspark through {loading}"

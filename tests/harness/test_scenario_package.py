"""The shape of `harness.scenario`: every public name resolves, either import order works, and its reader is the one
module of `harness` that builds on the analysis's bounded YAML reader."""
from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import harness.scenario

REPO = Path(__file__).resolve().parents[2]


def test_every_public_name_is_defined_by_one_module_of_the_package() -> None:
    for name in harness.scenario.__all__:
        value = getattr(harness.scenario, name)
        homes = [m.name for m in (REPO / "harness" / "scenario").glob("*.py") if m.stem != "__init__"
                 and getattr(importlib.import_module(f"harness.scenario.{m.stem}"), name, None) is value]
        assert homes, f"{name} comes from no module of harness.scenario"


@pytest.mark.parametrize("first", sorted(p.stem for p in (REPO / "harness" / "scenario").glob("*.py")
                                         if p.stem != "__init__"))
def test_any_module_imported_first_makes_no_cycle(first: str) -> None:
    code = f"import harness.scenario.{first}\nfrom harness.scenario import Scenario\nprint(Scenario.__name__)"
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "Scenario"


def test_only_the_scenario_reader_imports_boundedyaml() -> None:
    importers = []
    for path in sorted((REPO / "harness").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
            else:
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if "analysis.boundedyaml" in names:
                importers.append(path.relative_to(REPO).as_posix())
    assert importers == ["harness/scenario/reader.py"]

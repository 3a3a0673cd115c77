"""Fixtures of the fault tests: a state dir with its journal, and nodes made of real OS resources (see
`fault_nodes.py`) that are torn down by their own ids even when a test fails, followed by a cleanup and a leftover
scan that must come back empty."""
from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest
from fault_nodes import Node, make_node, teardown_node

from faults.cleanup import cleanup
from faults.journal import Journal
from faults.leftovers import scan_leftovers


def needs_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root (loop mounts, cgroups)")


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    d = tmp_path / "state"
    d.mkdir()
    return d


@pytest.fixture
def journal(state_dir: Path) -> Journal:
    return Journal(state_dir)


@pytest.fixture
def run_id() -> str:
    return f"t-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def nodes(request, journal: Journal, tmp_path: Path, state_dir: Path, run_id: str):
    """`nodes("slave")` -> a Node; every node made is torn down, then the state dir must have no leftovers."""
    needs_root()
    made: list[Node] = []

    def factory(name: str = "slave", **kw) -> Node:
        node = make_node(journal, tmp_path, run_id, name, **kw)
        made.append(node)
        return node

    def finish() -> None:
        errors = []
        for node in reversed(made):
            try:
                teardown_node(node)
            except Exception as e:  # noqa: BLE001 -- keep tearing down; cleanup below catches the rest
                errors.append(f"{node.target.name}: {e}")
        report = cleanup(state_dir, all_owners=True)
        left = scan_leftovers(state_dir, [str(tmp_path)])
        assert not left, f"left behind: {left}"
        assert report.ok, report.failed
        assert not errors, errors

    request.addfinalizer(finish)
    return factory


@pytest.fixture
def events() -> list[dict]:
    return []

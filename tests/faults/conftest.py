"""Fixtures of the fault tests: a base dir with a state dir and its journal, and nodes made of real OS resources (see
`fault_nodes.py`). Every test's resources are torn down by their own ids even when it fails: nodes by their handles,
then `cleanup(all_owners=True)` of the test's state dir, then a leftover scan that must come back empty.

Base dirs live in /tmp/rmq-chaos-tests/<id>/, not in pytest's tmp dirs: pytest deletes old tmp dirs by walking them,
and a walk into a store left frozen by a killed test session would hang. At session start, base dirs of dead
sessions are cleaned up through their journals first."""
from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

import pytest
from fault_nodes import Node, make_node, teardown_node

from faults.cleanup import cleanup
from faults.journal import Journal
from faults.leftovers import scan_leftovers
from faults.system import mounts
from faults.system.procs import ProcId

TEST_ROOT = Path("/tmp/rmq-chaos-tests")


def needs_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root (loop mounts, cgroups)")


def _mounts_under(path: Path) -> list[str]:
    prefix = str(path.resolve()).rstrip("/") + "/"
    return [m.target for m in mounts.mounts() if (m.target + "/").startswith(prefix)]


def _remove_base(base: Path) -> None:
    """Delete a base dir, never crossing into a mount (a store still mounted stays, and is reported)."""
    if base.exists() and not _mounts_under(base):
        shutil.rmtree(base, ignore_errors=True)


OWNER_FILE = "owner"
"""`<pid> <start time>` of the test process a base dir belongs to."""


def _owner_alive(base: Path) -> bool:
    try:
        pid, start = (base / OWNER_FILE).read_text().split()
    except (OSError, ValueError):
        return False
    return ProcId(int(pid), int(start)).exists()


@pytest.fixture(scope="session", autouse=True)
def reap_dead_test_runs():
    """Clean up what killed test sessions left in /tmp/rmq-chaos-tests: only base dirs whose test process is dead
    (another xdist worker's test may be between a fault's crash and its own cleanup, its fault orphaned on purpose)."""
    if os.geteuid() == 0 and TEST_ROOT.is_dir():
        for base in TEST_ROOT.iterdir():
            state = base / "state"
            if _owner_alive(base):
                continue
            if state.is_dir() and cleanup(state).ok and not Journal(state).open_entries():
                _remove_base(base)
    yield


@pytest.fixture
def base_dir() -> Path:
    d = TEST_ROOT / uuid.uuid4().hex[:12]
    d.mkdir(parents=True)
    me = ProcId.of(os.getpid())
    assert me is not None
    (d / OWNER_FILE).write_text(f"{me.pid} {me.start}\n")
    return d


@pytest.fixture
def state_dir(base_dir: Path):
    """The test's state dir; whatever its journal still holds at the end is cleaned up, and nothing may be left."""
    d = base_dir / "state"
    d.mkdir()
    yield d
    report = cleanup(d, all_owners=True)
    left = scan_leftovers(d, [str(base_dir)])
    _remove_base(base_dir)
    assert report.ok, report.failed
    assert not left, f"left behind: {left}"


@pytest.fixture
def journal(state_dir: Path) -> Journal:
    return Journal(state_dir)


@pytest.fixture
def run_id() -> str:
    return f"t-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def nodes(request, journal: Journal, base_dir: Path, run_id: str):
    """`nodes("slave")` -> a Node; every node made is torn down by its handles (then `state_dir` cleans up)."""
    needs_root()
    made: list[Node] = []

    def factory(name: str = "slave", **kw) -> Node:
        node = make_node(journal, base_dir, run_id, name, **kw)
        made.append(node)
        return node

    yield factory
    errors = []
    for node in reversed(made):
        try:
            teardown_node(node)
        except Exception as e:  # noqa: BLE001 -- keep tearing down; the state_dir fixture's cleanup gets the rest
            errors.append(f"{node.target.name}: {e}")
    assert not errors, errors


@pytest.fixture
def events() -> list[dict]:
    return []


@pytest.fixture(scope="module")
def net_hosts():
    """Namespace hosts h1, h2, h3 with probe sinks (`net_testbed.py`), one set per network test module."""
    needs_root()
    from net_testbed import shared_bed

    with shared_bed() as bed:
        yield bed


@pytest.fixture
def net_bed(net_hosts, state_dir):
    """The module's namespace hosts; the test's fault drivers are ended by their pids before its state dir is
    cleaned up."""
    yield net_hosts
    net_hosts.end_drivers()

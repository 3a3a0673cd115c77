"""Fixtures of the load tests: a scripted broker on 127.0.0.1 (in a thread of the test process), a run directory,
a factory of `LoadProcess`es that are always stopped (or killed) at the end, and readers of the written rows.

Locust is never imported here: its gevent monkey-patching would reach every other test of the session. It runs in
the children `LoadProcess` starts. Helpers the tests import are in `loads_support.py` (several directories have a
conftest.py, so `import conftest` would be ambiguous)."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from scripted_broker import ScriptedBroker

from loads.process import LoadProcess
from loads.spec import LoadSpec


@pytest.fixture
def broker() -> Iterator[ScriptedBroker]:
    with ScriptedBroker() as b:
        yield b


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    d = tmp_path / "run-1"
    d.mkdir()
    return d


@pytest.fixture
def start_load(run_dir: Path) -> Iterator[Callable[..., LoadProcess]]:
    """`start_load(spec_dict, workers=0, run_id="run-1", phase=None) -> LoadProcess` (started)."""
    started: list[LoadProcess] = []

    def start(spec: dict[str, Any], workers: int = 0, run_id: str = "run-1", phase: str | None = None,
              directory: Path | None = None) -> LoadProcess:
        load = LoadProcess(LoadSpec.model_validate(spec), directory or run_dir, run_id, workers=workers)
        started.append(load)
        load.start(phase=phase)
        return load

    yield start
    for load in started:
        if not load.finished:
            load.kill()

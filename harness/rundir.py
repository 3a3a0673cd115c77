"""The run directory writer: `runs/<run-id>/` with the resolved `scenario.yaml`, `cluster.json` and `events.jsonl`
(architecture §4), and the directories the load, the collectors and the read-back fill (§5). Layout, schemas and
event names are `analysis.contract`'s; this module only writes them.

Example::

    rd = RunDir.create("runs", scenario)
    rd.event("phase_start", phase="healthy", index=1, duration_s=10.0, rate=None)
"""
from __future__ import annotations

import json
import os
import re
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml

from analysis.contract import RunLayout, append_event, make_event, os_error_words
from harness import run_ids
from harness.scenario import Scenario

RUN_ID_TIME = "%Y%m%dT%H%M%SZ"
MAX_RUN_ID = 200
# a run id names directories, cgroups and compose projects: a matrix name's "axis=value" becomes "axis_value"
RUN_ID_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


class RunDir:
    """One run's directory. `event()` is thread-safe and each event is on disk (fsync) before it returns.

    An event that cannot be written (a full disk, an I/O error) is reported once to `on_failure` (one line) and
    not raised when `on_failure` is set: the run stops through it, and its wind-down still runs."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.layout = RunLayout.of(root)
        self.root = self.layout.root
        self._lock = threading.Lock()
        self.on_failure: Callable[[str], None] | None = None
        self.failed = False

    @property
    def run_id(self) -> str:
        return self.layout.run_id

    @classmethod
    def create(cls, out_dir: str | os.PathLike[str], scenario: Scenario, run_id: str | None = None) -> RunDir:
        """Make `<out_dir>/<run-id>/` (run id: UTC time and scenario name, made unique on this machine by
        `harness.run_ids`) and write scenario.yaml."""
        base = Path(out_dir)
        base.mkdir(parents=True, exist_ok=True)
        stem = run_id or RUN_ID_UNSAFE.sub(
            "_", f"{time.strftime(RUN_ID_TIME, time.gmtime())}-{scenario.name}")[:MAX_RUN_ID]
        for n in range(1, 1000):
            name = stem if n == 1 else f"{stem}-{n}"
            if not run_ids.claim(name):
                continue
            try:
                (base / name).mkdir()
                break
            except FileExistsError:
                run_ids.release(name)
                continue
        else:
            raise FileExistsError(f"{base}: no free run directory name for {stem}")
        rd = cls(base / name)
        rd.layout.make_dirs()
        rd.write_scenario(scenario)
        return rd

    def write_scenario(self, scenario: Scenario) -> Path:
        text = yaml.safe_dump(scenario.resolved(), sort_keys=False, allow_unicode=True)
        return _write_atomic(self.layout.scenario, text)

    def write_cluster(self, info: Mapping[str, Any]) -> Path:
        """`cluster.json`: nodes, program and version, and each broker's effective config."""
        return _write_atomic(self.layout.cluster, json.dumps(info, indent=1, sort_keys=True, default=str) + "\n")

    def event(self, name: str, **extra: Any) -> dict[str, Any]:
        record = make_event(name, **extra)
        self.append(record)
        return record

    def append(self, record: Mapping[str, Any]) -> None:
        """Append an event made elsewhere (e.g. a fault's, which already carries its own times)."""
        with self._lock:
            try:
                append_event(self.layout.events, record)
            except OSError as err:
                if self.on_failure is None:
                    raise
                if not self.failed:
                    self.failed = True
                    self.on_failure(f"{os_error_words(err)} writing events to {self.layout.events}")

    def events(self) -> list[dict[str, Any]]:
        """The events written so far (a torn last line, from a crash, is skipped)."""
        out = []
        try:
            text = self.layout.events.read_text(encoding="utf-8")
        except FileNotFoundError:
            return out
        for line in text.splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
        return out


def _write_atomic(path: Path, text: str) -> Path:
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return path

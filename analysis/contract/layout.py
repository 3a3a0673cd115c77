"""The run directory's layout (DESIGN.md "The run directory"): file and directory names, part-file names,
and `RunLayout`, the paths of one run."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

SCENARIO_FILE = "scenario.yaml"
CLUSTER_FILE = "cluster.json"
EVENTS_FILE = "events.jsonl"
REQUESTS_DIR = "requests"
METRICS_DIR = "metrics"
READBACK_DIR = "readback"
CONSUMES_DIR = "consumes"
SCHEDULE_DIR = "schedule"  # open-model slots dropped: schedule/part-*.parquet
CONSUMER_LAG_DIR = "lag"  # inside METRICS_DIR: metrics/lag/part-*.parquet
READBACK_QUEUES_FILE = "queues.json"  # in READBACK_DIR: how far each (node, queue) was read back
LOGS_DIR = "logs"
REPORT_DIR = "report"
REPORT_INDEX = "index.html"
VERDICT_FILE = "verdict.json"
JUNIT_FILE = "junit.xml"

PART_GLOB = "part-*.parquet"
PART_NAME_RE = re.compile(r"^part-(?P<worker>[A-Za-z0-9_.-]+)-(?P<n>\d+)\.parquet$")
WORKER_NAME_RE = re.compile(r"^[A-Za-z0-9_.-]{1,100}$")
DEFAULT_BATCH_ROWS = 10_000
MAX_JSON_BYTES = 64 * 1024 * 1024
"""cluster.json and readback/queues.json larger than this are not a run's (they hold one entry per node or queue)."""


@dataclass(frozen=True)
class RunLayout:
    """Paths of one run directory, `runs/<run-id>/`."""

    root: Path

    @classmethod
    def of(cls, root: str | os.PathLike[str]) -> RunLayout:
        return cls(Path(root))

    @property
    def run_id(self) -> str:
        """The directory name; `events.jsonl`'s `run_start` carries the same id."""
        return self.root.name

    @property
    def scenario(self) -> Path:
        return self.root / SCENARIO_FILE

    @property
    def cluster(self) -> Path:
        return self.root / CLUSTER_FILE

    @property
    def events(self) -> Path:
        return self.root / EVENTS_FILE

    @property
    def requests(self) -> Path:
        return self.root / REQUESTS_DIR

    @property
    def metrics(self) -> Path:
        return self.root / METRICS_DIR

    @property
    def readback(self) -> Path:
        return self.root / READBACK_DIR

    @property
    def consumes(self) -> Path:
        return self.root / CONSUMES_DIR

    @property
    def schedule(self) -> Path:
        return self.root / SCHEDULE_DIR

    @property
    def consumer_lag(self) -> Path:
        return self.metrics / CONSUMER_LAG_DIR

    @property
    def readback_queues(self) -> Path:
        return self.readback / READBACK_QUEUES_FILE

    @property
    def logs(self) -> Path:
        return self.root / LOGS_DIR

    def node_logs(self, node: str) -> Path:
        return self.logs / node

    @property
    def report(self) -> Path:
        return self.root / REPORT_DIR

    @property
    def report_index(self) -> Path:
        return self.report / REPORT_INDEX

    @property
    def verdict(self) -> Path:
        return self.report / VERDICT_FILE

    @property
    def junit(self) -> Path:
        return self.report / JUNIT_FILE

    def make_dirs(self) -> None:
        """Create the directories writers fill while a run goes."""
        for d in (self.requests, self.metrics, self.readback, self.logs):
            d.mkdir(parents=True, exist_ok=True)

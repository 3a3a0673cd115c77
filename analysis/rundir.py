"""Open one run directory for analysis: scenario, events, cluster config and the part files Spark may read.

Pure Python, run before Spark starts, so bad input fails fast with a one-line `RunDirError` and nothing written.
What an interrupted run leaves behind is accepted and noted in `warnings`: a half-written last line of
`events.jsonl`, a part file without a valid Parquet footer (skipped), no `readback/`, no `report/`.
`readback/queues.json` (read-back coverage) is optional: without it every queue counts as read completely.
Consumer parts (`consumes/`, `metrics/lag/`) and the brokers' store.log `[PAGECACHERT]` lines are optional too:
a run without them (every run before issue 12) is analyzed as before, its consumer metrics unknown.
A run directory is named by a path or a `file:` URI (`run_dir_location`): the driver reads it here and the executors
read its part files as `file:` URIs (`part_uri`), so on a cluster it lies on a mount every host has at the same path.
"""
from __future__ import annotations

import json
import math
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from analysis import contract as c
from analysis.boundedyaml import YamlLimit, read_capped, safe_load_bounded
from analysis.contract.compact import superseded
from analysis.contract.schemas import PART_SCHEMAS, schema_problem
from analysis.coverage import Coverage, describe_unread
from analysis.delivery import read_drops
from analysis.errors import RunDirError, list_at
from analysis.expectations import Expectation, parse_expectations
from analysis.pagecache import NodeLog, read_run_logs
from analysis.timeline import Timeline, build_timeline


@dataclass
class PhaseSpec:
    name: str
    duration_s: float | None = None


@dataclass
class RunDir:
    """One run directory, opened and checked."""

    layout: c.RunLayout
    run_id: str
    scenario_name: str
    scenario_text: str | None
    expectations: list[Expectation]
    phases: list[PhaseSpec]
    cluster: dict[str, Any] | None
    timeline: Timeline
    parts: dict[str, list[Path]]  # "requests" | "metrics" | "readback" | "consumes" | "lag" -> valid part files
    skipped: dict[str, list[str]] = field(default_factory=dict)  # same keys -> "file: reason"
    warnings: list[str] = field(default_factory=list)
    coverage: Coverage = field(default_factory=Coverage)  # readback/queues.json (absent: every queue read)
    pagecache: list[NodeLog] = field(default_factory=list)  # [PAGECACHERT] lines of each node's store.log
    consumer_groups: list[str] = field(default_factory=list)  # scenario consumers: group names (may be empty)
    open_load: bool = False  # an open-model client runs (a phase without sends then was not delivered)
    drops: dict[str, int] = field(default_factory=dict)  # phase -> open-model slots dropped late (schedule/)
    broker_groups: list[str] = field(default_factory=list)  # the cluster's broker groups (names; see _broker_groups)

    @property
    def has_consumes(self) -> bool:
        return bool(self.parts.get(c.CONSUMES_DIR))

    @property
    def path(self) -> Path:
        return self.layout.root

    @property
    def input_bytes(self) -> int:
        """The size of the part files the job reads."""
        return sum(f.stat().st_size for files in self.parts.values() for f in files)

    @property
    def has_readback(self) -> bool:
        return bool(self.parts["readback"])

    @property
    def readback_complete(self) -> bool:
        """Read-back files exist and were not cut short (a started read-back has its end event)."""
        tl = self.timeline
        return self.has_readback and not self.skipped["readback"] and (tl.readback_ended or not tl.readback_started)

    @property
    def requests_complete(self) -> bool:
        return not self.skipped["requests"]


MAX_EVENTS_BYTES = 256 * 1024 * 1024
"""events.jsonl larger than this is not a run's: a few hundred bytes per event, a few thousand events."""
TIMELINE_EVENTS = (c.EVENT_RUN_START, c.EVENT_RUN_END, c.EVENT_LOAD_START, c.EVENT_LOAD_STOP, c.EVENT_PHASE_START,
                   c.EVENT_PHASE_END, c.EVENT_FAULT, c.EVENT_READBACK_START, c.EVENT_READBACK_END)
"""Events `analysis.timeline` folds; their keys are type-checked, other events pass as they are."""
EVENT_STRINGS = ("event", "run_id", "phase", "fault_id", "kind", "target", "action", "status")
EVENT_NUMBERS = ("wall_ns", "duration_s", "rate", "index", "rows")
LAG_PARTS = f"{c.METRICS_DIR}/{c.CONSUMER_LAG_DIR}"
"""The key of the consumer lag parts in `RunDir.parts` (its directory relative to the run directory)."""


RUN_DIR_FORMS = ("a path, or a file: URI of an absolute path (file:///mnt/runs/<run-id>) on a mount that the driver "
                 "and every executor host have at that path")
HADOOP_SCHEMES = frozenset({"hdfs", "webhdfs", "viewfs", "s3a", "s3", "s3n", "gs", "abfs", "abfss", "wasb", "wasbs",
                            "o3fs", "ofs"})
"""Hadoop file systems Spark could read part files from, but not this job: it reads the run's scenario, events,
logs and part footers on the driver with Python, from a local path."""
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")


def run_dir_location(arg: str | Path) -> Path:
    """The local path a RUN_DIR argument names: a path as it is (also one that exists and looks like a URI,
    `ro:1`), a `file:` URI (`file:///abs`, `file:/abs`, `file://localhost/abs`, percent-escapes decoded) as its
    absolute path. Raises `RunDirError` (one line naming the argument and the allowed forms) for any other scheme."""
    if isinstance(arg, Path):
        return arg
    m = _SCHEME.match(arg)
    if m is None or Path(arg).exists():
        return Path(arg)
    scheme = m.group(1).lower()
    if scheme in HADOOP_SCHEMES:
        raise RunDirError(f"RUN_DIR {arg}: no file system for {scheme}: in this job (the driver reads the run's "
                          f"scenario, events and part footers from a local path); allowed: {RUN_DIR_FORMS}")
    if scheme != "file":
        raise RunDirError(f"RUN_DIR {arg}: unknown scheme {scheme}:; allowed: {RUN_DIR_FORMS}")
    uri = urlsplit(arg)
    path = unquote(uri.path)
    if uri.netloc not in ("", "localhost") or uri.query or uri.fragment or not path.startswith("/"):
        what = (f"names host {uri.netloc!r}" if uri.netloc not in ("", "localhost") else
                "has a query or fragment" if uri.query or uri.fragment else "is not an absolute path")
        raise RunDirError(f"RUN_DIR {arg}: a file: URI that {what}; allowed: {RUN_DIR_FORMS}")
    return Path(path)


def part_uri(path: Path) -> str:
    """A part file as the `file:` URI Spark's readers resolve on every executor (whatever `fs.defaultFS` a cluster
    sets), unescaped as Hadoop's `Path` wants it."""
    return f"file://{path.absolute()}"


def open_run_dir(path: str | Path) -> RunDir:
    """Open and check a run directory (a path or a `file:` URI: `run_dir_location`). Raises `RunDirError` (one line)
    for input the job cannot accept."""
    root = run_dir_location(path)
    if not root.is_dir():
        raise RunDirError(f"{root}: not a directory (expected a run directory runs/<run-id>/)")
    layout = c.RunLayout.of(root)
    known = (layout.scenario, layout.events, layout.requests)
    if not any(p.exists() for p in known):
        raise RunDirError(f"{root}: not a run directory (none of {', '.join(p.name for p in known)} exists)")
    warnings: list[str] = []
    scenario, text = _read_scenario(layout, warnings)
    events = _read_events(layout, warnings)
    timeline = build_timeline(events)
    run_id = timeline.run_id or layout.run_id
    phases = _phases(scenario, layout.scenario)
    try:
        expectations = parse_expectations(scenario.get("expect"), source=str(layout.scenario)) if scenario else []
    except ValueError as err:
        raise RunDirError(str(err)) from None
    _check_finite(expectations, layout.scenario)
    _check_phase_names(expectations, phases, timeline, layout.scenario)
    parts: dict[str, list[Path]] = {}
    skipped: dict[str, list[str]] = {}
    for sub, schema in PART_SCHEMAS.items():
        parts[sub], skipped[sub] = _screen_parts(root / sub, schema)
        warnings += [f"{sub}/{s}: skipped" for s in skipped[sub]]
    if timeline.status != "completed":
        warnings.append(f"events.jsonl: run status is {timeline.status!r} (no run_end 'completed'): "
                        "measurements that need the whole run are unknown")
    if not parts["readback"]:
        warnings.append("readback/: no read-back rows: the loss check is unknown")
    elif timeline.readback_started and not timeline.readback_ended:
        warnings.append("events.jsonl: readback_start without readback_end: the loss check is unknown")
    coverage = _read_coverage(layout, warnings)
    # a cluster reused from an earlier run (explore's `cluster: reuse`) says when its nodes started: `started_ns`
    started = next((_int_ns(ev.get("started_ns", ev.get("wall_ns"))) for ev in events
                    if ev.get("event") == "cluster_up"), None)
    pagecache = read_run_logs(root / "logs", started if started is not None else timeline.run_start_ns)
    for log in pagecache:
        if log.skipped:
            warnings.append(f"{log.path}: {log.skipped} [PAGECACHERT] line(s) not in 4.9.1's format: skipped")
        if log.truncated:
            warnings.append(f"{log.path}: larger than the cap: only its tail was read")
        if log.zone_offset_ns:
            warnings.append(f"{log.path}: line times are UTC{log.zone_offset_ns / 3.6e12:+g} h (4.9.1 logs in GMT+8): "
                            "shifted to UTC")
    cluster = _read_cluster(layout, warnings)
    return RunDir(layout=layout, run_id=run_id, scenario_name=str(scenario.get("name") or run_id),
                  scenario_text=text, expectations=expectations, phases=phases,
                  cluster=cluster, timeline=timeline, parts=parts, skipped=skipped,
                  warnings=warnings, coverage=coverage, pagecache=pagecache,
                  consumer_groups=_consumer_groups(scenario), open_load=_open_load(scenario),
                  drops=read_drops(parts[c.SCHEDULE_DIR]), broker_groups=_broker_groups(cluster, scenario))


def _open_load(scenario: dict[str, Any]) -> bool:
    """Whether the scenario's load (as the harness resolved it) has an open-model client."""
    load = scenario.get("load")
    if not isinstance(load, dict):
        return False
    clients = load.get("clients") if isinstance(load.get("clients"), list) else []
    return any(isinstance(cl, dict) and (cl.get("model") or load.get("model")) == "open" for cl in clients)


def _int_ns(v: Any) -> int | None:
    return int(v) if isinstance(v, int | float) and not isinstance(v, bool) and abs(v) < 2**63 else None


MAX_BROKER_GROUPS = 64
"""Broker group names read from a run directory at most (the harness runs up to 8)."""


def _broker_groups(cluster: dict[str, Any] | None, scenario: dict[str, Any]) -> list[str]:
    """The run's broker groups, by name: cluster.json's `groups` (`[{name, members}]`); else the scenario's
    `cluster.groups` (names, or a count n > 1: `broker-a`, `broker-b`, ... as harness.topology names them); else the
    one group, cluster.json's (or the scenario's) `broker_name`; else none known (a run made before cluster.json
    named its broker)."""
    groups = cluster.get("groups") if isinstance(cluster, dict) else None
    if isinstance(groups, list):
        names = [g.get("name") if isinstance(g, dict) else g for g in groups]
        return list(dict.fromkeys(n for n in names if isinstance(n, str)))[:MAX_BROKER_GROUPS]
    section = scenario.get("cluster") if isinstance(scenario.get("cluster"), dict) else {}
    raw = section.get("groups")
    if isinstance(raw, list):
        return list(dict.fromkeys(n for n in raw if isinstance(n, str)))[:MAX_BROKER_GROUPS]
    if isinstance(raw, int) and not isinstance(raw, bool) and 1 < raw <= 26:
        return [f"broker-{chr(ord('a') + i)}" for i in range(raw)]
    name = (cluster or {}).get("broker_name") or section.get("broker_name")
    return [name] if isinstance(name, str) else []


def _consumer_groups(scenario: dict[str, Any]) -> list[str]:
    """Group names of the scenario's `consumers: {groups: [{name: ...}]}`; anything else gives none (the harness
    validated it; the groups seen in consumes/ count anyway)."""
    raw = scenario.get("consumers")
    groups = raw.get("groups") if isinstance(raw, dict) else None
    if not isinstance(groups, list):
        return []
    return [g["name"] for g in groups if isinstance(g, dict) and isinstance(g.get("name"), str)]


def _read_coverage(layout: c.RunLayout, warnings: list[str]) -> Coverage:
    try:
        coverage = Coverage.of(c.read_readback_queues(layout.readback_queues))
    except ValueError as err:
        raise RunDirError(str(err)) from None
    if coverage.unread:
        warnings.append(f"readback/{c.READBACK_QUEUES_FILE}: {describe_unread(coverage.unread)}: acknowledged "
                        "sends placed there are counted as unseen, not as lost or not on the slave")
    return coverage


def _read_scenario(layout: c.RunLayout, warnings: list[str]) -> tuple[dict[str, Any], str | None]:
    if not layout.scenario.exists():
        warnings.append("scenario.yaml: missing: no expectations, phases from events.jsonl only")
        return {}, None
    try:
        text = read_capped(layout.scenario)
        data = safe_load_bounded(text)
    except YamlLimit as err:
        where = f"{layout.scenario}:{err.line}" if err.line else str(layout.scenario)
        key = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err.path).lstrip(".")
        raise RunDirError(f"{where}: {key + ': ' if key else ''}{err.problem}") from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark else ""
        problem = " ".join(str(getattr(err, "problem", None) or err).split())
        raise RunDirError(f"{layout.scenario}:{where} not valid YAML ({problem})") from None
    if data is None:
        return {}, text
    if not isinstance(data, dict):
        raise RunDirError(f"{layout.scenario}: must be a mapping with keys name, phases, expect; "
                          f"got {type(data).__name__}")
    return data, text


def _phases(scenario: dict[str, Any], source: Path) -> list[PhaseSpec]:
    out = []
    for i, ph in enumerate(list_at(scenario.get("phases"), source, "phases", "{name, duration_s}", RunDirError)):
        if not isinstance(ph, dict) or not isinstance(ph.get("name"), str) or not ph["name"]:
            raise RunDirError(f"{source}: phases[{i}].name: must be a non-empty string")
        dur = ph.get("duration_s")
        if dur is not None and (isinstance(dur, bool) or not isinstance(dur, int | float) or not 0 <= dur < math.inf):
            raise RunDirError(f"{source}: phases[{i}].duration_s: must be a number of seconds >= 0, got {dur!r}")
        out.append(PhaseSpec(ph["name"], dur))
    return out


def _check_finite(expectations: list[Expectation], source: Path) -> None:
    """A limit written as text (`min: "1e400"`) may validate to infinity or NaN: refuse it at its key."""
    for i, e in enumerate(expectations):
        for key, v in e.model_dump().items():
            if isinstance(v, float) and not math.isfinite(v):
                raise RunDirError(f"{source}: expect[{i}].{key}: {v} is not a finite number; allowed: finite numbers")


def _check_phase_names(expectations: list[Expectation], phases: list[PhaseSpec], timeline: Timeline,
                       source: Path) -> None:
    names = [p.name for p in phases] or [p.name for p in timeline.phases]
    for i, e in enumerate(expectations):
        if e.phase is not None and names and e.phase not in names:
            raise RunDirError(f"{source}: expect[{i}].phase: {e.phase!r} is not one of: {', '.join(names)}")


def read_events(layout: c.RunLayout) -> list[dict[str, Any]]:
    """The run's events as `open_run` reads them (bad lines skipped), for a measure that needs more than the
    timeline keeps (e.g. `analysis.failover`'s `roles` events)."""
    return _read_events(layout, [])


def run_events(run: RunDir) -> list[dict[str, Any]]:
    """`read_events` of a run, none when events.jsonl cannot be read (opening the run already warned)."""
    try:
        return read_events(run.layout)
    except (OSError, RunDirError):
        return []


def _read_events(layout: c.RunLayout, warnings: list[str]) -> list[dict[str, Any]]:
    if not layout.events.exists():
        warnings.append("events.jsonl: missing: no phases, faults or run status")
        return []
    _regular(layout.events, MAX_EVENTS_BYTES)
    lines = layout.events.read_bytes().split(b"\n")
    events = []
    for n, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            ev = json.loads(raw, parse_constant=_no_constant)
        except (ValueError, RecursionError):
            last = all(not rest.strip() for rest in lines[n:])
            warnings.append(f"events.jsonl line {n}: not JSON ({'truncated last line' if last else 'skipped'})")
            continue
        problem = _event_problem(ev)
        if problem:
            warnings.append(f"events.jsonl line {n}: {problem} (skipped)")
        else:
            events.append(ev)
    return events


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _event_problem(ev: Any) -> str | None:
    """Why a parsed line is not an event the timeline can use (None when it is)."""
    if not isinstance(ev, dict) or not isinstance(ev.get("event"), str):
        return "not an event object with 'event'"
    if ev["event"] not in TIMELINE_EVENTS:
        return None  # the timeline does not read it; its keys may be anything (node_exit's status is a number)
    for key in EVENT_STRINGS:
        if ev.get(key) is not None and not isinstance(ev[key], str):
            return f"key {key!r} must be a string, got {type(ev[key]).__name__}"
    for key in EVENT_NUMBERS:
        v = ev.get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int | float) or abs(v) >= 2**63):
            return f"key {key!r} must be a number below 2**63, got {type(v).__name__}"
    return None


def _regular(path: Path, limit: int) -> None:
    """Refuse a run-directory file that is not a regular file of at most `limit` bytes (a FIFO would block)."""
    try:
        st = path.stat()
    except OSError as err:
        raise RunDirError(f"{path}: cannot read it: {err.strerror or err}") from None
    if not stat.S_ISREG(st.st_mode):
        raise RunDirError(f"{path}: not a regular file; allowed: a file written by the run")
    if st.st_size > limit:
        raise RunDirError(f"{path}: {st.st_size} bytes; allowed: at most {limit} bytes")


def _read_cluster(layout: c.RunLayout, warnings: list[str]) -> dict[str, Any] | None:
    if not layout.cluster.exists():
        warnings.append("cluster.json: missing: the report shows no config in effect")
        return None
    _regular(layout.cluster, c.MAX_JSON_BYTES)
    try:
        data = json.loads(layout.cluster.read_text(encoding="utf-8"), parse_constant=_no_constant)
    except (ValueError, RecursionError) as err:
        problem = "nested too deeply" if isinstance(err, RecursionError) else " ".join(str(err).split())[:200]
        warnings.append(f"cluster.json: not JSON ({problem}): not shown")
        return None
    return data if isinstance(data, dict) else {"cluster": data}


def _screen_parts(directory: Path, schema: pa.Schema) -> tuple[list[Path], list[str]]:
    """Part files with a readable footer and the contract's column types; the others with a reason."""
    if not directory.is_dir():
        return [], []
    good, bad = [], []
    held = superseded(directory)  # parts a compaction cut short left beside the file that holds them
    for path in sorted(directory.glob(c.PART_GLOB)):
        if path.name in held:
            continue
        if not path.is_file():  # a FIFO would block the reader, a directory is no part
            bad.append(f"{path.name}: not a regular file")
            continue
        try:
            file_schema = pq.read_schema(path)
        except (OSError, pa.ArrowException) as err:
            bad.append(f"{path.name}: not a complete Parquet file ({str(err).splitlines()[0]})")
            continue
        problem = schema_problem(file_schema, schema)
        if problem is not None:
            raise RunDirError(f"{path}: {problem}")
        good.append(path)
    return good, bad

"""The timeline of one run, read from its `events.jsonl` records: phases, fault windows, read-back, run status.

Pure Python (no Spark). Everything the job knows about *when* things happened comes from here; the request rows
only say what each send did. Missing events (an interrupted run) leave the fields `None`, and the measurements
that need them become `unknown`.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from analysis import contract as c

NS = 1_000_000_000


@dataclass
class PhaseWindow:
    """One phase as it ran: `start_ns` from `phase_start`; `end_ns` from `phase_end` (or the next boundary)."""

    name: str
    index: int
    start_ns: int
    end_ns: int | None = None
    ended: bool = False  # a phase_end event was written
    complete: bool = False  # ended, or a later phase started: its rows are all there (unless parts were lost)
    duration_s: float | None = None  # planned
    rate: float | None = None  # planned

    @property
    def seconds(self) -> float | None:
        return None if self.end_ns is None else (self.end_ns - self.start_ns) / NS


@dataclass
class FaultWindow:
    """One fault's life: apply, verify and revert times (wall ns of the `ok` events) and what failed."""

    fault_id: str
    kind: str | None = None
    target: str | None = None
    apply_started_ns: int | None = None
    applied_ns: int | None = None
    verified_ns: int | None = None
    revert_started_ns: int | None = None
    reverted_ns: int | None = None
    errors: list[str] = field(default_factory=list)
    failed_ns: dict[str, int] = field(default_factory=dict)  # action (apply, verify, revert) -> its first `failed`
    evidence: dict[str, Any] = field(default_factory=dict)

    @property
    def shade_start_ns(self) -> int | None:
        """Where the report's shaded window starts: apply start, else apply ok, else verify."""
        return next((t for t in (self.apply_started_ns, self.applied_ns, self.verified_ns) if t is not None), None)

    @property
    def status(self) -> str:
        if self.reverted_ns is not None:
            return "reverted"
        if self.errors:
            return "failed"
        if self.verified_ns is not None:
            return "active"
        return "unverified"


@dataclass
class Timeline:
    """What `events.jsonl` says about one run."""

    run_id: str | None = None
    run_start_ns: int | None = None
    run_end_ns: int | None = None
    status: str = "unknown"  # completed | interrupted | failed | unknown (no run_end)
    load_start_ns: int | None = None
    load_stop_ns: int | None = None
    phases: list[PhaseWindow] = field(default_factory=list)
    faults: list[FaultWindow] = field(default_factory=list)
    readback_started: bool = False
    readback_ended: bool = False
    readback_rows: int | None = None
    readback_nodes: list[str] | None = None
    error: str | None = None
    failures: list[dict[str, Any]] = field(default_factory=list)  # harness_failed events (part, error, wall_ns, ...)
    consumers_behind: list[dict[str, Any]] = field(default_factory=list)  # phase, group, flow_control, ...
    searched: list[str] = field(default_factory=list)  # phases with a sustainable-rate search (`search_start`)

    @property
    def t0_ns(self) -> int | None:
        """Zero of the report's time axis: the first phase start (load start, run start as fallbacks)."""
        if self.phases:
            return self.phases[0].start_ns
        return self.load_start_ns if self.load_start_ns is not None else self.run_start_ns

    @property
    def completed(self) -> bool:
        return self.status == "completed"

    def phase(self, name: str) -> PhaseWindow | None:
        return next((p for p in self.phases if p.name == name), None)

    def fault(self, fault_id: str) -> FaultWindow | None:
        """The fault with this id; a kind matches too when exactly one fault has it."""
        hit = next((f for f in self.faults if f.fault_id == fault_id), None)
        if hit is None:
            by_kind = [f for f in self.faults if f.kind == fault_id]
            hit = by_kind[0] if len(by_kind) == 1 else None
        return hit


def _int(v: Any) -> int | None:
    return int(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def build_timeline(events: Iterable[Mapping[str, Any]]) -> Timeline:
    """Fold the events (in file order) into a `Timeline`. Unknown events and keys are ignored."""
    tl = Timeline()
    faults: dict[str, FaultWindow] = {}
    for ev in events:
        name, wall = ev.get("event"), _int(ev.get("wall_ns"))
        if wall is None:
            continue
        if name == c.EVENT_RUN_START:
            tl.run_start_ns = wall
            tl.run_id = ev.get("run_id") or tl.run_id
        elif name == c.EVENT_RUN_END:
            tl.run_end_ns = wall
            tl.status = ev.get("status") if ev.get("status") in c.RUN_END_STATUSES else "unknown"
            tl.error = ev.get("error")
        elif name == c.EVENT_SEARCH_START and isinstance(ev.get("phase"), str):
            tl.searched.append(ev["phase"])
        elif name == c.EVENT_LOAD_START:
            tl.load_start_ns = wall if tl.load_start_ns is None else tl.load_start_ns
        elif name == c.EVENT_LOAD_STOP:
            tl.load_stop_ns = wall
        elif name == c.EVENT_PHASE_START:
            tl.phases.append(PhaseWindow(name=str(ev.get("phase")), index=_int(ev.get("index")) or len(tl.phases),
                                         start_ns=wall, duration_s=ev.get("duration_s"), rate=ev.get("rate")))
        elif name == c.EVENT_PHASE_END:
            ph = next((p for p in reversed(tl.phases) if p.name == ev.get("phase") and not p.ended), None)
            if ph is not None:
                ph.end_ns, ph.ended = wall, True
        elif name == c.EVENT_FAULT:
            _fault_event(faults, ev, wall)
        elif name == c.EVENT_CONSUMERS_BEHIND:
            tl.consumers_behind.append({k: v for k, v in ev.items() if isinstance(v, str | int) or v is None})
        elif name == c.EVENT_HARNESS_FAILED:
            tl.failures.append({k: v for k, v in ev.items() if isinstance(v, str | int | float | bool) or v is None})
        elif name == c.EVENT_READBACK_START:
            tl.readback_started = True
        elif name == c.EVENT_READBACK_END:
            tl.readback_ended = True
            tl.readback_rows = _int(ev.get("rows"))
            nodes = ev.get("nodes")  # the nodes read: a list, or {node: rows}
            tl.readback_nodes = [str(n) for n in nodes] if isinstance(nodes, list | dict) else None
    _close_phases(tl)
    tl.faults = list(faults.values())
    return tl


def _fault_event(faults: dict[str, FaultWindow], ev: Mapping[str, Any], wall: int) -> None:
    fid = str(ev.get("fault_id") or ev.get("kind") or "fault")
    action, status = ev.get("action"), ev.get("status")
    repeats = [k for k in faults if k == fid or k.startswith(f"{fid}#")]
    if action == "apply" and status == "started" and repeats and faults[repeats[-1]].apply_started_ns is not None:
        repeats.append(f"{fid}#{len(repeats) + 1}")  # the same fault applied again: a window of its own
    key = repeats[-1] if repeats else fid
    f = faults.setdefault(key, FaultWindow(fault_id=key))
    f.kind = ev.get("kind") or f.kind
    f.target = ev.get("target") or f.target
    if status == "failed":
        f.errors.append(f"{action} failed: {ev.get('error') or 'no error text'}")
        f.failed_ns.setdefault(str(action), wall)
    if action == "apply" and status == "started" and f.apply_started_ns is None:
        f.apply_started_ns = wall
    elif action == "apply" and status == "ok":
        f.applied_ns = wall
    elif action == "verify" and status == "ok" and f.verified_ns is None:
        f.verified_ns = wall
        if isinstance(ev.get("evidence"), dict):
            f.evidence = dict(ev["evidence"])
    elif action == "revert" and status == "started" and f.revert_started_ns is None:
        f.revert_started_ns = wall
    elif action == "revert" and status == "ok":
        f.reverted_ns = wall


def _close_phases(tl: Timeline) -> None:
    """A phase without `phase_end` ends at the next phase's start, else at load stop / run end (if any)."""
    for i, ph in enumerate(tl.phases):
        ph.complete = ph.ended or i + 1 < len(tl.phases)
        if ph.end_ns is not None:
            continue
        if i + 1 < len(tl.phases):
            ph.end_ns = tl.phases[i + 1].start_ns
        elif tl.load_stop_ns is not None and tl.load_stop_ns >= ph.start_ns:
            ph.end_ns = tl.load_stop_ns
        elif tl.run_end_ns is not None and tl.run_end_ns >= ph.start_ns:
            ph.end_ns = tl.run_end_ns

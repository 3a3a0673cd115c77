"""The `Fault` base class: parameters checked by a pydantic model, `apply` (journaled first), `verify` (polls a
measurement until the effect is seen or a deadline passes), `revert` (replays the journaled undo operations, then
measures that the effect is gone), each reported as `fault` events."""
from __future__ import annotations

import os
import time
import uuid
from abc import ABC, abstractmethod
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, ValidationError

from faults import guard
from faults.errors import FaultError, FaultNotEffective, FaultRefused, UndoError, not_back
from faults.events import Emit, discard, fault_event
from faults.journal import Entry, Journal
from faults.system.tools import have_tool, require_root
from faults.target import NodeTarget, resolve
from faults.undo import UndoContext, run_ops

POLL_S = 0.02
COMPACT_CHARS = 240
"""The default `shortfall` names at most this much of the evidence."""


def compact(evidence: Any, limit: int = COMPACT_CHARS) -> str:
    """`key=value` pairs of a (nested) evidence dict on one line, cut at `limit` characters."""
    if isinstance(evidence, dict):
        text = ", ".join(f"{k}={compact(v, limit)}" for k, v in evidence.items() if k != "verify_s")
    else:
        text = " ".join(str(evidence).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


class FaultParams(BaseModel):
    """Base of every fault's `Params`: unknown keys are refused."""

    model_config = ConfigDict(extra="forbid")


def params_error(kind: str, err: ValidationError, model: type[BaseModel]) -> FaultRefused:
    first = err.errors()[0]
    key = ".".join(str(x) for x in first["loc"]) or "params"
    allowed = ", ".join(model.model_fields) or "none"
    return FaultRefused(f"{kind}: params.{key}: {first['msg']} (allowed keys: {allowed})")


class Fault(ABC):
    """One fault on one node. Subclasses set `kind`, `summary`, `Params` and implement the hooks below."""

    kind: ClassVar[str]
    summary: ClassVar[str]
    Params: ClassVar[type[FaultParams]] = FaultParams
    VERIFY_TIMEOUT_S: ClassVar[float] = 5.0
    target_roles: ClassVar[tuple[str, ...]] = ()
    """Roles this fault can act on (empty: any node); scenario validation reads it."""
    ONE_SHOT: ClassVar[bool] = False
    """A one-shot fault (restart) has nothing to revert: its journal entry is closed right after apply."""
    NEEDS_ROOT: ClassVar[bool] = False
    """True when the fault changes what only root may (mounts, cgroups, swap): `problems` and `check` say so."""
    TOOLS: ClassVar[tuple[str, ...]] = ()
    """Programs the fault runs (`fsfreeze`, `mkswap`, ...): `problems` names each one missing."""
    CONTAINER_TARGETS: ClassVar[bool] = False
    """True when this class also acts on a container node (compose backend), on the host resources the backend
    gives it (the store's loop mount, the container's cgroups, the HA relay, the node's control)."""
    DOCKER_VARIANT: ClassVar[str | None] = None
    """`module:Class` of the subclass that acts on a container node through the Docker API; constructing this class
    for a container target builds that one (so the registry, the harness and `restore` need not know)."""

    def __new__(cls, target: NodeTarget, *args: Any, **kwargs: Any) -> Fault:
        if cls.DOCKER_VARIANT and getattr(target, "container", None):
            cls = resolve(cls.DOCKER_VARIANT)
        return super().__new__(cls)

    def __init__(self, target: NodeTarget, params: BaseModel | dict | None = None, *, journal: Journal,
                 emit: Emit | None = None, fault_id: str | None = None) -> None:
        self.target = target
        self.params = self.parse_params(params)
        self.journal = journal
        self.emit = emit or discard
        self.fault_id = fault_id or f"{self.kind}-{uuid.uuid4().hex[:8]}"
        self.tag = Journal.new_id("f")
        """Journal entry id and `RMQ_CHAOS_TAG` of helper processes: unique even when a scenario reuses fault ids."""
        self.entry_id: str | None = None
        self.state: dict[str, Any] = {}
        self.undo: list[dict] = []
        self.reverted = False

    # ---- description -------------------------------------------------------------------------------------------
    @classmethod
    def parse_params(cls, raw: BaseModel | dict | None) -> Any:
        if isinstance(raw, cls.Params):
            return raw
        try:
            return cls.Params.model_validate(dict(raw or {}) if not isinstance(raw, BaseModel) else raw.model_dump())
        except ValidationError as e:
            raise params_error(cls.kind, e, cls.Params) from None

    @classmethod
    def describe(cls) -> dict:
        """Kind, summary and parameters (name -> type, default, description) for `fault list` and docs."""
        params = {}
        for name, f in cls.Params.model_fields.items():
            params[name] = {"type": getattr(f.annotation, "__name__", str(f.annotation)).replace("typing.", ""),
                            "default": None if f.is_required() else f.default, "required": f.is_required(),
                            "description": f.description or ""}
        return {"kind": cls.kind, "summary": cls.summary, "params": params}

    @classmethod
    def problems(cls) -> list[str]:
        """What this machine lacks for the fault (root, tools, kernel features); empty when it can run."""
        root = ["needs root"] if cls.NEEDS_ROOT and os.geteuid() != 0 else []
        return root + [f"missing tool {t}" for t in cls.TOOLS if not have_tool(t)]

    # ---- hooks ---------------------------------------------------------------------------------------------------
    def check(self) -> None:
        """Refuse targets/params this fault cannot act on (raise FaultRefused/FaultUnavailable). Runs before apply."""
        guard.check_node(self.kind, self.target, containers=self.CONTAINER_TARGETS)
        if self.NEEDS_ROOT:
            require_root(self.kind)

    def claims(self) -> list[str]:
        """Resources this fault changes; two open entries may not claim the same one."""
        return []

    @abstractmethod
    def plan(self) -> list[dict]:
        """Undo operations, computed before the change is made (journaled first)."""

    @abstractmethod
    def inject(self) -> dict:
        """Make the change; returns evidence. May extend `self.undo` / `self.state` (re-journaled after)."""

    @abstractmethod
    def measure(self) -> tuple[bool, dict]:
        """(effect present?, evidence) -- one measurement."""

    def shortfall(self, evidence: dict) -> tuple[str, str]:
        """(what was measured, the bound it had to meet), each a short phrase, for the one line of a
        `FaultNotEffective` (`<fault id> (<kind> on <target>): not effective: <measured> against <bound>`). The
        default names the evidence's keys and values compactly; a fault says it in its own words."""
        return compact(evidence), f"the effect of {self.kind} measured within {self.VERIFY_TIMEOUT_S:g} s"

    def not_effective(self, evidence: dict) -> FaultNotEffective:
        """The one-line error of a verify that did not measure the effect (no newline, whatever the evidence)."""
        measured, bound = self.shortfall(evidence)
        text = f"{self.fault_id} ({self.kind} on {self.target.name}): not effective: {measured} against {bound}"
        return FaultNotEffective(" ".join(text.split()), evidence)

    def measure_gone(self) -> dict:
        """Evidence that the effect is gone after revert (raise FaultNotEffective if it is not)."""
        return {}

    def undo_context(self) -> UndoContext:
        controls = {self.target.name: self.target.control} if self.target.control is not None else {}
        return UndoContext(controls=controls, on_step=self._step)

    # ---- the three actions -----------------------------------------------------------------------------------------
    def _event(self, action: str, status: str, **extra: Any) -> None:
        self.emit(fault_event(self.fault_id, self.kind, self.target.name, action, status, **extra))

    def _step(self, step: str, status: str, evidence: dict | None, error: str | None) -> None:
        self._event("step", status, step=step, evidence=evidence, error=error)

    def entry_data(self) -> dict:
        return {"fault_id": self.fault_id, "kind": self.kind, "params": self.params.model_dump(mode="json"),
                "target": self.target.to_json(), "state": self.state}

    def apply(self) -> dict:
        """Check, journal the undo plan (fsync), make the change. On failure, what was done is undone."""
        params = self.params.model_dump(mode="json")
        self._event("apply", "started", params=params)
        try:
            self.check()
            self.undo = self.plan()
            self.entry_id = self.journal.begin(f"fault:{self.kind}", undo=self.undo, claims=self.claims(),
                                               run_id=self.target.run_id, target=self.target.name,
                                               data=self.entry_data(), entry_id=self.tag)
            evidence = self.inject()
            self.journal.update(self.entry_id, undo=self.undo, data={"state": self.state})
            if self.ONE_SHOT:
                self.journal.done(self.entry_id, "one-shot")
                self.reverted = True
        except Exception as e:
            rollback = self._rollback()
            self._event("apply", "failed", params=params, error=str(e), evidence=rollback,
                        node_not_back=True if not_back(e) else None)  # a `restart` that did not come back
            raise
        self._event("apply", "ok", params=params, evidence=evidence)
        return evidence

    def _rollback(self) -> dict | None:
        if self.entry_id is None:
            return None
        try:
            results = run_ops(self.undo, self.undo_context())
            self.journal.done(self.entry_id, "rolled back")
            return {"rolled_back": results}
        except UndoError as e:
            return {"rollback_failed": str(e), "results": e.results}

    def verify(self, timeout_s: float | None = None) -> dict:
        """Poll `measure` until the effect is seen; `FaultNotEffective` with the last evidence after the deadline."""
        self._event("verify", "started")
        t0 = time.monotonic()
        deadline = t0 + (self.VERIFY_TIMEOUT_S if timeout_s is None else timeout_s)
        while True:
            try:
                ok, evidence = self.measure()
            except FaultError as e:
                self._event("verify", "failed", error=str(e))
                raise
            if ok or time.monotonic() >= deadline:
                break
            time.sleep(POLL_S)
        evidence["verify_s"] = round(time.monotonic() - t0, 4)
        if not ok:
            error = self.not_effective(evidence)
            self._event("verify", "failed", evidence=evidence, error=str(error))
            raise error
        self._event("verify", "ok", evidence=evidence)
        return evidence

    def revert(self) -> dict:
        """Replay the undo operations, mark the journal entry done, measure that the effect is gone. Idempotent."""
        if self.entry_id is None or self.reverted:
            reason = "not applied" if self.entry_id is None else ("one-shot" if self.ONE_SHOT else "already reverted")
            return {"reverted": False, "reason": reason}
        self._event("revert", "started")
        try:
            results = self.before_revert()
            results += run_ops(self.undo, self.undo_context())
            self.journal.done(self.entry_id, "reverted")
            self.reverted = True
            evidence = {"undo": results, **self.measure_gone()}
        except Exception as e:
            # `node_not_back`: the node the revert starts again did not come back (analysis: nodes_not_back)
            self._event("revert", "failed", error=str(e), node_not_back=True if not_back(e) else None)
            raise
        self._event("revert", "ok", evidence=evidence)
        return evidence

    def before_revert(self) -> list[dict]:
        """In-process work before the undo ops (e.g. cancel a pending restart timer)."""
        return []

    # ---- rebuilt from the journal (CLI) --------------------------------------------------------------------------
    @classmethod
    def restore(cls, entry: Entry, journal: Journal, emit: Emit | None = None) -> Fault:
        """The fault of an open journal entry, rebuilt so the CLI can verify or revert it."""
        target = NodeTarget.from_json(entry.data["target"], journal)
        fault = cls(target, entry.data.get("params"), journal=journal, emit=emit, fault_id=entry.data["fault_id"])
        fault.tag = fault.entry_id = entry.id
        fault.undo, fault.state = list(entry.undo), dict(entry.data.get("state", {}))
        fault.reverted = entry.done
        return fault

"""What a fault acts on: `NodeTarget`, one node of a cluster the harness manages (its processes, cgroups, store
mount, ports, a control to stop/start it), handed to faults by a backend; and its JSON form, so the CLI can rebuild
the targets of a running cluster from the cluster state file (see `faults.cluster_state`)."""
from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from faults.errors import FaultRefused
from faults.system.procs import ProcId

if TYPE_CHECKING:
    from faults.journal import Journal

ROLES = ("namesrv", "master", "slave")


@runtime_checkable
class NodeControl(Protocol):
    """Stops and starts one node; a backend provides it. `to_json` (optional) makes it rebuildable from a state file
    and returns `{"factory": "module:callable", ...}`, where `callable(data, journal)` builds the control again."""

    def stop(self) -> None: ...

    def start(self) -> None: ...

    def wait_ready(self, timeout_s: float) -> None: ...

    def wait_caught_up(self, timeout_s: float) -> None: ...


class PidSource:
    """A callable giving a node's current main pids, with a JSON form."""

    def __call__(self) -> list[int]:
        raise NotImplementedError

    def to_json(self) -> dict:
        raise NotImplementedError


class StaticPids(PidSource):
    """A fixed set of processes (by pid and start time); those that are gone drop out."""

    def __init__(self, procs: list[ProcId]) -> None:
        self.procs = procs

    def __call__(self) -> list[int]:
        return [p.pid for p in self.procs if p.alive()]

    def to_json(self) -> dict:
        return {"static": [p.to_json() for p in self.procs]}


class PidFile(PidSource):
    """A file holding `<pid> <start ticks>` of the node's main process, rewritten at every start."""

    def __init__(self, path: str) -> None:
        self.path = path

    def read(self) -> ProcId | None:
        try:
            with open(self.path, encoding="ascii") as f:
                pid, start = f.read().split()[:2]
        except (OSError, ValueError):
            return None
        return ProcId(int(pid), int(start))

    def __call__(self) -> list[int]:
        p = self.read()
        return [p.pid] if p and p.alive() else []

    def write(self, proc: ProcId) -> None:
        tmp = self.path + ".tmp"
        with open(tmp, "w", encoding="ascii") as f:
            f.write(f"{proc.pid} {proc.start}\n")
        os.replace(tmp, self.path)

    def to_json(self) -> dict:
        return {"pidfile": self.path}


def pid_source_from_json(data: dict) -> PidSource:
    if "pidfile" in data:
        return PidFile(data["pidfile"])
    if "static" in data:
        return StaticPids([ProcId.from_json(p) for p in data["static"]])
    raise FaultRefused(f"pid source: unknown form {sorted(data)} (allowed: pidfile, static)")


def pid_source_to_json(pids: Callable[[], list[int]]) -> dict:
    """JSON of a pid source; a plain callable is frozen into the processes it names now."""
    if isinstance(pids, PidSource):
        return pids.to_json()
    return StaticPids([p for p in (ProcId.of(pid) for pid in pids()) if p]).to_json()


def resolve(ref: str) -> Any:
    """`"package.module:attr.attr"` -> the object."""
    module, _, attr = ref.partition(":")
    obj: Any = importlib.import_module(module)
    for part in filter(None, attr.split(".")):
        obj = getattr(obj, part)
    return obj


def build_from_factory(data: dict, journal: Journal | None) -> Any:
    """The object a `{"factory": "module:callable", ...}` JSON form names: `callable(data, journal)`."""
    return resolve(data["factory"])(data, journal)


@dataclass
class NodeTarget:
    """One node of a cluster the harness manages. Built by a backend, handed to faults."""

    name: str
    role: str
    run_id: str
    pids: Callable[[], list[int]]
    cgroups: dict[str, str] = field(default_factory=dict)
    store_mount: str | None = None
    store_device: str | None = None
    store_image: str | None = None
    ports: dict[str, int] = field(default_factory=dict)
    control: NodeControl | None = None
    container: str | None = None
    extras: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict:
        control = None
        if self.control is not None and hasattr(self.control, "to_json"):
            control = self.control.to_json()
        return {"name": self.name, "role": self.role, "run_id": self.run_id,
                "pids": pid_source_to_json(self.pids), "cgroups": dict(self.cgroups),
                "store_mount": self.store_mount, "store_device": self.store_device, "store_image": self.store_image,
                "ports": dict(self.ports), "control": control, "container": self.container,
                "extras": dict(self.extras)}

    @classmethod
    def from_json(cls, data: dict, journal: Journal | None = None) -> NodeTarget:
        """Rebuild a target; its control is rebuilt by the factory it names (needs `journal` to journal restarts)."""
        control = None
        spec = data.get("control")
        if spec and journal is not None:
            control = build_from_factory(spec, journal)
        return cls(name=data["name"], role=data["role"], run_id=data["run_id"],
                   pids=pid_source_from_json(data["pids"]), cgroups=dict(data.get("cgroups") or {}),
                   store_mount=data.get("store_mount"), store_device=data.get("store_device"),
                   store_image=data.get("store_image"), ports=dict(data.get("ports") or {}), control=control,
                   container=data.get("container"), extras=dict(data.get("extras") or {}))

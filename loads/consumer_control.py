"""A consumer process's control file, which changes what its listener does while it runs, and `ControlFiles`, the
handle the harness gives the `consumer_stuck` fault on the control files of one or more processes.

The control file is one JSON object, written atomically (temp file + rename) by `write_control(path, stuck=...,
processing_ms=..., release=...)`; `loads.consumers.ConsumerFleet.set_stuck/clear_stuck` and `ControlFiles` write
it. The process polls it every 100 ms (`loads.consumer_behaviour`):

- `stuck`: `{"share": 0..1, "hold_s": s}` or null (off); absent: the group spec's `stuck`.
- `processing_ms`: listener time per message; absent or null: the group spec's `processing`.
- `release`: true frees every consume thread blocked by a stuck message at the moment the file is read (each write
  with `release` true releases once; `serial` tells writes apart). Blocks that start later block again while
  `stuck` is on.

The process reports what it does in `<control file>.status` (`{"blocked": N, "released": M, "pid": P}`, written
atomically whenever a consume thread starts or stops being blocked).
"""
from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

from loads.consumer_spec import StuckSpec

STATUS_SUFFIX = ".status"
FACTORY = "loads.consumer_control:ControlFiles.from_json"


def _write_atomically(path: Path, doc: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(json.dumps(doc), encoding="utf-8")
    os.replace(tmp, path)


def _read_object(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def write_control(path: str | os.PathLike[str], stuck: StuckSpec | dict[str, float] | None = None,
                  processing_ms: float | None = None, release: bool = False) -> Path:
    """Write a consumer's control file atomically. `stuck=None` turns the stuck behaviour off (the spec's is no
    longer used); `processing_ms=None` keeps the spec's processing time."""
    p = Path(path)
    if isinstance(stuck, dict):
        stuck = StuckSpec.model_validate(stuck)
    doc: dict[str, Any] = {"stuck": stuck.model_dump() if stuck is not None else None, "release": bool(release),
                           "serial": time.time_ns()}
    if processing_ms is not None:
        if processing_ms < 0:
            raise ValueError(f"processing_ms: {processing_ms} must be >= 0")
        doc["processing_ms"] = processing_ms
    _write_atomically(p, doc)
    return p


def read_control(path: str | os.PathLike[str] | None) -> dict[str, Any] | None:
    """The control file's object, None when there is none (or it is not a JSON object)."""
    return None if path is None else _read_object(path)


def write_status(control_path: str | os.PathLike[str], **fields: Any) -> None:
    """`<control file>.status`, written atomically (temp file + rename)."""
    _write_atomically(Path(f"{control_path}{STATUS_SUFFIX}"), fields)


def read_status(control_path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The process's last report next to its control file; None before its first."""
    return _read_object(f"{control_path}{STATUS_SUFFIX}")


class ControlFiles:
    """The control files of some consumer processes, as `faults.consumer_stuck` acts on them (its
    `ConsumerListeners`): `hold` makes a share of messages block a consume thread, `release` ends that and frees the
    blocked threads, `blocked` reads back what the processes report. `to_json()` names `from_json` as the factory,
    so a journaled undo releases them again after a crash."""

    def __init__(self, files: list[str]) -> None:
        self.files = [str(f) for f in files]

    def hold(self, share: float, hold_s: float) -> None:
        for path in self.files:
            write_control(path, stuck={"share": share, "hold_s": hold_s}, release=False)

    def release(self) -> int:
        """No stuck share, blocked threads released. A file whose directory is gone (its run's) is left alone:
        nothing reads it. Returns the files written."""
        done = 0
        for path in self.files:
            if Path(path).parent.exists():
                write_control(path, stuck=None, release=True)
                done += 1
        return done

    def blocked(self) -> dict[str, int]:
        """Consume threads blocked now per control file, as its process last reported (0 before a report)."""
        return {f: int((read_status(f) or {}).get("blocked") or 0) for f in self.files}

    def holding(self) -> dict[str, Any]:
        """The `stuck` setting each control file holds (None: off, or no file)."""
        return {f: (read_control(f) or {}).get("stuck") for f in self.files}

    def to_json(self) -> dict[str, Any]:
        return {"factory": FACTORY, "files": list(self.files)}

    @classmethod
    def from_json(cls, data: dict[str, Any], journal: Any = None) -> ControlFiles:
        return cls(list(data.get("files") or []))

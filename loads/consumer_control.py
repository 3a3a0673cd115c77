"""What a consumer process's listener does with a message, and the control file that changes it while it runs.

The control file is one JSON object, written atomically (temp file + rename) by `write_control(path, stuck=...,
processing_ms=..., release=...)`; `loads.consumers.ConsumerFleet.set_stuck/clear_stuck` and the harness's
`consumer_stuck` fault write it. The process polls it every `POLL_S`:

- `stuck`: `{"share": 0..1, "hold_s": s}` or null (off); absent: the group spec's `stuck`.
- `processing_ms`: listener time per message; absent or null: the group spec's `processing`.
- `release`: true frees every consume thread blocked by a stuck message at the moment the file is read (each write
  with `release` true releases once; `serial` tells writes apart). Blocks that start later block again while
  `stuck` is on.

The process reports what it does in `<control file>.status` (`{"blocked": N, "released": M, "pid": P}`, written
atomically whenever a consume thread starts or stops being blocked), so the `consumer_stuck` fault's verify
measures blocked threads instead of trusting its own write.

`Behaviour.consume(msgs)` sleeps the processing time, blocks on the stuck share (until `hold_s` passes or a
release), and answers RECONSUME_LATER for the `reconsume_share` of first deliveries (`reconsume_times == 0`).
"""
from __future__ import annotations

import json
import logging
import os
import random
import threading
import time
from pathlib import Path
from typing import Any

from loads.consumer_spec import GroupSpec, StuckSpec

log = logging.getLogger(__name__)

POLL_S = 0.1
CONSUME_SUCCESS = "CONSUME_SUCCESS"
RECONSUME_LATER = "RECONSUME_LATER"


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
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(json.dumps(doc), encoding="utf-8")
    os.replace(tmp, p)
    return p


STATUS_SUFFIX = ".status"


def write_status(control_path: str | os.PathLike[str], **fields: Any) -> None:
    """`<control file>.status`, written atomically (temp file + rename)."""
    p = Path(f"{control_path}{STATUS_SUFFIX}")
    tmp = p.with_name(f".{p.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(json.dumps(fields), encoding="utf-8")
    os.replace(tmp, p)


def read_control(path: str | os.PathLike[str] | None) -> dict[str, Any] | None:
    """The control file's object, None when there is none (or it is not a JSON object)."""
    if path is None:
        return None
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


class Behaviour:
    """The listener's behaviour: the spec, overridden by the control file (polled in a daemon thread)."""

    def __init__(self, spec: GroupSpec, control_path: str | os.PathLike[str] | None, seed: str = "") -> None:
        self.spec = spec
        self.control_path = control_path
        self.stuck: StuckSpec | None = spec.stuck
        self.processing_ms = spec.processing
        self.blocked = 0
        self.released = 0
        self._random = random.Random(seed)
        self._rlock = threading.Lock()
        self._blocks: set[threading.Event] = set()
        self._lock = threading.Lock()
        self._report_lock = threading.Lock()
        self._last: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.poll()

    def start(self) -> None:
        if self._thread is None and self.control_path is not None:
            self._thread = threading.Thread(target=self._loop, name="consumer-control", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _loop(self) -> None:
        while not self._stop.wait(POLL_S):
            try:
                self.poll()
            except Exception:
                log.exception("reading control file %s failed", self.control_path)

    def poll(self) -> None:
        """Read the control file; apply it when it changed."""
        doc = read_control(self.control_path)
        if doc is None:
            return
        text = json.dumps(doc, sort_keys=True)
        if text == self._last:
            return
        self._last = text
        stuck = doc.get("stuck", "absent")
        self.stuck = self.spec.stuck if stuck == "absent" else (StuckSpec.model_validate(stuck) if stuck else None)
        pm = doc.get("processing_ms")
        self.processing_ms = self.spec.processing if pm is None else float(pm)
        log.info("control: stuck=%s processing_ms=%s release=%s", self.stuck, self.processing_ms,
                 doc.get("release"))
        if doc.get("release"):
            self.release()

    def release(self) -> int:
        """Free every consume thread blocked now. Returns how many."""
        with self._lock:
            blocks, self._blocks = self._blocks, set()
        for e in blocks:
            e.set()
        self.released += len(blocks)
        self._report()
        return len(blocks)

    def _report(self) -> None:
        if self.control_path is None:
            return
        with self._report_lock:  # read and written together: the last write holds the last figures
            with self._lock:
                blocked, released = self.blocked, self.released
            try:
                write_status(self.control_path, blocked=blocked, released=released, pid=os.getpid())
            except OSError:
                log.exception("writing the status next to %s failed", self.control_path)

    def _draw(self) -> float:
        with self._rlock:
            return self._random.random()

    def consume(self, msgs: list) -> str:
        """What the listener does with one call's messages; returns its answer."""
        if self.processing_ms:
            time.sleep(self.processing_ms * len(msgs) / 1000.0)
        stuck = self.stuck
        if stuck is not None and stuck.share > 0 and any(self._draw() < stuck.share for _ in msgs):
            self._block(stuck.hold_s)
        share = self.spec.reconsume_share
        if share and any(getattr(m, "reconsume_times", 0) == 0 for m in msgs) and self._draw() < share:
            return RECONSUME_LATER
        return CONSUME_SUCCESS

    def _block(self, hold_s: float) -> None:
        event = threading.Event()
        with self._lock:
            self._blocks.add(event)
            self.blocked += 1
        self._report()
        try:
            event.wait(hold_s)
        finally:
            with self._lock:
                self._blocks.discard(event)
                self.blocked -= 1
            self._report()

    def hold_forever(self) -> None:
        """Block the calling consume thread until the process exits (a delivery after the stop began)."""
        threading.Event().wait()

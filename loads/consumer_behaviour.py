"""What a consumer process's listener does with a message: `Behaviour.consume(msgs)` sleeps the processing time,
blocks a consume thread on the stuck share (until `hold_s` passes or a release), and answers RECONSUME_LATER for the
`reconsume_share` of first deliveries (`reconsume_times == 0`).

It starts from the group's `GroupSpec` and follows the process's control file (`loads.consumer_control`), polled
every `POLL_S` in a daemon thread; it reports the threads it blocks in `<control file>.status` whenever one starts
or stops being blocked, so the `consumer_stuck` fault's verify measures blocked threads instead of trusting its own
write.
"""
from __future__ import annotations

import json
import logging
import os
import random
import threading
import time

from loads.consumer_control import read_control, write_status
from loads.consumer_spec import GroupSpec, StuckSpec

log = logging.getLogger(__name__)

POLL_S = 0.1
CONSUME_SUCCESS = "CONSUME_SUCCESS"
RECONSUME_LATER = "RECONSUME_LATER"


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

"""`ConsumerFleet`: the consumer processes of a run, one OS process per consumer instance (`python -m
loads.consumer`), so a kill is a real kill and a stuck thread is a real blocked thread.

    with ConsumerFleet([GroupSpec(name="orders", consumers=2)], namesrv, "ChaosTopic", run_dir, run_id) as fleet:
        ...                                        # start() on enter: every consumer started (ready line)
        fleet.set_stuck("orders", share=0.1, hold_s=60)
        fleet.kill("orders.c1")                    # SIGKILL, wait, salvage its journal
        fleet.restart("orders.c1")                 # a new process orders.c1.r1
        fleet.clear_stuck("orders", release=True)
    # stop() on exit: SIGTERM all, wait, salvage those that died; {group: rows}

Workers are `<group>.c<i>`, a restarted one `<group>.c<i>.r<n>`; every process is ended by its own pid. Children log
to `<run_dir>/logs/consumers/<worker>.log`; their control files are `<run_dir>/control/consumers/<worker>.json`
(one per instance index, kept across restarts). For faults: `pids(target)`, `control(worker)` (stop, start,
wait_ready, wait_caught_up) and `listeners(target)` (the control files, for `consumer_stuck`).
"""
from __future__ import annotations

import atexit
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from loads.consume_recorder import rows_in_parts
from loads.consume_recorder import salvage as salvage_journal
from loads.consumer import DEFAULT_DRAIN_S, DEFAULT_FACTORY
from loads.consumer_control import ControlFiles, write_control
from loads.consumer_spec import GroupSpec, StuckSpec

__all__ = ["ConsumerError", "ConsumerFleet", "ConsumerWorker", "write_control"]

log = logging.getLogger(__name__)

START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 30.0
KILL_WAIT_S = 10.0
LOG_SUBDIR = ("logs", "consumers")
CONTROL_SUBDIR = ("control", "consumers")


class ConsumerError(RuntimeError):
    """A consumer process failed to start or an unknown worker/group was named; the message names the log."""


@dataclass
class ConsumerWorker:
    """One consumer process (a restart is a new worker with the same group and index)."""

    name: str
    group: str
    index: int
    restart: int
    control_path: Path
    log_path: Path
    proc: subprocess.Popen = field(repr=False)
    client_id: str | None = None
    ready: threading.Event = field(default_factory=threading.Event, repr=False)
    result: dict[str, Any] | None = None
    salvaged: int = 0
    flow_control: list[tuple[int, int]] = field(default_factory=list, repr=False)
    """(wall ns, times so far) as the process reported them: how often its client held a pull back."""

    def flow_control_between(self, start_ns: int, end_ns: int) -> int:
        """Pulls held back (flow control) reported in [start_ns, end_ns)."""
        before = [n for t, n in self.flow_control if t < start_ns]
        within = [n for t, n in self.flow_control if start_ns <= t < end_ns]
        return max(within) - (before[-1] if before else 0) if within else 0

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None


class ConsumerFleet:
    """Start, steer and stop the consumer processes of a run."""

    def __init__(self, groups: Iterable[GroupSpec], namesrv_addr: str, topic: str, run_dir: str | os.PathLike[str],
                 run_id: str, profile: str = "java-4.9.1", *, drain_s: float = DEFAULT_DRAIN_S,
                 python: str | None = None, factory: str = DEFAULT_FACTORY) -> None:
        """`groups` are validated already (the scenario's `consumers.groups`, or `loads.parse_groups` for a caller
        holding mappings); each child process reads its group back from JSON."""
        self.groups: dict[str, GroupSpec] = {}
        for g in groups:
            if not isinstance(g, GroupSpec):
                raise TypeError(f"ConsumerFleet takes validated GroupSpecs (see loads.parse_groups), got "
                                f"{type(g).__name__}")
            self.groups[g.name] = g
        self.namesrv_addr, self.topic = namesrv_addr, topic
        self.run_dir, self.run_id, self.profile = Path(run_dir), run_id, profile
        self.drain_s = drain_s
        self.python = python or sys.executable
        self.factory = factory
        self.log_dir = self.run_dir.joinpath(*LOG_SUBDIR)
        self.control_dir = self.run_dir.joinpath(*CONTROL_SUBDIR)
        self.workers: dict[str, ConsumerWorker] = {}
        """The current process of every instance, by worker name."""
        self.history: list[ConsumerWorker] = []
        """Every process started, in order (restarted ones included)."""
        self._logs: list[IO] = []
        self._started = False
        self._stopped = False
        self._lock = threading.RLock()

    # --- lifecycle --------------------------------------------------------------------------------------------

    def start(self, timeout_s: float = START_TIMEOUT_S) -> None:
        """Start every consumer process and wait until each reports its consumer started."""
        if self._started:
            raise ConsumerError("this ConsumerFleet was already started")
        self._started = True
        atexit.register(self._at_exit)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        try:
            spawned = [self._spawn(g, i, 0) for g in self.groups.values() for i in range(g.consumers)]
            deadline = time.monotonic() + timeout_s
            for w in spawned:
                self._wait_ready(w, deadline)
        except BaseException:
            self.kill_all()
            raise

    def _spawn(self, group: GroupSpec, index: int, restart: int) -> ConsumerWorker:
        name = group.worker(index, restart)
        control = self.control_dir / f"{group.worker(index)}.json"
        log_path = self.log_dir / f"{name}.log"
        log_file = open(log_path, "ab")  # noqa: SIM115 - closed in _close_logs
        self._logs.append(log_file)
        argv = [self.python, "-m", "loads.consumer", "--spec", group.model_dump_json(), "--run-dir",
                str(self.run_dir), "--run-id", self.run_id, "--worker", name, "--namesrv", self.namesrv_addr,
                "--topic", self.topic, "--control", str(control), "--profile", self.profile, "--drain-s",
                str(self.drain_s), "--factory", self.factory]
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log_file,
                                start_new_session=True, close_fds=True)
        w = ConsumerWorker(name, group.name, index, restart, control, log_path, proc)
        threading.Thread(target=self._read, args=(w,), name=f"consumer-{name}", daemon=True).start()
        with self._lock:
            self.workers = {k: v for k, v in self.workers.items()
                            if not (v.group == group.name and v.index == index)}
            self.workers[name] = w
            self.history.append(w)
        return w

    def _read(self, w: ConsumerWorker) -> None:
        assert w.proc.stdout is not None
        for line in w.proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if not isinstance(msg, dict):
                continue
            if msg.get("type") == "ready":
                w.client_id = msg.get("client_id")
                w.ready.set()
            elif msg.get("type") == "flow_control" and isinstance(msg.get("t_ns"), int):
                w.flow_control.append((msg["t_ns"], int(msg.get("times") or 0)))
            elif msg.get("type") in ("stopped", "failed"):
                w.result = msg

    def _wait_ready(self, w: ConsumerWorker, deadline: float) -> None:
        while not w.ready.wait(0.1):
            if w.proc.poll() is not None:
                raise ConsumerError(f"consumer {w.name} exited with code {w.proc.returncode} before it started: "
                                    f"{_tail(w.log_path)}")
            if time.monotonic() > deadline:
                raise ConsumerError(f"consumer {w.name} did not start in time; see {w.log_path}")

    # --- steering ---------------------------------------------------------------------------------------------

    def worker(self, name: str) -> ConsumerWorker:
        w = self.workers.get(name) or next((h for h in reversed(self.history) if h.name == name), None)
        if w is None:
            raise ConsumerError(f"no consumer worker {name!r}; workers: {', '.join(self.workers) or 'none'}")
        return w

    def select(self, target: str) -> list[ConsumerWorker]:
        """The current workers of `target`: a group name (all its instances) or a worker name."""
        if target in self.groups:
            return [w for w in self.workers.values() if w.group == target]
        w = self.workers.get(target)
        if w is None:
            found = [v for v in self.workers.values() if self.groups[v.group].worker(v.index) == target]
            if found:
                return found
            raise ConsumerError(f"consumer target {target!r}: not a group ({', '.join(self.groups)}) nor a worker "
                                f"({', '.join(self.workers)})")
        return [w]

    def flow_control_between(self, group: str, start_ns: int, end_ns: int) -> int:
        """Pulls the group's processes (restarted ones too) held back in [start_ns, end_ns), as reported."""
        with self._lock:
            history = [w for w in self.history if w.group == group]
        return sum(w.flow_control_between(start_ns, end_ns) for w in history)

    def pids(self, target: str | None = None) -> list[int]:
        """Pids of the live workers of `target` (a group or worker; None: all)."""
        workers = self.workers.values() if target is None else self.select(target)
        return [w.pid for w in workers if w.alive]

    def kill(self, worker: str, sig: int = signal.SIGKILL, wait: bool = True) -> ConsumerWorker:
        """Send `sig` to the worker's process (by its pid). With `wait` and a signal that ends it, wait for the exit
        and salvage its journal."""
        w = self.worker(worker)
        if w.alive:
            os.kill(w.pid, sig)
            if sig in (signal.SIGTERM, signal.SIGINT):
                _signal(w, signal.SIGCONT)  # a frozen process could not act on it
        if wait and sig not in (signal.SIGSTOP, signal.SIGTSTP, signal.SIGCONT):
            try:
                w.proc.wait(max(KILL_WAIT_S, self.drain_s + KILL_WAIT_S))
            except subprocess.TimeoutExpired:
                raise ConsumerError(f"consumer {w.name} did not exit after signal {sig}") from None
            self.salvage(w.name)
        return w

    def salvage(self, worker: str) -> int:
        """Turn the journal rows of a dead worker that no part holds into a part. Returns the rows written."""
        w = self.worker(worker)
        if w.alive:
            raise ConsumerError(f"consumer {w.name} is still running (pid {w.pid}); salvage only a dead one")
        n = salvage_journal(self.run_dir, w.name)
        w.salvaged += n
        if n:
            log.info("consumer %s: salvaged %d rows from its journal", w.name, n)
        return n

    def restart(self, worker: str, timeout_s: float = START_TIMEOUT_S) -> ConsumerWorker:
        """Stop the worker (SIGTERM) if it still runs, salvage it, start a new process for the same instance
        (`<group>.c<i>.r<n>`) and wait until it is ready."""
        old = self.worker(worker)
        if old.alive:
            self.kill(old.name, signal.SIGTERM)
        else:
            self.salvage(old.name)
        restarts = max(h.restart for h in self.history if h.group == old.group and h.index == old.index)
        w = self._spawn(self.groups[old.group], old.index, restarts + 1)
        self._wait_ready(w, time.monotonic() + timeout_s)
        return w

    def set_stuck(self, target: str, share: float, hold_s: float, processing_ms: float | None = None) -> None:
        """From now on, `share` of the messages of `target` (group or worker) block a consume thread for `hold_s`."""
        stuck = StuckSpec(share=share, hold_s=hold_s)
        for w in self.select(target):
            write_control(w.control_path, stuck=stuck, processing_ms=processing_ms)

    def clear_stuck(self, target: str, release: bool = True) -> None:
        """No more stuck messages for `target`; with `release`, the threads blocked now are freed too."""
        for w in self.select(target):
            write_control(w.control_path, stuck=None, release=release)

    def listeners(self, target: str) -> ControlFiles:
        """The control files of `target` (group or worker), one per instance and kept across its restarts: what
        the `consumer_stuck` fault acts on."""
        return ControlFiles([str(w.control_path) for w in self.select(target)])

    def control(self, worker: str) -> ConsumerControl:
        """A fault's handle on one instance: stop (SIGTERM + salvage), start (a restart), wait_ready."""
        return ConsumerControl(self, worker)

    # --- ending -----------------------------------------------------------------------------------------------

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> dict[str, int]:
        """SIGTERM every live worker, wait (SIGKILL after `timeout_s`), salvage every worker. Idempotent. Returns
        the rows recorded per group (all its processes, restarted ones included)."""
        with self._lock:
            if not self._stopped and self._started:
                live = [w for w in self.history if w.alive]
                for w in live:
                    _signal(w, signal.SIGCONT)  # a frozen one could not act on SIGTERM
                    _signal(w, signal.SIGTERM)
                deadline = time.monotonic() + timeout_s
                for w in live:
                    try:
                        w.proc.wait(max(0.1, deadline - time.monotonic()))
                    except subprocess.TimeoutExpired:
                        log.error("consumer %s did not stop within %.0f s; killing it", w.name, timeout_s)
                        w.proc.kill()
                        w.proc.wait()
                for w in self.history:
                    self.salvage(w.name)
                self._close_logs()
                self._stopped = True
        return self.rows()

    def rows(self) -> dict[str, int]:
        """Rows in the parts per group (restarted processes included)."""
        out = {g: 0 for g in self.groups}
        for w in self.history:
            out[w.group] += rows_in_parts(self.run_dir, w.name)
        return out

    def kill_all(self) -> None:
        """Last resort: SIGKILL every live worker, then salvage their journals."""
        with self._lock:
            for w in self.history:
                if w.alive:
                    _signal(w, signal.SIGKILL)
            for w in self.history:
                w.proc.wait()
                self.salvage(w.name)
            self._close_logs()
            self._stopped = True

    def _close_logs(self) -> None:
        for f in self._logs:
            f.close()
        self._logs.clear()
        atexit.unregister(self._at_exit)

    def _at_exit(self) -> None:
        if self._started and not self._stopped:
            self.stop()

    def __enter__(self) -> ConsumerFleet:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class ConsumerControl:
    """`faults.target.NodeControl` for one consumer instance: `stop()` ends its process (SIGTERM, salvage),
    `start()` starts the instance again as `<group>.c<i>.r<n>`, `wait_ready()` waits for its ready line."""

    def __init__(self, fleet: ConsumerFleet, worker: str) -> None:
        w = fleet.worker(worker)
        self.fleet, self.group, self.index = fleet, w.group, w.index

    @property
    def current(self) -> ConsumerWorker:
        return next(w for w in reversed(self.fleet.history) if w.group == self.group and w.index == self.index)

    def pids(self) -> list[int]:
        w = self.current
        return [w.pid] if w.alive else []

    def stop(self) -> None:
        w = self.current
        if w.alive:
            self.fleet.kill(w.name, signal.SIGTERM)

    def start(self) -> None:
        w = self.current
        if not w.alive:
            self.fleet.restart(w.name)

    def wait_ready(self, timeout_s: float) -> None:
        w = self.current
        self.fleet._wait_ready(w, time.monotonic() + timeout_s)

    def wait_caught_up(self, timeout_s: float) -> None:
        self.wait_ready(timeout_s)


def _signal(w: ConsumerWorker, sig: int) -> None:
    try:
        if w.alive:
            os.kill(w.pid, sig)
    except ProcessLookupError:
        pass


def _tail(path: Path) -> str:
    try:
        lines = [ln for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return f"see {path}"
    return (lines[-1] if lines else "no output") + f" (log: {path})"

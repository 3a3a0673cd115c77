"""`LoadProcess`: the harness's handle on a running load. Locust runs headless in child processes (`loads.headless`)
so gevent's monkey-patching never reaches the harness process, which also drives faults and Spark.

    with LoadProcess(spec, run_dir, run_id, workers=0) as load:   # start() on enter, stop() on exit
        load.set_phase("healthy", rate=2000)
        ...load.stats()...                                         # {"rate", "outcomes", "p99_ms", ...}
    # every row is in run_dir/requests/part-*.parquet

`workers=0` runs the users in one child; `workers=N` runs a Locust master child plus N worker children on this
machine (a scenario's default is `default_workers()`: half the cores where there are 4 or more). The children get their own session, so a Ctrl-C on the terminal reaches only the harness, which stops
the load in order; should the harness die, the control pipe closes and the load drains and exits by itself.
Children log to `run_dir/logs/load/`.
"""
from __future__ import annotations

import atexit
import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from loads import control
from loads.spec import LoadSpec, parse_spec
from loads.tally import LoadStats

log = logging.getLogger(__name__)

START_TIMEOUT_S = 90.0
COMMAND_TIMEOUT_S = 15.0
STOP_MARGIN_S = 30.0
EXIT_TIMEOUT_S = 15.0
WATCH_INTERVAL_S = 0.2
LOG_SUBDIR = ("logs", "load")
LISTEN_HOST = "127.0.0.1"


def default_workers() -> int:
    """Worker processes where cores allow: half the cores this process may run on when there are 4 or more (each
    worker is a single-threaded gevent loop, one core at most; the brokers of a local or compose cluster run on the
    same machine and need the other half), else 0 (one local process). On 2 cores a second load process only takes
    CPU from the brokers: the same real 4.9.1 gave rmq-chaos 90 % of Apache's benchmark Producer with one process and
    85 % with two (docs/loads.md)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        cores = os.cpu_count() or 1
    return cores // 2 if cores >= 4 else 0


def exit_words(code: int | None) -> str:
    """A return code as words: `exit 1`, `killed by SIGKILL`, `still running`."""
    if code is None:
        return "still running"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit {code}"


class LoadError(RuntimeError):
    """The load process failed to start or to carry out a command; the message names its log file."""


def free_port(host: str = LISTEN_HOST) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


class LoadProcess:
    """Start, steer and stop the load of one run."""

    def __init__(self, spec: LoadSpec | Mapping[str, Any], run_dir: str | os.PathLike[str], run_id: str,
                 workers: int = 0, *, python: str | None = None, progress: bool = False,
                 remote: Any = None) -> None:
        """`remote`: workers started elsewhere (load hosts): an object with `count` (how many),
        `listen_host` (this machine's address they reach), `start(spec_json, master_host, master_port, run_id)`
        and `lost() -> list[str]` (one line per worker that ended before the stop); the master listens on
        `listen_host` and waits for them beside the `workers` started here."""
        if workers < 0:
            raise ValueError(f"workers: {workers} must be >= 0")
        self.spec = spec if isinstance(spec, LoadSpec) else parse_spec(dict(spec))
        self.run_dir = Path(run_dir)
        self.run_id = run_id
        self.workers = workers
        self.python = python or sys.executable
        self.progress = progress
        self.log_dir = self.run_dir.joinpath(*LOG_SUBDIR)
        self.master: subprocess.Popen | None = None
        self.worker_procs: list[subprocess.Popen] = []
        self.remote = remote
        self.result: dict[str, Any] | None = None
        self._finished = False
        self._logs: list[IO] = []
        self._replies = control.Replies()
        self._events: dict[str, threading.Event] = {k: threading.Event() for k in
                                                    (control.MSG_LISTENING, control.MSG_READY, control.MSG_STOPPED)}
        self._listening: dict[str, Any] = {}
        self._stats: dict[str, Any] = LoadStats(state="starting").to_json()
        self._reader: threading.Thread | None = None
        self._write_lock = threading.Lock()
        self._view = None
        self._stopping = False
        self.failure: dict[str, Any] | None = None
        """Set (`{"error", "worker", "t_ns"}`) the moment a load process says its rows can no longer be written."""
        self.on_failure: Any = None
        """Called once, in the reader thread, with that dict."""

    # --- lifecycle --------------------------------------------------------------------------------------------

    @property
    def pids(self) -> list[int]:
        """The process ids of the load's children (master or local first)."""
        return [p.pid for p in ([self.master] if self.master else []) + self.worker_procs]

    @property
    def running(self) -> bool:
        return self.master is not None and self.master.poll() is None and self.result is None

    @property
    def finished(self) -> bool:
        """True once `stop()` or `kill()` has reaped every child and cleaned up."""
        return self._finished

    def start(self, phase: str | None = None, timeout_s: float = START_TIMEOUT_S) -> dict[str, Any]:
        """Start the children, wait until every worker is connected, start the users (in `phase`, default the
        spec's initial phase). Returns the number of users and the target rate."""
        if self.master is not None:
            raise LoadError("this LoadProcess was already started")
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        # the spec the children read is kept with their logs: nothing of a run lives outside its directory, so a
        # run killed by SIGKILL leaves nothing behind in /tmp (one file per LoadProcess: a run may start several)
        fd, name = tempfile.mkstemp(prefix="spec-", suffix=".json", dir=self.log_dir)
        os.close(fd)
        spec_file = self.spec.to_file(name)
        common = ["--spec", str(spec_file), "--run-dir", str(self.run_dir), "--run-id", self.run_id]
        remote = self.remote.count if self.remote is not None else 0
        role = "master" if self.workers or remote else "local"
        host = self.remote.listen_host if remote else LISTEN_HOST
        port = free_port(host) if role == "master" else 0
        atexit.register(self._at_exit)
        try:
            self.master = self._spawn(role, [*common, "--role", role, "--master-host", host, "--master-port",
                                             str(port), "--expect-workers", str(self.workers + remote)],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE)
            self._reader = threading.Thread(target=self._read, name="load-control", daemon=True)
            self._reader.start()
            deadline = time.monotonic() + timeout_s
            if role == "master":
                self._wait_event(control.MSG_LISTENING, deadline, "listen for workers")
            if remote:
                self.remote.start(self.spec.model_dump_json(), host, port, self.run_id)
            if self.workers:
                for i in range(self.workers):
                    self.worker_procs.append(self._spawn(
                        f"worker-{i + 1}", [*common, "--role", "worker", "--master-port", str(port),
                                            "--master-pid", str(self.master.pid)], stdin=subprocess.DEVNULL,
                        stdout=None))
            self._wait_event(control.MSG_READY, deadline, "get ready")
            if self.worker_procs or remote:
                threading.Thread(target=self._watch_workers, name="load-workers", daemon=True).start()
            result = self._command(control.CMD_START, phase=phase, at_ns=time.time_ns(),
                                   timeout_s=max(1.0, deadline - time.monotonic()))
        except BaseException:
            self.kill()
            raise
        if self.progress:
            from loads.progress import ProgressView

            self._view = ProgressView(self.stats)
            self._view.start()
        return result

    def _spawn(self, name: str, args: list[str], stdin: Any, stdout: Any) -> subprocess.Popen:
        log_file = open(self.log_dir / f"{name}.log", "ab")  # noqa: SIM115 - closed in _cleanup
        self._logs.append(log_file)
        return subprocess.Popen([self.python, "-m", "loads.headless", *args], stdin=stdin,
                                stdout=stdout if stdout is not None else log_file, stderr=log_file,
                                start_new_session=True, close_fds=True)

    def set_phase(self, name: str, rate: float | None = None, timeout_s: float = COMMAND_TIMEOUT_S,
                  at_ns: int | None = None) -> dict:
        """Phase `name` is current from now on (or from wall `at_ns`, a moment just past), in every worker; `rate`
        (sends/s of the whole load; None: the phase's rate in the spec, else unchanged) applies from then. Rows are
        labelled by their intended time."""
        return self._command(control.CMD_PHASE, name=name, rate=rate, at_ns=at_ns or time.time_ns(),
                             timeout_s=timeout_s)

    def stats(self) -> dict[str, Any]:
        """The latest progress figures: `rate`, `outcomes`, `p99_ms`, `lag_p99_ms`, `fired`, `completed`,
        `in_flight`, `rows_written`, `phase`, `state`, ... (see `loads.tally.LoadStats`)."""
        return dict(self._stats)

    def stop(self, timeout_s: float | None = None) -> dict[str, Any]:
        """Stop the load in order and wait until every row is written and every child has exited. Idempotent.
        Returns the totals (`fired`, `rows`, `parts`, per worker) and the final figures."""
        if self.master is None:
            return {}
        if not self._finished:
            self._stopping = True
            timeout_s = self.spec.drain_s + STOP_MARGIN_S if timeout_s is None else timeout_s
            stopped = self._events[control.MSG_STOPPED]
            if self.master.poll() is None and not stopped.is_set():
                try:
                    self._send({"id": self._replies.next_id(), "cmd": control.CMD_STOP})
                except OSError:
                    pass
            if not stopped.wait(timeout_s):
                log.error("load did not report stopped within %.0f s; see %s", timeout_s, self.log_dir)
            self._reap(EXIT_TIMEOUT_S)
            if self.result is None:
                self.result = {"reason": "exited without a report", "result": {}, "stats": self.stats()}
            self.result["exit_codes"] = {str(p.pid): p.returncode for p in [self.master, *self.worker_procs]}
            self._cleanup()
            self._finished = True
        return self.result

    def kill(self) -> None:
        """Last resort: SIGKILL the children (rows not yet written are lost)."""
        self._stopping = True
        for p in [self.master, *self.worker_procs]:
            if p is not None and p.poll() is None:
                p.kill()
        self._reap(EXIT_TIMEOUT_S)
        self._cleanup()
        self._finished = True

    def __enter__(self) -> LoadProcess:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- internals --------------------------------------------------------------------------------------------

    def _reap(self, timeout_s: float) -> None:
        """Wait for the children; SIGTERM (which drains) and then SIGKILL the ones that do not exit."""
        procs = [p for p in [self.master, *self.worker_procs] if p is not None]
        deadline = time.monotonic() + timeout_s
        for p in procs:
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout_s)
            except subprocess.TimeoutExpired:
                log.error("load process %d did not exit after SIGTERM; killing it", p.pid)
                p.kill()
                p.wait()

    def _cleanup(self) -> None:
        if self._view is not None:
            self._view.stop()
            self._view = None
        if self.master is not None and self.master.stdin is not None and not self.master.stdin.closed:
            try:
                self.master.stdin.close()
            except OSError:
                pass
        for f in self._logs:
            f.close()
        self._logs.clear()
        atexit.unregister(self._at_exit)

    def _at_exit(self) -> None:
        if self.master is not None and not self._finished:
            self.stop()

    def _send(self, message: dict[str, Any]) -> None:
        with self._write_lock:
            self.master.stdin.write(control.encode(message))
            self.master.stdin.flush()

    def _command(self, cmd: str, timeout_s: float = COMMAND_TIMEOUT_S, **fields: Any) -> dict[str, Any]:
        if not self.running:
            raise LoadError(f"the load process is not running; see {self.log_dir}")
        try:
            reply = self._replies.ask(self._send, {"cmd": cmd, **fields}, timeout_s)
        except TimeoutError:
            raise LoadError(f"{cmd}: no answer from the load process within {timeout_s:g} s; "
                            f"see {self.log_dir}") from None
        if reply is None:
            raise LoadError(f"{cmd}: the load process exited; see {self.log_dir}")
        if not reply.get("ok"):
            raise LoadError(f"{cmd}: {reply.get('error')}")
        return reply.get("result") or {}

    def _wait_event(self, name: str, deadline: float, what: str) -> None:
        while not self._events[name].wait(0.1):
            if self.master.poll() is not None:
                raise LoadError(f"the load process exited with code {self.master.returncode} before it could "
                                f"{what}: {self._log_tail()}")
            dead = [p for p in self.worker_procs if p.poll() is not None]
            if dead:
                raise LoadError(f"load worker {dead[0].pid} exited with code {dead[0].returncode}; see "
                                f"{self.log_dir}")
            if time.monotonic() > deadline:
                raise LoadError(f"the load process did not {what} in time; see {self.log_dir}")

    def _log_tail(self) -> str:
        path = self.log_dir / f"{'master' if self.workers else 'local'}.log"
        try:
            lines = [ln for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
        except OSError:
            return f"see {self.log_dir}"
        return (lines[-1] if lines else "no output") + f" (log: {path})"

    def _read(self) -> None:
        assert self.master is not None and self.master.stdout is not None
        for msg in control.messages(self.master.stdout):
            kind = msg.get("type")
            if kind == control.MSG_REPLY:
                self._replies.deliver(msg)
            elif kind == control.MSG_STATS:
                msg.pop("type")
                self._stats = msg
            elif kind == control.MSG_LISTENING:
                self._listening = msg
                self._events[kind].set()
            elif kind == control.MSG_READY:
                self._events[kind].set()
            elif kind == control.MSG_FAILED:
                if self.failure is None:
                    self.failure = {k: v for k, v in msg.items() if k != "type"}
                    if self.on_failure is not None:
                        self.on_failure(self.failure)
            elif kind == control.MSG_STOPPED:
                self.result = {k: v for k, v in msg.items() if k != "type"}
                self._stats = dict(msg.get("stats") or self._stats)
                self._events[kind].set()
        self._replies.close()  # the child is gone: nobody will answer
        if not self._events[control.MSG_STOPPED].is_set():
            self._lost(self.master)

    def _watch_workers(self) -> None:
        """A worker process that ends before the load stopped is a loss the run must hear of within a second."""
        while not self._events[control.MSG_STOPPED].is_set() and not self._finished:
            for p in self.worker_procs:
                if p.poll() is not None:
                    self._lost(p)
                    return
            gone = self.remote.lost() if self.remote is not None and not self._stopping else []
            if gone and self.failure is None:
                self.failure = {"error": f"{gone[0]}: its unwritten rows are lost", "worker": "remote",
                                "t_ns": time.time_ns(), "lost": True}
                if self.on_failure is not None:
                    self.on_failure(self.failure)
                return
            time.sleep(WATCH_INTERVAL_S)

    def _lost(self, proc: subprocess.Popen | None) -> None:
        """A load process ended without its stop report: its unwritten rows are lost."""
        if proc is None or self.failure is not None or self._stopping:
            return
        try:
            code = proc.wait(WATCH_INTERVAL_S * 5)
        except subprocess.TimeoutExpired:
            code = None
        self.failure = {"error": f"load process {proc.pid} ended without writing its last rows "
                                 f"({exit_words(code)}); see {self.log_dir}",
                        "worker": "master" if proc is self.master else f"pid {proc.pid}", "t_ns": time.time_ns(),
                        "lost": True}
        if self.on_failure is not None:
            self.on_failure(self.failure)

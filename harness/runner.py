"""One run of one scenario: the flow of DESIGN.md "Flow of one run".

journal cleanup of dead runs -> run directory -> backend up (ready: route + slave caught up; effective config read
back into cluster.json and compared) -> collectors -> consumers (scenario `consumers:`: started, listed by the
broker, lag collector; `harness.consumerstage`) -> load (warm-up phase) -> phases on the schedule (faults applied
and verified at a phase's start, reverted at its end; the load told each phase) -> load stop -> consumers drained
and stopped -> read-back -> faults kept for the read-back reverted -> collectors stop, logs copied -> backend down
(unless kept) -> analysis.

Ctrl-C / SIGTERM at any point, or a part of the harness failing (its records can no longer be written, its load
process died: `harness.watch`): the load stops first (rows sent after the moment are labelled `interrupted`, never
the phase it cut short), then the consumers, and only then are faults reverted, so no row is recorded while the
cluster changes back; then collectors, logs, cluster down, `run_end` with status `interrupted` or `failed`; the
directory stays analyzable. A second signal ends the process at once, saying what `rmq-chaos cleanup` will undo
(`harness.interrupts`); a signal during the analysis stops the analysis (the verdict is unknown).
"""
from __future__ import annotations

import signal
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness import interrupts, run_end, run_ids
from harness.collectors.thread_dumps import for_backend as thread_dumps_of
from harness.faultdriver import FaultDriver
from harness.node_exits import exited, node_exits
from harness.progress import RunProgress
from harness.readback import describe, incomplete_queues
from harness.rundir import RunDir
from harness.scenario import Scenario
from harness.scenario.phases import INTERRUPTED_PHASE
from harness.timeline import Clock, build_timeline
from harness.watch import HarnessFailed, RunWatch

EXIT_UNKNOWN = run_end.EXIT_UNKNOWN
READBACK_END_QUEUE_KEYS = ("node", "broker", "queue_id", "status", "read_to", "max_offset", "rows", "error",
                           "response_code", "remark")
"""What `readback_end.incomplete` says of each queue not read completely (the whole entry is in queues.json)."""
STATUS_COMPLETED, STATUS_INTERRUPTED, STATUS_FAILED = "completed", "interrupted", "failed"


class RunInterrupted(BaseException):
    """Raised in the main thread by SIGINT/SIGTERM (a BaseException so `except Exception` does not swallow it)."""


@dataclass
class RunResult:
    run_dir: Path
    status: str
    error: str | None = None
    exit_code: int = EXIT_UNKNOWN
    extras: dict[str, Any] = field(default_factory=dict)


class Runner:
    def __init__(self, scenario: Scenario, out_dir: str | Path, *, keep_cluster: bool = False,
                 analyze: bool = True, state_dir: str | Path | None = None, progress: RunProgress | None = None,
                 run_id: str | None = None, held: Any = None) -> None:
        self.scenario = scenario
        self.held = held
        """A `harness.cluster_reuse.HeldCluster`: the run borrows the cluster it holds (when it proves healthy) and
        hands its own back to it when the run ends well, instead of taking it down."""
        self.out_dir = Path(out_dir)
        self.keep_cluster = keep_cluster
        self.analyze = analyze
        self.state_dir = state_dir
        self.run_id = run_id
        self._progress = progress
        self._stop = threading.Event()
        self._cleaning = False
        self._signal: str | None = None
        self._watch: RunWatch | None = None
        self._warned: set[str] = set()
        self._fetch_rows: Any = None
        self._cut_ns: int | None = None
        """Wall time the run was cut short (a signal, a harness failure): rows intended from then are `interrupted`."""
        self._labelled = False
        self._dropped_before = 0
        self._state_path: Path | None = None
        self.kept: Any = None

    # --- signals ----------------------------------------------------------------------------------------------

    def _on_signal(self, signum: int, _frame: Any) -> None:
        name = signal.Signals(signum).name
        if self._signal:
            if self._progress:
                self._progress.stop()
            interrupts.exit_now(name, self._state_path, interrupts.hosts_of(self.scenario))
        if self._cleaning:
            self._signal = name
            self._say(f"{name}: winding down already (load stopped, faults reverted, cluster taken down); a second "
                      f"signal stops at once", "yellow")
            return
        self._signal = name
        self._say(f"{name}: winding down: load stopped, rows fetched, faults reverted, cluster taken down (a second "
                  f"signal stops at once)", "yellow")
        self._cut_ns = self._cut_ns or time.time_ns()
        if self._watch is not None:
            self._watch.interrupt(name)
        self._stop.set()
        raise RunInterrupted(name)

    def _install_signals(self) -> dict[int, Any]:
        if threading.current_thread() is not threading.main_thread():
            return {}
        return {s: signal.signal(s, self._on_signal) for s in (signal.SIGINT, signal.SIGTERM)}

    # --- the run ----------------------------------------------------------------------------------------------

    def run(self) -> RunResult:
        from faults.cleanup import cleanup
        from faults.journal import Journal, default_state_dir

        state_dir = Path(self.state_dir) if self.state_dir else default_state_dir()
        self._state_path = state_dir
        from harness.diskspace import check_space

        space_warnings = check_space(self.scenario, self.out_dir, state_dir)  # NotEnoughSpace: nothing made yet
        state_dir.mkdir(parents=True, exist_ok=True)
        previous = self._install_signals()
        rd = RunDir.create(self.out_dir, self.scenario, self.run_id)
        self._watch = RunWatch(rd.root, self._stop)
        self._watch.attach(rd)
        rd.on_failure = lambda error: self._watch.fail("events", error)
        progress = self._progress or RunProgress(rd.run_id, self.scenario.total_s)
        self._progress = progress
        rd.event("run_start", run_id=rd.run_id, scenario=self.scenario.name)
        status, error = STATUS_COMPLETED, None
        try:
            with progress:
                progress.step(f"run {rd.run_id} -> {rd.root}")
                for warning in space_warnings:
                    progress.step(f"warning: {warning}", "yellow")
                leftover = cleanup(state_dir)
                if _undid_something(leftover):
                    progress.step(f"cleaned up after a dead run: {_summary(leftover)}", "yellow")
                journal = Journal(state_dir)
                status, error = self._run_in(rd, journal, state_dir, progress)
        finally:
            for s, h in previous.items():
                signal.signal(s, h)
            run_ids.release(rd.run_id)  # the cluster is down (a kept one keeps its cgroups, which hold the name)
        rd.event("run_end", run_id=rd.run_id, scenario=self.scenario.name, status=status, error=error)
        run_end.compact_parts(rd.root, self._say)
        code, stopped = self._analysis(rd, status)
        if stopped and status == STATUS_COMPLETED:  # the run is whole; the command stops here (a matrix too)
            status, error = STATUS_INTERRUPTED, f"analysis stopped by {stopped}"
        return RunResult(rd.root, status, error, code)

    def hold_kept_cluster(self) -> None:
        """With `keep_cluster`: wait for SIGINT/SIGTERM, then take the kept cluster down."""
        if self.kept is None:
            return
        hold_until_signal()
        self.kept.down()
        self.kept = None

    def _run_in(self, rd: RunDir, journal: Any, state_dir: Path, progress: RunProgress) -> tuple[str, str | None]:
        from harness.backends.factory import make_backend

        try:
            backend = self.held.lend(self.scenario, rd, progress.step) if self.held is not None else None
            fresh = backend is None
            backend = backend or make_backend(self.scenario, rd, journal, state_dir)
        except RunInterrupted as sig:  # while a held cluster was proven healthy (and then taken down)
            rd.event("run_interrupted", signal=str(sig), **self._where())
            return STATUS_INTERRUPTED, f"signal {sig}"
        except Exception as err:  # noqa: BLE001 - e.g. the broker program is missing: nothing was started
            progress.step(f"run failed: {err}", "red")
            return STATUS_FAILED, f"{type(err).__name__}: {err}"
        stage = _Stage()
        status, error = STATUS_COMPLETED, None
        try:
            if fresh:
                progress.step(f"cluster: starting {', '.join(backend.node_order)}")
                backend.up(progress.step)
            stage.collector = backend.start_collectors()
            stage.collector.on_failure = lambda error: self._watch.fail("metrics", error)
            targets = dict(backend.targets)
            if self.scenario.consumers.groups:
                self._start_consumers(rd, backend, journal, stage, progress)
                targets.update(stage.consumers.targets)
            driver = FaultDriver(targets, journal, rd.append, getattr(backend, "resolve_target", None))
            stage.driver = driver
            if stage.consumers is not None:
                watch = self._watch
                stage.consumers.watch(lambda error, at: watch.fail("consumers", error, at),
                                      lambda worker: driver.acts_on(worker))
            stage.load = self._start_load(rd, backend)
            self._phases(rd, driver, stage, progress, thread_dumps_of(backend, rd.event, rd.layout.logs))
            self._stop_load(rd, stage)
            if stage.consumers is not None:
                stage.consumers.drain()
                stage.consumers.stop()
            if self.scenario.readback.enabled:
                self._read_back(rd, backend, progress)
            driver.revert("after_readback")
        except RunInterrupted as sig:
            self._label_cut(stage)
            status, error = STATUS_INTERRUPTED, f"signal {sig}"
            rd.event("run_interrupted", signal=str(sig), **self._where())
        except HarnessFailed as err:
            self._label_cut(stage)
            status, error = STATUS_FAILED, str(err)
            progress.step(error, "red")
        except Exception as err:  # noqa: BLE001 - any failure ends the run cleanly and is recorded
            status = STATUS_FAILED
            if self._watch is not None and self._watch.failure is not None:  # the cause, not what it broke next
                error = self._watch.failure
                progress.step(error, "red")
            elif _one_line_error(err):  # a refusal or the journal: its message says it all
                error = f"{rd.root}: {err}"
                progress.step(f"run failed: {error}", "red")
            else:
                error = f"{type(err).__name__}: {err}"
                exits = node_exits(rd, backend)
                if exits:
                    error += f" ({'; '.join(exits)})"
                progress.step(f"run failed: {error}", "red")
                traceback.print_exc(file=sys.stderr)
        finally:
            self._cleaning = True
            errors = self._wind_down(rd, backend, stage, progress, hand_back=status == STATUS_COMPLETED)
            if errors and status == STATUS_COMPLETED:
                status, error = STATUS_FAILED, "; ".join(errors)
        return status, error

    def _start_consumers(self, rd: RunDir, backend: Any, journal: Any, stage: _Stage, progress: RunProgress) -> None:
        from harness.consumerstage import ConsumerStage

        stage.consumers = ConsumerStage(self.scenario, rd, backend, journal, progress.step)  # wound down if start fails
        groups = ", ".join(f"{g.name} x{g.consumers}" for g in self.scenario.consumers.groups)
        progress.step(f"consumers: starting {groups}")
        started = stage.consumers.start()
        progress.step(f"consumers: listed by the master in {started['ready_s']:.1f} s", "green")

    def _start_load(self, rd: RunDir, backend: Any) -> Any:
        from harness.scenario import load_spec
        from loads.process import LoadProcess

        spec = load_spec(self.scenario, backend.namesrv_addr)
        remote = backend.load_hosts() if hasattr(backend, "load_hosts") else None
        workers = 0 if remote is not None else self.scenario.load.workers
        load = LoadProcess(spec, rd.root, rd.run_id, workers=workers, remote=remote)
        self._fetch_rows = getattr(backend, "fetch_load_rows", None)
        watch = self._watch
        load.on_failure = lambda f: watch.fail("load", f["error"], f.get("t_ns"), worker=f.get("worker"),
                                               lost=bool(f.get("lost")))
        load.start()
        rd.event("load_start", model=self.scenario.load.model, rate=self.scenario.load.rate,
                 users=sum(c.users or 0 for c in self.scenario.load.clients))
        return load

    def _phases(self, rd: RunDir, driver: FaultDriver, stage: _Stage, progress: RunProgress, dumps: Any) -> None:
        windows = build_timeline(self.scenario)
        clock = Clock()
        total = windows[-1].end_s
        for w in windows:
            self._watch.check()
            started = rd.event("phase_start", phase=w.name, index=w.index, duration_s=w.duration_s, rate=w.rate)
            self._watch.phase_started(w.name, started["wall_ns"])
            stage.load.set_phase(w.name, w.rate)
            self._dropped_before = (_stats(stage.load) or {}).get("dropped") or 0
            for spec, node in zip(w.faults, driver.nodes_of(w.faults), strict=True):
                on = spec.target if node == spec.target else f"{spec.target}, {node}"
                progress.step(f"{w.name}: applying {spec.id} ({spec.kind} on {on})")
                evidence = driver.apply(spec, node)
                progress.step(f"{w.name}: {spec.id} verified: {_short(evidence.get('verify'))}", "green")

            def tick(w=w) -> None:
                now = clock.now()
                if dumps is not None:
                    dumps.tick(w, now)
                stats = _stats(stage.load)
                if w.search is None:  # a search's steps say how far the load got behind
                    self._warn_schedule(w.name, stats, progress)
                progress.update(phase=w.name, index=w.index, phases=len(windows), phase_left_s=w.end_s - now,
                                run_left_s=total - now, stats=stats, faults=driver.active_ids,
                                consumers=stage.consumers.stats() if stage.consumers is not None else None)

            if w.search is not None:
                from harness.search.phase import run_search

                run_search(w, clock=clock, load=stage.load, rd=rd, stop=self._stop, tick=tick, say=progress.step,
                           lag=lambda: _largest_lag(stage))
            else:
                clock.wait_until(w.end_s, self._stop, tick)
            self._watch.check()
            if stage.consumers is not None:
                stage.consumers.judge_phase(w.name, started["wall_ns"], time.time_ns(), [f.target for f in w.faults])
            if any(f.revert == "phase_end" for f in w.faults):
                progress.step(f"{w.name}: reverting {', '.join(f.id or f.kind for f in w.faults)}")
                driver.revert("phase_end")
            rd.event("phase_end", phase=w.name, index=w.index, duration_s=w.duration_s, rate=w.rate)

    def _warn_schedule(self, phase: str, stats: dict[str, Any] | None, progress: RunProgress) -> None:
        """Say once per phase, while it runs, that the load is not keeping its schedule (slots dropped: the
        phase's expectations will be unknown) or is falling behind (half its lag bound)."""
        if not stats or phase in self._warned:
            return
        dropped, lag_ms = stats.get("dropped") or 0, stats.get("lag_ms") or 0.0
        bound_s = self.scenario.load.max_lag
        if dropped > self._dropped_before:
            self._warned.add(phase)
            progress.step(f"{phase}: the load is not keeping its schedule: {dropped - self._dropped_before} sends "
                          f"dropped (not started within {bound_s:g} s of their intended time); the expectations "
                          f"over this phase will be unknown", "yellow")
        elif lag_ms / 1000 > bound_s / 2 and f"lag:{phase}" not in self._warned:
            self._warned.add(f"lag:{phase}")
            progress.step(f"{phase}: the load is {lag_ms / 1000:.1f} s behind its schedule (bound {bound_s:g} s)",
                          "yellow")

    def _label_cut(self, stage: _Stage) -> None:
        """Rows intended from the moment the run was cut short are labelled `interrupted` (once, at once)."""
        if self._labelled or stage.load is None or stage.load_stopped or not stage.load.running:
            return
        self._labelled = True
        if self._cut_ns is None:
            failure = self._watch.failure_ns if self._watch is not None else None
            self._cut_ns = failure or time.time_ns()
        stage.load.set_phase(INTERRUPTED_PHASE, at_ns=self._cut_ns)

    def _where(self) -> dict[str, Any]:
        """The phase the run is in and how far into it (for interrupt and failure events)."""
        watch = self._watch
        phase = watch.phase if watch is not None else None
        if phase is None:
            return {"phase": None, "at_s": None}
        return {"phase": phase[0], "at_s": round((time.time_ns() - phase[1]) / 1e9, 3)}

    def _stop_load(self, rd: RunDir, stage: _Stage) -> None:
        if stage.load is not None and not stage.load_stopped:
            stage.load_stopped = True
            totals = stage.load.stop()
            if self._fetch_rows is not None:  # rows written on load hosts come home
                self._fetch_rows()
            rd.event("load_stop", model=self.scenario.load.model, rate=self.scenario.load.rate,
                     totals={k: v for k, v in (totals or {}).items() if k != "stats"})

    def _read_back(self, rd: RunDir, backend: Any, progress: RunProgress) -> None:
        """Read every queue back; a queue a broker could not serve is recorded in `readback/queues.json`, warned
        about, and listed in `readback_end` (`incomplete`): the read-back itself still ends. A node whose queues
        could not be read because its process died on its own fails the run after `readback_end` (the failure
        handler names it with a `node_exit` event)."""
        progress.step("read-back: pulling every queue from master and slave")
        rd.event("readback_start")
        try:
            counts = backend.read_back(self.scenario.readback.timeout)
        except OSError as err:
            from loads.recorder import write_error

            self._watch.fail("read-back", write_error(err, "read-back rows", rd.layout.readback))
            self._watch.check()
            raise
        finally:
            incomplete = incomplete_queues(rd.layout.readback)
            for q in incomplete:
                progress.step(f"read-back: {describe(q)}", "yellow")
        rd.event("readback_end", rows=sum(counts.values()), nodes=counts,
                 incomplete=[{k: q[k] for k in READBACK_END_QUEUE_KEYS} for q in incomplete])
        progress.step(f"read-back: {', '.join(f'{k} {v}' for k, v in counts.items())} messages"
                      + (f"; {len(incomplete)} queue(s) not read completely" if incomplete else ""),
                      "yellow" if incomplete else "")
        nodes = getattr(backend, "nodes", {})
        node_of = _readback_node(backend)
        dead = sorted(n for n in {node_of(q) for q in incomplete} if n in nodes and exited(nodes[n]))
        if dead:
            first = next(q for q in incomplete if node_of(q) == dead[0])
            raise RuntimeError(f"read-back: {', '.join(dead)} not running ({first['error']}: {first['remark']})")

    def _wind_down(self, rd: RunDir, backend: Any, stage: _Stage, progress: RunProgress,
                   hand_back: bool = False) -> list[str]:
        """Revert every fault, stop the load and collectors, copy logs, take the cluster down (or, `hand_back`
        with a `held` holder and nothing failed, hand it to the holder for the next run). Each step runs even when
        an earlier one failed; their errors are returned."""
        errors: list[str] = []

        def attempt(what: str, fn: Any) -> None:
            try:
                fn()
            except BaseException as err:  # noqa: BLE001 - clean-up continues whatever happens
                errors.append(f"{what}: {type(err).__name__}: {err}")
                progress.step(f"{what} failed: {err}", "red")

        if self._signal is not None or (self._watch is not None and self._watch.failure is not None):
            attempt("label the rows after the interrupt", lambda: self._label_cut(stage))
        attempt("stop load", lambda: self._stop_load(rd, stage))  # before anything changes the cluster back
        if stage.consumers is not None:
            attempt("stop consumers", stage.consumers.stop)
        if stage.driver is not None and stage.driver.active:
            progress.step(f"reverting {', '.join(stage.driver.active_ids)}")
            attempt("revert faults", stage.driver.revert)
        if stage.collector is not None:
            attempt("stop collectors", stage.collector.stop)
        if stage.consumers is not None:
            attempt("consumer lag collector", stage.consumers.close)
        attempt("copy logs", backend.copy_logs)
        if self.held is not None and hand_back and not errors and self._signal is None:
            progress.step(f"cluster: kept for the next run ({backend.cluster_id})")
            attempt("keep the cluster", lambda: self.held.take(backend))
        elif self.keep_cluster and not errors and self._signal is None:
            self.kept = backend
            progress.step(f"cluster kept ({backend.cluster_id}): this process holds it until Ctrl-C, SIGTERM or "
                          f"`rmq-chaos cluster down {backend.cluster_id}`", "yellow")
        else:
            progress.step("cluster: taking it down")
            attempt("cluster down", backend.down)
            if stage.driver is not None and stage.driver.active:
                attempt("settle the faults whose revert failed", lambda: self._settle(rd, stage.driver, progress))
        return errors

    @staticmethod
    def _settle(rd: RunDir, driver: Any, progress: RunProgress) -> None:
        """A fault whose revert failed (the node it restarts would not start) is replayed from its journal entry
        once the cluster is down, as `rmq-chaos cleanup` would replay it, so the run leaves no open entry. A fault
        run by a host's agent has no entry here: its agent settled it as the node was taken down."""
        from faults.cleanup import settle

        ids = [a.fault.entry_id for a in driver.active if getattr(a.fault, "entry_id", None)]
        if not ids:
            return
        report = settle(driver.journal, ids, emit=rd.append)
        report.raise_if_failed()
        progress.step(f"settled {len(report.reverted)} fault(s) whose revert failed, from the journal")

    def _say(self, text: str, style: str = "") -> None:
        if self._progress:
            self._progress.step(text, style)

    def _analysis(self, rd: RunDir, status: str) -> tuple[int, str | None]:
        """The verdict's exit code (`harness.run_end.analyze`; without the analysis, whether the run completed) and
        the signal that stopped the analysis, if one did."""
        if not self.analyze:
            return (0 if status == STATUS_COMPLETED else EXIT_UNKNOWN), None
        return run_end.analyze(rd.root, rd.layout.verdict, status == STATUS_COMPLETED, self._say)


def hold_until_signal() -> str:
    """Block until SIGINT or SIGTERM arrives; returns its name."""
    got: list[str] = []
    wake = threading.Event()

    def handler(signum: int, _frame: Any) -> None:
        got.append(signal.Signals(signum).name)
        wake.set()

    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        while not wake.wait(1.0):
            pass
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
    return got[0]


@dataclass
class _Stage:
    driver: FaultDriver | None = None
    collector: Any = None
    load: Any = None
    load_stopped: bool = False
    consumers: Any = None  # harness.consumerstage.ConsumerStage


def _one_line_error(err: BaseException) -> bool:
    """Errors whose message is the whole story (no traceback): the faults' refusals, a fault not verified (its
    measurement against its bound), journal errors, and what a host or its agent answered (one line naming the host:
    a fault on a host that could not be verified arrives so)."""
    from faults.errors import FaultError

    if isinstance(err, FaultError):
        return True
    if "harness.hosts.agent_client" in sys.modules:
        from harness.hosts.agent_client import AgentError
        from harness.hosts.deploy import HostError
        from harness.hosts.ssh import SshError

        return isinstance(err, AgentError | HostError | SshError)
    return False


def _readback_node(backend: Any) -> Any:
    """The node a read-back queue entry was read from: its `node` (the role read) with one broker group, the group's
    member of that role with several (`harness.topology`)."""
    topology = getattr(backend, "topology", None)
    if topology is None or topology.single:
        return lambda q: q["node"]

    def node(q: dict[str, Any]) -> str:
        group = next((g for g in topology.groups if g.name == q.get("broker")), None)
        member = group.member(q["node"]) if group is not None else None
        return member.node if member is not None else q["node"]

    return node


def _largest_lag(stage: _Stage) -> int | None:
    """The consumer groups' largest lag at the lag collector's last answer (None without consumers)."""
    if stage.consumers is None:
        return None
    lags = [g["lag"] for g in stage.consumers.stats().values() if g.get("lag") is not None]
    return max(lags) if lags else None


def _stats(load: Any) -> dict[str, Any] | None:
    try:
        return load.stats()
    except Exception:  # noqa: BLE001 - progress is best effort
        return None


def _short(evidence: Any, limit: int = 160) -> str:
    text = str(evidence)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _undid_something(report: Any) -> bool:
    return bool(report.reverted or report.failed or report.clusters_removed)


def _summary(report: Any) -> str:
    kinds = [f"{r['kind']} of {r.get('run_id') or '?'}" for r in report.reverted]
    text = f"{len(report.reverted)} reverted ({', '.join(kinds[:5])}{', ...' if len(kinds) > 5 else ''})"
    if report.failed:
        text += f"; {len(report.failed)} failed: {report.failed[0].get('error')}"
    return text

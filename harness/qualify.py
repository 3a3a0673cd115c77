"""A cluster for a test, outside a run: `Cluster` stands a scenario's cluster up through the harness's own backend
(`harness.backends.factory`, as `rmq-chaos cluster up` does), exposes what a test needs (name server and broker
addresses, the node targets faults act on, a producer factory) and takes everything down again. `Cluster.fault` is
a fault as a context manager: applied and verified on entry, reverted on exit even when the body raised. Every
cluster resource and every fault is journaled as owned by this process, so a process killed mid-test leaves a
journal that `rmq-chaos cleanup` (or the next cluster or run) undoes.

Example::

    with Cluster.up(load_one("scenarios/slave-readonly-default.yaml"), out="runs") as cluster:
        with cluster.producer() as producer:
            assert producer.send(cluster.message(b"x" * 128)).status == "SEND_OK"
        with cluster.fault("readonly_fs", "slave") as applied:
            print(applied.evidence["verify"])
"""
from __future__ import annotations

import signal
import sys
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from harness.scenario import Scenario

DEFAULT_SCENARIO: dict[str, Any] = {
    "name": "pytest-cluster",
    "description": "a cluster for a test (rmq_cluster's default): 4.9.1 emulator, SYNC_MASTER, one topic",
    "phases": [{"name": "test", "duration": "1s"}],
}
"""The scenario of `rmq_cluster` when a test names none (only its `cluster` and `topic` matter to a cluster)."""
RUN_ID_TIME = "%Y%m%dT%H%M%SZ"
PRODUCER_GROUP = "rmq-chaos-pytest"
SEND_TIMEOUT_MS = 3000


class ScenarioSourceError(ValueError):
    """A scenario given to a fixture or helper could not be used (one line, as `rmq-chaos validate` says it)."""


def load_one(source: str | Path | Mapping[str, Any] | Scenario, program: str | None = None,
             base: Path | None = None) -> Scenario:
    """The scenario of a file (relative paths are tried under `base` first), a dict (the same keys as a file) or a
    `Scenario`, fully validated, with `cluster.program` replaced by `program` when given. A matrix is refused."""
    from harness.backends.factory import BackendUnavailable, check, with_backend
    from harness.scenario import SourceError, load_scenario_text, load_scenarios

    try:
        if isinstance(source, Scenario):
            runs = [source]
        elif isinstance(source, Mapping):
            name = str(source.get("name", "scenario"))
            runs = load_scenario_text(f"<dict {name}>", yaml.safe_dump(dict(source), sort_keys=False))
        else:
            path = Path(source)
            if not path.is_absolute() and base is not None and (base / path).exists():
                path = base / path
            runs = load_scenarios(path)
    except SourceError as err:
        raise ScenarioSourceError(err.one_line()) from None
    if len(runs) != 1:
        raise ScenarioSourceError(f"{source}: a matrix of {len(runs)} runs; a cluster or a run here takes one "
                                  f"(pick one: {', '.join(r.name for r in runs)})")
    try:
        scenario = with_backend(runs[0], None, None, program)
        check(scenario)
    except BackendUnavailable as err:
        raise ScenarioSourceError(f"{runs[0].name}: {err}") from None
    if scenario.cluster.backend != "local":
        raise ScenarioSourceError(f"{scenario.name}: cluster.backend {scenario.cluster.backend!r}: the pytest "
                                  f"fixtures stand up the local backend only (use `rmq-chaos run` for compose)")
    return scenario


def new_run_id(scenario: Scenario, what: str) -> str:
    """Unique on this machine (cgroups are named by it), readable in `runs/`."""
    return f"{time.strftime(RUN_ID_TIME, time.gmtime())}-{scenario.name}-{what}-{uuid.uuid4().hex[:6]}"


@dataclass
class AppliedFault:
    """A fault in effect inside `Cluster.fault`: its id, kind, node and the evidence of apply and verify."""

    fault: Any  # faults.base.Fault
    evidence: dict[str, Any] = field(default_factory=dict)

    @property
    def fault_id(self) -> str:
        return self.fault.fault_id

    def verify(self) -> dict[str, Any]:
        """Measure the effect again (raises `FaultNotEffective` when it is gone)."""
        return self.fault.verify()


class Cluster:
    """A cluster that is up: `namesrv_addr`, `broker_addrs` (`master`, `slave`), `targets` (node name ->
    `faults.target.NodeTarget`), `topic`, `run_dir` (cluster.json, events.jsonl, logs after down), `scenario`."""

    def __init__(self, scenario: Scenario, backend: Any, rd: Any, journal: Any) -> None:
        self.scenario = scenario
        self.backend = backend
        self.rd = rd
        self.journal = journal
        self._faults: list[Any] = []
        self._producers: list[Any] = []

    # --- life ---------------------------------------------------------------------------------------------------

    @classmethod
    @contextmanager
    def up(cls, scenario: Scenario, out: str | Path, state_dir: str | Path | None = None,
           say: Any = None) -> Iterator[Cluster]:
        """Stand the cluster up (after the journal clean-up of dead owners, as every run starts) and take it down
        when the block ends, however it ends (an exception, KeyboardInterrupt)."""
        from faults.cleanup import cleanup
        from faults.journal import Journal, default_state_dir
        from harness.backends.factory import make_backend
        from harness.rundir import RunDir

        state = Path(state_dir) if state_dir else default_state_dir()
        state.mkdir(parents=True, exist_ok=True)
        cleanup(state)
        isolate_for(scenario)
        rd = RunDir.create(out, scenario, new_run_id(scenario, "cluster"))
        journal = Journal(state)
        backend = make_backend(scenario, rd, journal, state)
        cluster = cls(scenario, backend, rd, journal)
        try:
            backend.up(say or (lambda text: print(text, file=sys.stderr)))
            yield cluster
        finally:
            cluster.down()

    def down(self) -> None:
        """Close the producers, revert faults still in effect (newest first), copy the logs, take the cluster down;
        every step is tried, the first error is raised after all of them."""
        errors: list[BaseException] = []
        with signals_deferred() as got:
            self._down_steps(errors)
        if got:
            raise KeyboardInterrupt(got[0])
        if errors:
            raise errors[0]

    def _down_steps(self, errors: list[BaseException]) -> None:
        steps = [*(p.close for p in reversed(self._producers)), *(f.revert for f in reversed(self._faults)),
                 self.backend.copy_logs, self.backend.down]
        self._producers, self._faults = [], []
        for step in steps:
            try:
                step()
            except Exception as err:  # noqa: BLE001 - take everything down, report the first failure
                errors.append(err)

    # --- what a test uses ---------------------------------------------------------------------------------------

    @property
    def namesrv_addr(self) -> str:
        return self.backend.namesrv_addr

    @property
    def broker_addrs(self) -> dict[str, str]:
        return dict(self.backend.broker_addrs)

    @property
    def targets(self) -> dict[str, Any]:
        return self.backend.targets

    @property
    def topic(self) -> str:
        return self.scenario.topic.name

    @property
    def run_dir(self) -> Path:
        return self.rd.root

    @property
    def cluster_id(self) -> str:
        return self.backend.cluster_id

    def producer(self, group: str = PRODUCER_GROUP, profile: str = "java-4.9.1", **overrides: Any) -> Any:
        """A `remoting.producer.Producer` on this cluster's name server (closed at the latest when the cluster goes
        down); `overrides` are the profile's settings (`retry_times_when_send_failed`, ...)."""
        from remoting.producer import Producer

        producer = Producer(self.namesrv_addr, group, profile, **overrides)
        self._producers.append(producer)
        return producer

    def message(self, body: bytes | str, key: str | None = None, topic: str | None = None) -> Any:
        """A `remoting.message.Message` to this cluster's topic with a unique key (unless given)."""
        from remoting.message import Message

        return Message(topic or self.topic, body, keys=key or uuid.uuid4().hex)

    @contextmanager
    def fault(self, kind: str, node: str, params: Mapping[str, Any] | None = None, *, fault_id: str | None = None,
              verify: bool = True, **more: Any) -> Iterator[AppliedFault]:
        """Apply (journaled first) and verify fault `kind` on `node` (`faults.registry`, `rmq-chaos fault list`);
        revert it when the block ends, even when the body raised. Its events go to the cluster's events.jsonl."""
        from faults.errors import FaultRefused
        from faults.registry import fault_class

        cls = fault_class(kind)
        if node not in self.targets:
            raise FaultRefused(f"no node {node!r} in this cluster (nodes: {', '.join(self.targets)})")
        fault = cls(self.targets[node], {**(params or {}), **more}, journal=self.journal, emit=self.rd.append,
                    fault_id=fault_id)
        applied = AppliedFault(fault, {"apply": fault.apply()})
        self._faults.append(fault)
        try:
            if verify:
                applied.evidence["verify"] = fault.verify()
            yield applied
        finally:
            with signals_deferred() as got:
                fault.revert()  # when it raises, the fault stays listed: the cluster's down tries it again
            self._faults.remove(fault)
            if got:
                raise KeyboardInterrupt(got[0])


@contextmanager
def signals_deferred() -> Iterator[list[str]]:
    """While a cluster goes down, Ctrl-C and SIGTERM are reported and held (as the runner's wind-down does); the
    list names those that came, so the caller raises KeyboardInterrupt once everything is down."""
    got: list[str] = []
    if threading.current_thread() is not threading.main_thread():
        yield got
        return

    def hold(signum: int, _frame: Any) -> None:
        got.append(signal.Signals(signum).name)
        print(f"{got[-1]}: taking the cluster down first, please wait", file=sys.stderr)

    previous = {s: signal.signal(s, hold) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield got
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


def isolate_for(scenario: Scenario) -> None:
    """An Apache program's brokers bind every interface: this process moves into a network namespace of its own
    with only loopback (`harness.netns`), once; its children (brokers, load, analysis) follow it."""
    if scenario.cluster.program != "apache" or scenario.cluster.backend != "local":
        return
    from harness.netns_here import isolate_this_process

    isolate_this_process()

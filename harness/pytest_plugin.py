"""The pytest plugin (entry point `pytest11: rmq_chaos`): release-qualification suites as plain pytest.

Fixtures:
- `rmq_cluster`: a cluster (`harness.qualify.Cluster`) stood up by the harness's local backend from a scenario file
  or dict, taken down after the test however it ends (failure, error, Ctrl-C, SIGTERM). The scenario comes from
  `@pytest.mark.parametrize("rmq_cluster", [...], indirect=True)`, else `@pytest.mark.rmq_scenario(...)`, else a
  default 4.9.1 cluster. The program: `@pytest.mark.rmq_program("apache")`, else `--rmq-program`, else the
  scenario's; `apache` without `$ROCKETMQ_HOME` skips the test.
- `fault`: `with fault("readonly_fs", "slave") as f:` applies and verifies a fault on a node of `rmq_cluster`,
  and reverts it when the block ends, even when it raised (journaled first: a killed session is undone by
  `rmq-chaos cleanup`).
- `assert_run_expectations`: `assert_run_expectations("scenarios/x.yaml")` runs a scenario as `rmq-chaos run`
  does and fails the test with every expectation that did not hold and its measured value.

Options: `--rmq-program`, `--rmq-state-dir` (default `$RMQ_CHAOS_STATE` or /var/lib/rmq-chaos: where `rmq-chaos
cleanup` looks), `--rmq-out` (run and cluster directories; default a directory under pytest's basetemp).
Everything heavy is imported inside the fixtures: loading the plugin costs a pytest session nothing else.
"""
from __future__ import annotations

import functools
import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

PROGRAMS = ("emulator", "apache")
MARKERS = (
    "rmq_scenario(source): the scenario (file path, relative to the test file or the rootdir, or dict) of "
    "rmq_cluster",
    "rmq_program(name): the broker program of rmq_cluster and assert_run_expectations: emulator or apache "
    "($ROCKETMQ_HOME; skipped without it)",
)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("rmq-chaos", "rmq-chaos clusters, faults and runs")
    group.addoption("--rmq-program", choices=PROGRAMS, default=None,
                    help="broker program of every rmq_cluster and run (default: the scenario's cluster.program)")
    group.addoption("--rmq-state-dir", default=None, metavar="DIR",
                    help="journal and state dir (default: $RMQ_CHAOS_STATE or /var/lib/rmq-chaos)")
    group.addoption("--rmq-out", default=None, metavar="DIR",
                    help="where cluster and run directories go (default: <basetemp>/rmq-runs)")


def pytest_configure(config: pytest.Config) -> None:
    for line in MARKERS:
        config.addinivalue_line("markers", line)


# --- session settings ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def rmq_state_dir(pytestconfig: pytest.Config) -> Path:
    """The journal/state dir the fixtures use (`rmq-chaos cleanup --state-dir` of it undoes a killed session)."""
    from faults.journal import default_state_dir

    option = pytestconfig.getoption("rmq_state_dir")
    return Path(option).resolve() if option else default_state_dir()


@pytest.fixture(scope="session")
def rmq_out(pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where each cluster's and run's directory goes (events.jsonl, cluster.json, logs, report)."""
    option = pytestconfig.getoption("rmq_out")
    if option:
        Path(option).mkdir(parents=True, exist_ok=True)
        return Path(option).resolve()
    return tmp_path_factory.mktemp("rmq-runs", numbered=False)


def _program(request: pytest.FixtureRequest) -> str | None:
    marker = request.node.get_closest_marker("rmq_program")
    if marker is not None:
        program = marker.args[0] if marker.args else marker.kwargs.get("name")
        if program not in PROGRAMS:
            raise pytest.UsageError(f"rmq_program({program!r}): allowed: {', '.join(PROGRAMS)}")
        return program
    return request.config.getoption("rmq_program")


def _needs(program: str | None) -> None:
    """Skip (never fail) where the cluster cannot exist: no root, or Apache's program without $ROCKETMQ_HOME."""
    if os.geteuid() != 0:
        pytest.skip("rmq-chaos clusters need root (loop-mounted stores, cgroups)")
    if program == "apache" and not os.environ.get("ROCKETMQ_HOME"):
        pytest.skip("program apache: $ROCKETMQ_HOME names no Apache RocketMQ binary distribution")


def _scenario_source(request: pytest.FixtureRequest) -> Any:
    if hasattr(request, "param"):
        return request.param
    marker = request.node.get_closest_marker("rmq_scenario")
    if marker is not None:
        return marker.args[0] if marker.args else marker.kwargs["source"]
    from harness.qualify import DEFAULT_SCENARIO

    return DEFAULT_SCENARIO


def _load(source: Any, program: str | None, request: pytest.FixtureRequest) -> Any:
    """The scenario, validated; a relative path is tried under the test file's directory, then the rootdir."""
    from harness.qualify import ScenarioSourceError, load_one

    base = Path(str(request.node.path)).parent
    if isinstance(source, str | Path) and not Path(source).is_absolute() and not (base / source).exists():
        base = request.config.rootpath
    try:
        scenario = load_one(source, program, base)
    except ScenarioSourceError as err:
        pytest.fail(str(err), pytrace=False)
    _needs(scenario.cluster.program)
    return scenario


@contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """SIGTERM raises KeyboardInterrupt (as Ctrl-C does) while a cluster is up, so pytest's teardown takes it down;
    the previous handler is restored after. Only in the main thread (signals are delivered there)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(*_: object) -> None:
        raise KeyboardInterrupt("SIGTERM")

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


# --- fixtures -----------------------------------------------------------------------------------------------------


@pytest.fixture
def rmq_cluster(request: pytest.FixtureRequest, rmq_state_dir: Path, rmq_out: Path) -> Iterator[Any]:
    """A cluster that is up for this test (`harness.qualify.Cluster`: `namesrv_addr`, `broker_addrs`, `targets`,
    `topic`, `producer()`, `message()`, `fault()`, `run_dir`); down after the test, whatever happened."""
    program = _program(request)
    _needs(program)
    scenario = _load(_scenario_source(request), program, request)
    from harness.qualify import Cluster

    with sigterm_interrupts(), Cluster.up(scenario, rmq_out, rmq_state_dir) as cluster:
        yield cluster


@pytest.fixture
def fault(rmq_cluster: Any) -> Any:
    """`fault(kind, node, params=None, *, fault_id=None, verify=True, **params)`: a context manager that applies
    and verifies the fault on a node of `rmq_cluster`, yields an `AppliedFault` (`evidence`, `verify()`), and
    reverts it when the block ends, even when it raised."""
    return rmq_cluster.fault


@pytest.fixture
def assert_run_expectations(request: pytest.FixtureRequest, rmq_state_dir: Path, rmq_out: Path) -> Any:
    """`assert_run_expectations(source, program=None)`: run the scenario (file, dict or `Scenario`) and fail the
    test with each expectation that did not hold and its measured value; returns the verdict."""
    from harness.qualify_run import assert_run_expectations as check

    def run(source: Any, program: str | None = None) -> dict[str, Any]:
        __tracebackhide__ = True
        chosen = program or _program(request)
        _needs(chosen)
        scenario = _load(source, chosen, request)
        with sigterm_interrupts():
            return check(scenario, out=rmq_out, state_dir=rmq_state_dir)

    return functools.wraps(check)(run)

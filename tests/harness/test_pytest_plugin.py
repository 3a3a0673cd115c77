"""The pytest plugin (harness/pytest_plugin.py) from the outside, with pytester: a suite written with its fixtures
is run as a user runs it, in a pytest of its own, against the embedded cluster. A failing expectation fails the
test naming the expectation and its measured value; a failing test, an exception inside `with fault(...)`, Ctrl-C
and SIGTERM all leave nothing behind (processes, mounts, loop devices, cgroups, open journal entries)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from runsupport import REPO, assert_nothing_left, events

from harness.qualify_run import failure_lines

pytest_plugins = ["pytester"]
READY_DEADLINE_S = 120.0
EXIT_DEADLINE_S = 120.0

SHORT_RUN = """
SCENARIO = {
    "name": "plugin-failing-expectation",
    "cluster": {"version": "4.9.1", "store_size": "64MiB",
                "broker": {"common": {"mappedFileSizeCommitLog": 4194304}}},
    "topic": {"name": "PluginTopic", "queues": 2},
    "load": {"model": "closed", "clients": [{"name": "flood", "users": 2, "message_size": "128B"}]},
    "warmup": "1s",
    "phases": [{"name": "healthy", "duration": "3s"}],
    "readback": {"timeout": "60s"},
    "expect": [
        {"name": "held-send-ok", "phase": "healthy", "outcome": "SEND_OK", "metric": "count", "min": 1},
        {"name": "impossible-no-send-ok", "phase": "healthy", "outcome": "SEND_OK", "metric": "count", "max": 0},
    ],
}


def test_run(assert_run_expectations):
    assert_run_expectations(SCENARIO)
"""

FAILING_IN_FAULT = """
from pathlib import Path


def test_boom(rmq_cluster, fault):
    Path("cluster.json").write_text(__import__("json").dumps(
        {"id": rmq_cluster.cluster_id, "run_dir": str(rmq_cluster.run_dir)}))
    with fault("readonly_fs", "slave", fault_id="ro") as applied:
        assert applied.evidence["verify"]["write_errno"] == "EROFS"
        raise RuntimeError("boom inside the fault")
"""

HELD_UNTIL_SIGNAL = """
import time
from pathlib import Path


def test_held(rmq_cluster):
    Path("cluster.json").write_text(__import__("json").dumps(
        {"id": rmq_cluster.cluster_id, "run_dir": str(rmq_cluster.run_dir)}))
    while True:  # a long qualification step, ended by the signal the outer test sends
        time.sleep(0.1)
"""


@pytest.fixture
def plugin_args(pytestconfig: pytest.Config, pytester: pytest.Pytester) -> list[str]:
    """Load the plugin in the inner session unless the entry point already does (installed: it registers as
    `rmq_chaos`, and a second `-p` would register it twice); a private state and out dir."""
    load = [] if pytestconfig.pluginmanager.has_plugin("rmq_chaos") else ["-p", "harness.pytest_plugin"]
    return [*load, "-p", "no:cacheprovider", "--rmq-state-dir", str(pytester.path / "state"),
            "--rmq-out", str(pytester.path / "out")]


def _cluster_of(pytester: pytest.Pytester) -> tuple[str, Path]:
    info = json.loads((pytester.path / "cluster.json").read_text())
    return info["id"], Path(info["run_dir"])


def test_failure_lines_name_each_expectation_with_its_measured_value() -> None:
    verdict = {"expectations": [
        {"name": "ok-one", "status": "held", "metric": "share", "limit": {"min": 0.99}, "measured_text": "1"},
        {"name": "lost", "status": "failed", "metric": "lost", "limit": {"max": 0}, "measured_text": "3",
         "filters": {}, "note": None},
        {"name": "probe", "status": "unknown", "metric": "count", "limit": {"min": 1}, "measured_text": "unknown",
         "filters": {"phase": "readonly", "client": "probe"}, "note": "no rows"},
    ]}
    assert failure_lines(verdict) == [
        "lost: FAILED: measured 3 (lost), limit max 0",
        "probe: UNKNOWN (not measured): measured unknown (count; phase=readonly, client=probe), limit min 1; "
        "no rows",
    ]


def test_apache_program_without_rocketmq_home_skips(pytester: pytest.Pytester, plugin_args: list[str],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ROCKETMQ_HOME", raising=False)
    pytester.makepyfile("""
        import pytest

        @pytest.mark.rmq_program("apache")
        def test_apache(rmq_cluster):
            raise AssertionError("never reached")
    """)
    result = pytester.runpytest_inprocess(*plugin_args, "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*ROCKETMQ_HOME*"])


def test_a_matrix_is_refused_in_one_line(pytester: pytest.Pytester, plugin_args: list[str]) -> None:
    pytester.makepyfile(f"""
        import pytest

        @pytest.mark.rmq_scenario({str(REPO / "scenarios" / "qualification-matrix.yaml")!r})
        def test_matrix(rmq_cluster):
            raise AssertionError("never reached")
    """)
    result = pytester.runpytest_inprocess(*plugin_args)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*a matrix of * runs; a cluster or a run here takes one*"])
    assert not (pytester.path / "state" / "work").exists() or not list((pytester.path / "state" / "work").iterdir())


def test_scenario_of_an_indirect_parameter_and_of_a_dict(pytester: pytest.Pytester, plugin_args: list[str]) -> None:
    """The parameter wins over the marker; a dict is checked as a file is, its problem in one line."""
    pytester.makepyfile(f"""
        import pytest

        @pytest.mark.rmq_scenario({{"name": "from-marker", "phases": [{{"name": "p", "duration": "1s"}}]}})
        @pytest.mark.parametrize("rmq_cluster", [{str(REPO / "scenarios" / "qualification-matrix.yaml")!r}],
                                 indirect=True)
        def test_param(rmq_cluster):
            raise AssertionError("never reached")

        @pytest.mark.rmq_scenario({{"name": "bad-dict", "phases": [{{"name": "p", "duration": "1s"}}],
                                    "cluster": {{"versoin": "4.9.1"}}}})
        def test_dict(rmq_cluster):
            raise AssertionError("never reached")
    """)
    result = pytester.runpytest_inprocess(*plugin_args)
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(["*qualification-matrix.yaml: a matrix of * runs*",
                                 "*<dict bad-dict>*cluster.versoin*"])


@pytest.mark.long
@pytest.mark.root
@pytest.mark.spark
def test_failing_expectation_fails_the_test_with_its_measured_value(pytester: pytest.Pytester,
                                                                     plugin_args: list[str]) -> None:
    pytester.makepyfile(SHORT_RUN)
    result = pytester.runpytest_subprocess(*plugin_args, timeout=600)
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    result.stdout.fnmatch_lines([
        "*AssertionError: scenario plugin-failing-expectation: run completed; verdict False: 1 failed, 0 unknown, "
        "1 held*",
        "*- impossible-no-send-ok: FAILED: measured * (count; phase=healthy, outcome=SEND_OK), limit max 0*",
        "*run directory: *plugin-failing-expectation-run-*",
    ])
    assert "- held-send-ok" not in out, "only what did not hold is listed"
    assert "qualify_run.py:" not in out, "the traceback ends at the test's line, not inside the helper"
    measured = int(next(line for line in out.splitlines() if "- impossible-no-send-ok" in line)
                   .split("measured ")[1].split()[0])
    assert measured >= 1
    run_dir = next((pytester.path / "out").glob("*plugin-failing-expectation-run-*"))
    assert_nothing_left(pytester.path / "state", run_dir.name)


@pytest.mark.root
def test_failing_test_inside_a_fault_reverts_it_and_takes_the_cluster_down(pytester: pytest.Pytester,
                                                                            plugin_args: list[str]) -> None:
    pytester.makepyfile(FAILING_IN_FAULT)
    result = pytester.runpytest_subprocess(*plugin_args, timeout=600)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*RuntimeError: boom inside the fault*"])
    cluster_id, run_dir = _cluster_of(pytester)
    assert_nothing_left(pytester.path / "state", cluster_id)
    ev = events(run_dir)
    ro = [(e["action"], e["status"]) for e in ev if e["event"] == "fault" and e["fault_id"] == "ro"
          and e["action"] != "step"]
    assert ro == [("apply", "started"), ("apply", "ok"), ("verify", "started"), ("verify", "ok"),
                  ("revert", "started"), ("revert", "ok")]
    down = [e for e in ev if e["event"] == "cluster_down"]
    assert len(down) == 1 and down[0]["errors"] is None
    assert list((run_dir / "logs" / "master").iterdir()), "the logs were copied before the cluster went down"


def _signals_as_a_shell_leaves_them() -> None:
    """The inner pytest starts with SIGINT and SIGTERM unblocked and at their defaults, as from a terminal: a worker
    process of the outer session may have changed its mask (a blocked or ignored SIGINT is inherited across exec,
    and Python then never turns Ctrl-C into KeyboardInterrupt)."""
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    for s in (signal.SIGINT, signal.SIGTERM):
        signal.signal(s, signal.SIG_DFL)


@pytest.mark.root
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_a_signal_during_the_test_takes_the_cluster_down(pytester: pytest.Pytester, plugin_args: list[str],
                                                         signum: int) -> None:
    pytester.makepyfile(HELD_UNTIL_SIGNAL)
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "-o", "faulthandler_timeout=100", *plugin_args],
                            cwd=pytester.path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            preexec_fn=_signals_as_a_shell_leaves_them)
    try:
        deadline = time.monotonic() + READY_DEADLINE_S
        while not (pytester.path / "cluster.json").exists():
            assert proc.poll() is None, proc.communicate()[0]
            assert time.monotonic() < deadline, "the cluster did not come up"
            time.sleep(0.1)
        proc.send_signal(signum)
        out, _ = proc.communicate(timeout=EXIT_DEADLINE_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
            subprocess.run([sys.executable, "-m", "harness.cli", "cleanup"], cwd=REPO, timeout=180, check=False,
                           env={**os.environ, "RMQ_CHAOS_STATE": str(pytester.path / "state")})
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, out
    cluster_id, run_dir = _cluster_of(pytester)
    assert_nothing_left(pytester.path / "state", cluster_id)
    assert [e for e in events(run_dir) if e["event"] == "cluster_down"][0]["errors"] is None

"""Shared test fixtures: paths to the recorded 4.9.1 frames, a guard that a session with no passing test fails, a
guard that no test module monkey-patched gevent into the session (importing Locust does: every thread of every later
test would be a greenlet), and Hypothesis drawing the same examples on every run (a CI verdict does not depend on the
draw; set HYPOTHESIS_PROFILE=explore to search afresh)."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from hypothesis import settings

settings.register_profile("repeatable", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures"
WIRE = FIXTURES / "rocketmq-4.9.1" / "wire"


@pytest.fixture(scope="session")
def wire_dir() -> Path:
    """Directory of the frames recorded from a real Apache RocketMQ 4.9.1 cluster."""
    return WIRE


def pytest_collection_finish(session):
    """Locust patches gevent into the process that imports it; a test module that imported it would turn the
    threads of every test after it into greenlets (a thread blocked in the kernel then blocks the whole session).
    Locust runs in child processes only."""
    monkey = sys.modules.get("gevent.monkey")
    if monkey is not None and monkey.is_module_patched("threading"):
        raise pytest.UsageError("a test module monkey-patched gevent into the test process (did it import locust?): "
                                "run Locust in a child process, as tests/loads does")


MACHINE_WIDE = ("tests/compose/", "tests/faults/test_faults_crash.py", "tests/faults/test_faults_memory.py",
                "tests/faults/test_faults_guard.py", "tests/emulator/test_emu_memory_pressure.py")
"""Tests that use what the machine has once: the Docker engine and the images it builds, and swap (`memory_pressure`
adds a swap file only when no other swap is on, and the swap tests compare /proc/swaps before and after)."""


SPARK_FIXTURE = "spark"
"""Tests using tests/analysis's in-process Spark session (and the runs it analyses once) share one worker: each
worker that runs one of them pays a JVM start and that analysis (about a minute and a half on a busy machine)."""


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own hook, which reads the xdist_group marks
def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist (`-n N --dist loadgroup`, the README's command) the MACHINE_WIDE tests run one after the
    other on one worker (`xdist_group("machine")`), and so do the tests of the in-process Spark session
    (`xdist_group("spark")`); the tests that run a whole scenario or cluster for minutes
    (`long`) and that group come first, so the long ones run side by side and the short ones fill in around them.
    Without xdist the order changes only by moving those first."""
    for item in items:
        if item.nodeid.startswith(MACHINE_WIDE):
            item.add_marker(pytest.mark.xdist_group("machine"))
        elif SPARK_FIXTURE in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group("spark"))
    items.sort(key=lambda item: 0 if item.nodeid.startswith(MACHINE_WIDE) or item.get_closest_marker("long")
               else 1)


def pytest_sessionfinish(session, exitstatus):
    """A test command that ran nothing must not look green (CI runs exactly this command)."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    passed = len(reporter.stats.get("passed", [])) if reporter else 0
    if exitstatus == 0 and passed == 0 and not session.config.option.collectonly:
        session.exitstatus = 1

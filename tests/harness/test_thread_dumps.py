"""The brokers' thread dumps during a faulted phase (`harness.collectors.thread_dumps`), with real processes: a round
of SIGQUIT a quarter, half and three quarters into a phase with a fault (moments passed together make one round),
none in a phase without one, one `thread_dump` event per round; only a broker process that catches SIGQUIT is
signalled, so one that would die of it (no handler yet, or none at all) is left alone and alive. With each round
the `Vm*` lines of the processes signalled go to `logs/<node>/memory-status.log`."""
from __future__ import annotations

import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from waiting import poll

from harness.collectors.thread_dumps import ThreadDumps

CATCHER = """
import signal, sys, time
out = open(sys.argv[1], "a")
signal.signal(signal.SIGQUIT, lambda *a: (out.write("dump\\n"), out.flush()))
open(sys.argv[2], "w").close()
time.sleep(600)
"""


@dataclass
class Node:
    role: str
    pid_list: list[int]

    def pids(self) -> list[int]:
        return self.pid_list


@dataclass
class Window:
    index: int
    name: str
    start_s: float
    duration_s: float
    faults: list = field(default_factory=list)


def test_rounds_in_faulted_phases_only_to_processes_that_catch_sigquit(tmp_path: Path) -> None:
    dumps_file, ready = tmp_path / "dumps.txt", tmp_path / "ready"
    catcher = subprocess.Popen([sys.executable, "-c", CATCHER, str(dumps_file), str(ready), "emulator.broker"])
    plain = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", "emulator.broker"])
    try:
        poll(ready.exists, 30, "the catcher's handler")
        events: list[tuple[str, dict]] = []
        dumps = ThreadDumps({"master": Node("master", [catcher.pid]), "slave": Node("slave", [plain.pid]),
                             "namesrv": Node("namesrv", [catcher.pid])},
                            lambda name, **extra: events.append((name, extra)), tmp_path / "logs")
        healthy, faulted = Window(0, "healthy", 0.0, 20.0), Window(1, "throttled", 20.0, 40.0, ["throttle"])
        for now in (5.0, 15.0, 19.9):
            dumps.tick(healthy, now)
        dumps.tick(faulted, 25.0)  # before a quarter
        assert events == []
        dumps.tick(faulted, 30.0)  # a quarter
        dumps.tick(faulted, 31.0)
        dumps.tick(faulted, 55.0)  # half and three quarters passed together: one round
        dumps.tick(faulted, 59.0)
        assert events == [("thread_dump", {"phase": "throttled", "nodes": {"master": [catcher.pid], "slave": []}})] * 2
        poll(lambda: dumps_file.exists() and dumps_file.read_text().count("dump") == 2, 30, "two dumps")
        assert catcher.poll() is None and plain.poll() is None, "nothing signalled died"
        status = (tmp_path / "logs" / "master" / "memory-status.log").read_text()
        assert status.count(f" /proc/{catcher.pid}/status (python") == 2 and status.count("\nVmSwap:") == 2
        assert sorted(p.name for p in (tmp_path / "logs").iterdir()) == ["master"], "the slave's process was not read"
    finally:
        for proc in (catcher, plain):
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)


class RemoteNode:
    """A node on another host: its agent signals it (`RemoteNode.thread_dump`), or cannot be reached."""

    role = "master"

    def __init__(self, answer: list[int] | None) -> None:
        self.answer = answer

    def thread_dump(self) -> list[int]:
        if self.answer is None:
            raise ConnectionError("agent channel closed")
        return self.answer

    def memory_status(self) -> str:
        return f"2026-11-27 10:42:53,123 /proc/{self.answer[0]}/status (java, master)\nVmSwap:\t  204800 kB\n\n"


def test_a_node_on_another_host_is_dumped_by_its_agent_and_a_lost_agent_stops_nothing(tmp_path: Path) -> None:
    events: list[tuple[str, dict]] = []
    dumps = ThreadDumps({"master": RemoteNode([4242]), "slave": RemoteNode(None)},
                        lambda name, **extra: events.append((name, extra)), tmp_path)
    dumps.tick(Window(0, "partitioned", 0.0, 8.0, ["cut"]), 2.0)
    assert events == [("thread_dump", {"phase": "partitioned", "nodes": {"master": [4242], "slave": []}})]
    assert (tmp_path / "master" / "memory-status.log").read_text().endswith("VmSwap:\t  204800 kB\n\n")
    assert not (tmp_path / "slave").exists()

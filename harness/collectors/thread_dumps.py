"""Thread dumps of the brokers while a fault is on, as an operator takes jstacks during an incident: a quarter, half
and three quarters into every phase with a fault, SIGQUIT to each broker's JVM (HotSpot prints the dump on its
stdout, the node's `stdout.log`, copied into `logs/<node>/` with its other logs) or to the emulator's broker process
(`emulator.thread_dump` answers the same way). `rmq-chaos diagnose` reads them as jstack output: a commitlog flush
thread caught in msync in most of them is a slow disk (`store-flush-slow`), which 4.9.1 logs nowhere else under
SYNC_FLUSH. Each round is one `thread_dump` event (`phase`, `nodes`: node -> pids signalled).

Only a process that answers SIGQUIT with a dump is signalled: a `java` process of the node's process tree, or the
emulator's `emulator.broker` (its command line read with a bound when a thread of it is in D state: a broker blocked
on a frozen store holds its address-space lock, and a plain read of its cmdline would wait until the thaw, which
then never came), and only while it catches SIGQUIT (`SigCgt` in /proc/<pid>/status): a shell between
the harness and the JVM, a JVM started with -Xrs, or a broker process still starting would be ended by it. On the
ssh backend the host's agent signals its nodes (op `node_thread_dump`); the compose backend's brokers would print
into the containers' logs, so it takes none.
"""
from __future__ import annotations

import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

from faults.system.procs import cmdline_of
from harness.collectors import memory_status

DUMP_AT = (0.25, 0.5, 0.75)
"""When in a phase with a fault, as shares of its length: three dumps seconds apart, as an operator takes them."""
NOT_BROKERS = ("namesrv", "controller")


def answering_pids(root_pids: list[int]) -> list[int]:
    """The processes of these trees that print a thread dump on SIGQUIT: JVMs and the emulator's broker."""
    found = []
    for pid in root_pids:
        try:
            root = psutil.Process(pid)
            tree = [root, *root.children(recursive=True)]
        except psutil.Error:
            continue
        for proc in tree:
            try:
                if (proc.name() == "java" or "emulator.broker" in (cmdline_of(proc.pid) or ())) \
                        and catches_sigquit(proc.pid):
                    found.append(proc.pid)
            except psutil.Error:
                continue
    return found


def catches_sigquit(pid: int) -> bool:
    """The process has a handler for SIGQUIT now (its default action would end it)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            caught = next((line.split()[1] for line in f if line.startswith("SigCgt:")), "0")
    except OSError:
        return False
    return bool(int(caught, 16) & (1 << (signal.SIGQUIT - 1)))


class ThreadDumps:
    """Called with the phase window and the run's clock on every tick of a phase; signals when a moment is due."""

    def __init__(self, nodes: dict[str, Any], emit: Callable[..., Any], logs_dir: Path | None = None) -> None:
        self.nodes = {name: node for name, node in nodes.items() if getattr(node, "role", name) not in NOT_BROKERS}
        self.emit = emit
        self.logs_dir = logs_dir
        self._done: set[tuple[int, int]] = set()

    def tick(self, window: Any, now_s: float) -> None:
        if not window.faults:
            return
        due = [i for i, share in enumerate(DUMP_AT) if (window.index, i) not in self._done
               and now_s >= window.start_s + share * window.duration_s]
        if not due:
            return
        self._done.update((window.index, i) for i in due)
        self.emit("thread_dump", phase=window.name, nodes=self.dump())

    def dump(self) -> dict[str, list[int]]:
        sent: dict[str, list[int]] = {}
        for name, node in self.nodes.items():
            sent[name], status = [], ""
            try:  # a node on another host: its host's agent signals it and reads the status
                if hasattr(node, "thread_dump"):
                    sent[name] = node.thread_dump()
                    status = node.memory_status() if hasattr(node, "memory_status") else ""
                else:
                    sent[name] = signal_dump(node.pids())
                    status = memory_status.status_text(sent[name], name)
                if self.logs_dir is not None:
                    memory_status.append(self.logs_dir, name, status)
            except Exception:  # noqa: BLE001 - a dump is evidence for later, never a reason to stop the run
                pass
        return sent


def signal_dump(pids: list[int]) -> list[int]:
    """SIGQUIT to the processes of these trees that answer it with a dump; the pids signalled."""
    sent = []
    for pid in answering_pids(pids):
        try:
            os.kill(pid, signal.SIGQUIT)
            sent.append(pid)
        except ProcessLookupError:
            continue
    return sent


def for_backend(backend: Any, emit: Callable[..., Any], logs_dir: Path | None = None) -> ThreadDumps:
    """The dumps of a run on `backend`, the memory status written under `logs_dir`."""
    return ThreadDumps(backend.nodes, emit, logs_dir)

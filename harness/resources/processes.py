"""Processes of ours: spawned inside given cgroups from their first instruction (a shell trampoline joins the groups,
then execs), in a session of their own, marked with `RMQ_CHAOS_TAG` (inherited by their children) and journaled, so
that cleanup can end them (and any child they left) after the harness died."""
from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass, field

from faults.journal import Journal
from faults.system import cgroupfs
from faults.system.procs import TAG_ENV, ProcId
from faults.undo import run_ops

KIND = "resource:process"
STOP_TIMEOUT_S = 10.0
JOIN_TIMEOUT_S = 10.0


@dataclass
class ManagedProcess:
    """A process we spawned; `tag` is also its journal entry id."""

    name: str
    argv: list[str]
    proc: ProcId
    tag: str
    popen: subprocess.Popen = field(repr=False)
    journal: Journal = field(repr=False)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        self.popen.poll()  # reap it if it exited, so it does not linger as a zombie
        return self.proc.alive()

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> int | None:
        """SIGTERM, then SIGKILL after `timeout_s`; also ends any child still carrying its tag. Returns the exit
        status (None if it could not be reaped). Marks the journal entry done."""
        entry = self.journal.get(self.tag)
        ops = entry.undo if entry else [{"op": "kill_procs", "procs": [self.proc.to_json()], "tag": self.tag}]
        ops = [dict(op, timeout_s=timeout_s) if op["op"] == "kill_procs" else op for op in ops]
        run_ops(ops)
        try:
            code = self.popen.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        if entry and not entry.done:
            self.journal.done(self.tag, "stopped")
        return code


def spawn(journal: Journal, argv: list[str], *, name: str = "", cgroups: list[str] | None = None,
          env: dict[str, str] | None = None, cwd: str | None = None, log_path: str | None = None,
          run_id: str = "", extra_undo: list[dict] | None = None, stdout=None) -> ManagedProcess:
    """Start `argv` inside `cgroups` (dirs), journaled before it starts. Output goes to `log_path` (appended) unless
    `stdout` is given (e.g. subprocess.PIPE). `extra_undo` runs after the process is ended (e.g. rm its pidfile)."""
    tag = journal.new_id("p")
    undo = [{"op": "kill_procs", "tag": tag, "timeout_s": STOP_TIMEOUT_S}, *(extra_undo or [])]
    journal.begin(KIND, undo=undo, run_id=run_id, target=name, entry_id=tag,
                  data={"argv": argv, "cgroups": cgroups or [], "cwd": cwd, "log": log_path})
    full_env = {**(os.environ if env is None else env), TAG_ENV: tag}
    cmd = cgroupfs.join_argv(list(cgroups), argv) if cgroups else list(argv)
    log = open(log_path, "ab") if log_path else None  # noqa: SIM115 -- the child keeps it; closed below
    try:
        popen = subprocess.Popen(cmd, env=full_env, cwd=cwd, stdin=subprocess.DEVNULL,
                                 stdout=stdout if stdout is not None else (log or subprocess.DEVNULL),
                                 stderr=log or subprocess.DEVNULL, start_new_session=True)
    except BaseException:
        journal.done(tag, "did not start")
        raise
    finally:
        if log:
            log.close()
    proc = ProcId.of(popen.pid) or ProcId(popen.pid, 0)
    if cgroups:
        _wait_joined(popen, list(cgroups))
    undo[0] = {**undo[0], "procs": [proc.to_json()]}
    journal.update(tag, undo=undo)
    return ManagedProcess(name or os.path.basename(argv[0]), list(argv), proc, tag, popen, journal)


def _wait_joined(popen: subprocess.Popen, dirs: list[str]) -> None:
    """Return once the child is in every cgroup (the trampoline moved it) or has exited."""
    deadline = time.monotonic() + JOIN_TIMEOUT_S
    while popen.poll() is None and time.monotonic() < deadline:
        if all(popen.pid in cgroupfs.members(d) for d in dirs):
            return
        time.sleep(0.001)

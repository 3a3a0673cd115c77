"""The control node's end of one host agent (`harness.agent`): started over the host's SSH connection, asked with
`call(op, **args)`, its notices (a fault's events) handed to `on_event`, its lease renewed every `lease_s / 4`
while it runs. `close()` closes the channel: the agent then reverts anything still applied and exits.

An agent that goes away (the SSH connection lost, the agent killed) fails every call waiting and every later one
with `AgentError` naming the host."""
from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.hosts.ssh import SshHost
from loads import control

CALL_TIMEOUT_S = 120.0


class AgentError(RuntimeError):
    """An agent could not do what was asked, or is gone (one line naming the host)."""


class AgentClient:
    def __init__(self, ssh: SshHost, python: str, workdir: str, lease_s: float,
                 on_event: Callable[[dict[str, Any]], None] | None = None, log_path: Path | None = None) -> None:
        self.ssh = ssh
        self.name = ssh.host.name
        self.python = python
        self.workdir = workdir
        self.lease_s = lease_s
        self.on_event = on_event
        self.log_path = log_path
        self.proc: subprocess.Popen | None = None
        self._replies = control.Replies()
        self._write = threading.Lock()
        self._gone: str | None = None
        self._closed = threading.Event()

    def start(self) -> None:
        stderr = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL  # noqa: SIM115 - closed in close
        self._stderr = stderr
        self.proc = self.ssh.popen([self.python, "-m", "harness.agent", "--work", self.workdir,
                                    "--lease", f"{self.lease_s:g}"], stderr=stderr)
        threading.Thread(target=self._read, name=f"agent-{self.name}", daemon=True).start()
        threading.Thread(target=self._renew, name=f"lease-{self.name}", daemon=True).start()

    # --- calls ------------------------------------------------------------------------------------------------

    def call(self, op: str, timeout_s: float = CALL_TIMEOUT_S, **args: Any) -> dict[str, Any]:
        if self._gone:
            raise AgentError(self._gone)
        try:
            reply = self._replies.ask(self._send, {"op": op, **args}, timeout_s)
        except TimeoutError:
            raise AgentError(f"host {self.name}: {op} got no answer within {timeout_s:g} s") from None
        if reply is None:
            raise AgentError(self._gone or f"host {self.name}: the agent is gone")
        if not reply.get("ok"):
            raise AgentError(f"host {self.name}: {op}: {reply.get('error')}")
        return reply.get("result") or {}

    def _send(self, message: dict[str, Any]) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        with self._write:
            try:
                self.proc.stdin.write(control.encode(message))
                self.proc.stdin.flush()
            except (OSError, ValueError) as err:
                self._lose(f"host {self.name}: the channel to the agent is closed ({err})")
                raise AgentError(self._gone or str(err)) from None

    def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for msg in control.messages(self.proc.stdout):
            if msg.get("type") == "reply":
                self._replies.deliver(msg)
            elif msg.get("type") == "event" and self.on_event is not None:
                try:
                    self.on_event(msg["record"])
                except Exception:  # noqa: BLE001 - a notice must never break the channel
                    pass
        code = self.proc.wait()
        self._lose(f"host {self.name}: the agent ended (ssh exit {code}); see {self.log_path or 'its agent.log'}")

    def _lose(self, why: str) -> None:
        if self._gone is None:
            self._gone = why
        self._replies.close()

    def _renew(self) -> None:
        """A `renew` line every lease / 4, its answer not awaited: an answer slower than the lease (an agent still
        importing on a loaded host) once ended the renewals for good, and the agent gave up its lease 10 s later
        while everything was well. Only a closed channel ends them."""
        while not self._closed.wait(self.lease_s / 4):
            if self._gone:
                return
            try:
                self._send({"id": self._replies.next_id(), "op": "renew"})
            except AgentError:
                return

    @property
    def alive(self) -> bool:
        return self._gone is None and self.proc is not None and self.proc.poll() is None

    def close(self, timeout_s: float = 60.0) -> None:
        """Close the channel; the agent reverts what is still applied and exits. Waits for it."""
        self._closed.set()
        if self.proc is None:
            return
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self._stderr not in (None, subprocess.DEVNULL):
            self._stderr.close()

    def clock_offset(self, rounds: int = 8) -> tuple[int, int]:
        """(offset_ns, error_ns): the host's wall clock minus this one's, from the round trip with the smallest
        time (its midpoint), and half that round trip as the error bound."""
        best: tuple[int, int] | None = None
        for _ in range(rounds):
            t0 = time.time_ns()
            host = self.call("clock")["time_ns"]
            t1 = time.time_ns()
            rtt = t1 - t0
            if best is None or rtt < best[1] * 2:
                best = (host - (t0 + t1) // 2, rtt // 2)
        assert best is not None
        return best

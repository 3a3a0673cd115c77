"""The host agent's loop: `python -m harness.agent --work DIR --lease SECONDS`, run by the control node over an SSH
channel. One JSON object per line both ways (`loads.control`'s encoding): requests `{"id", "op", ...args}`, answers
`{"type": "reply", "id", "ok", "result"|"error"}`, and notices `{"type": "event", "record"}` (a fault's events, in
this host's clock) pushed as they happen. Each request runs in a thread of its own, so a long one (a fault's revert
that restarts a broker) never holds up another (the lease's `renew`).

The lease: every line from the control node renews it. When the control node is lost (the channel's EOF, or no line
within the lease), the agent reverts every fault it applied (newest first), writes what it did to
`<work>/agent.log`, and exits; nodes and stores stay for `rmq-chaos cleanup --hosts`, which ends them through the
journal in `<work>/state`. So a fault never outlives its control node by more than the lease (plus its revert).
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

from loads import control

log = logging.getLogger("harness.agent")

DEFAULT_LEASE_S = 10.0
WATCH_S = 0.2


class Agent:
    def __init__(self, work: Path, lease_s: float) -> None:
        from faults.journal import Journal

        self.work = work
        self.state = work / "state"
        self.state.mkdir(parents=True, exist_ok=True)
        os.environ["RMQ_CHAOS_STATE"] = str(self.state)
        self.journal = Journal(self.state)
        self.lease_s = lease_s
        self.heard = time.monotonic()
        self.nodes: dict[str, Any] = {}  # name -> harness.backends.local.hosted_node.HostedNode
        self.faults: dict[str, Any] = {}  # fault id -> faults.base.Fault, in the order applied
        self.out_fd = os.dup(1)
        os.dup2(2, 1)  # stray prints go to the log, never into the channel
        self._out = threading.Lock()
        self._lost = threading.Event()

    # --- the channel ------------------------------------------------------------------------------------------

    def send(self, message: dict[str, Any]) -> None:
        data = control.encode(message)
        with self._out:
            try:
                while data:
                    data = data[os.write(self.out_fd, data):]
            except OSError:
                self.lost("the channel to the control node is closed")

    def notify(self, record: dict[str, Any]) -> None:
        self.send({"type": "event", "record": record})

    def serve(self) -> int:
        from harness.agent import ops

        threading.Thread(target=self._watch_lease, name="lease", daemon=True).start()
        for line in sys.stdin.buffer:
            self.heard = time.monotonic()
            msg = control.decode(line)
            if msg is None or self._lost.is_set():
                continue
            if msg.get("op") == "renew":
                self.send({"type": "reply", "id": msg.get("id"), "ok": True, "result": {}})
                continue
            threading.Thread(target=self._handle, args=(ops, msg), daemon=True).start()
        self.lost("the control node closed the channel (EOF)")
        return 0

    def _handle(self, ops: Any, msg: dict[str, Any]) -> None:
        op = str(msg.get("op"))
        fn = ops.OPS.get(op)
        try:
            if fn is None:
                raise ValueError(f"unknown op {op!r}; allowed: {', '.join(sorted(ops.OPS))}")
            result = fn(self, msg)
            self.send({"type": "reply", "id": msg.get("id"), "ok": True, "result": result})
        except Exception as err:  # noqa: BLE001 - the control node gets every failure as one line
            log.exception("op %s failed", op)
            self.send({"type": "reply", "id": msg.get("id"), "ok": False, "error": _one_line(err)})

    # --- losing the control node -------------------------------------------------------------------------------

    def _watch_lease(self) -> None:
        while not self._lost.wait(WATCH_S):
            if time.monotonic() - self.heard > self.lease_s:
                self.lost(f"no word from the control node within the lease ({self.lease_s:g} s)")

    def lost(self, why: str) -> None:
        """Revert every fault this agent applied (newest first), then exit."""
        if self._lost.is_set():
            return
        self._lost.set()
        log.warning("control node lost: %s; reverting %d fault(s)", why, len(self.faults))
        for fault_id, fault in reversed(list(self.faults.items())):
            try:
                fault.revert()
                log.warning("reverted %s", fault_id)
            except Exception:  # noqa: BLE001 - try every fault; cleanup --hosts finishes what fails
                log.exception("revert of %s failed", fault_id)
        logging.shutdown()
        os._exit(0)


def _one_line(err: BaseException) -> str:
    text = " ".join(str(err).split()) or type(err).__name__
    return text if type(err).__name__ in text else f"{type(err).__name__}: {text}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.agent", description="the rmq-chaos host agent")
    parser.add_argument("--work", required=True, help="this host's work directory (state, runs, venv)")
    parser.add_argument("--lease", type=float, default=DEFAULT_LEASE_S,
                        help="seconds without a word from the control node before the agent reverts its faults")
    args = parser.parse_args(argv)
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    logging.basicConfig(level=logging.INFO, filename=str(work / "agent.log"),
                        format="%(asctime)s agent %(process)d %(levelname)s %(name)s: %(message)s")
    return Agent(work, args.lease).serve()

"""The HA relay process (`python -m faults.relay`) of a slave: the backend starts it before the slave, points the
slave's `haMasterAddress` at `listen`, and hands `extras()` to the slave's `NodeTarget` so `ha_link` finds it."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field

from faults.errors import FaultError
from faults.journal import Journal
from harness.resources.processes import ManagedProcess, spawn

START_TIMEOUT_S = 15.0


@dataclass
class RelayProcess:
    listen: str
    upstream: str
    control: str
    probe_port: int
    process: ManagedProcess = field(repr=False)

    @classmethod
    def start(cls, journal: Journal, upstream: str, control: str, *, listen: str = "127.0.0.1:0",
              run_id: str = "", name: str = "ha-relay", log_path: str | None = None) -> RelayProcess:
        """Start the relay; `listen` port 0 picks a free port (read back from the relay's ready line)."""
        argv = [sys.executable, "-m", "faults.relay", "--listen", listen, "--upstream", upstream, "--control", control]
        proc = spawn(journal, argv, name=name, run_id=run_id, stdout=subprocess.PIPE,
                     log_path=log_path, extra_undo=[{"op": "rm", "path": control}])
        line = proc.popen.stdout.readline()
        if not line:
            proc.stop()
            raise FaultError(f"HA relay did not start (exit {proc.popen.poll()}, log: {log_path})")
        ready = json.loads(line)
        return cls(ready["listen"], ready["upstream"], control, ready["probe_port"], proc)

    @property
    def listen_port(self) -> int:
        return int(self.listen.rpartition(":")[2])

    def extras(self) -> dict:
        return {"ha_relay": {"control": self.control, "listen": self.listen, "upstream": self.upstream,
                             "pid": self.process.pid}}

    def stop(self) -> None:
        self.process.stop()
        if os.path.exists(self.control):
            os.unlink(self.control)

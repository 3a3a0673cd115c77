"""A node of the local backend: `harness.resources.ProcessNode` (a journaled process in the node's cgroups, with a
pidfile, stoppable and startable: the faults' `NodeControl`) plus the broker checks of readiness and catch-up:
ready = the process runs, its port accepts, and (brokers) it answers GET_BROKER_RUNTIME_INFO and the name server
lists it; caught up = its commitLogMaxOffset has reached the master's.

`to_json()` names `BrokerNode.from_json` as the factory, so `rmq-chaos fault ...` rebuilds the same checks for a node
of a running cluster from the cluster state file (the readonly_fs revert stops and starts the broker)."""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from faults.errors import NodeNotBack
from faults.journal import Journal
from harness.backends.broker_checks import BrokerChecks
from harness.resources.node_process import ProcessNode

FACTORY = "harness.backends.local.node:BrokerNode.from_json"
STOP_TIMEOUT_S = 15.0


class NodeNotReady(NodeNotBack):
    pass


@dataclass
class BrokerNode(ProcessNode, BrokerChecks):
    NOT_READY = NodeNotReady
    role: str = "namesrv"
    addr: str = ""
    namesrv_addr: str | None = None
    master_addr: str | None = None
    broker_id: int | None = None

    def wait_ready(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        super().wait_ready(timeout_s)
        self.wait_registered(deadline)

    def to_json(self) -> dict[str, Any]:
        return {**super().to_json(), "factory": FACTORY, "role": self.role, "addr": self.addr,
                "namesrv_addr": self.namesrv_addr, "master_addr": self.master_addr, "broker_id": self.broker_id}

    @classmethod
    def from_json(cls, data: dict, journal: Journal) -> BrokerNode:
        keys = ("name", "argv", "run_id", "pidfile", "cgroups", "env", "cwd", "log_path", "ready_port", "ready_host",
                "stop_timeout_s", "role", "addr", "namesrv_addr", "master_addr", "broker_id")
        return cls(journal=journal, **{k: data[k] for k in keys if k in data})


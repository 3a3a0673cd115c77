"""A node of an `ssh` cluster, as the control node holds it: made and driven by its host's agent, checked over the
network as every backend's brokers are (`BrokerChecks`: registered with the name server, caught up with the master).

It is the faults' `NodeControl` (stop, start, wait_ready, wait_caught_up through the agent) and hands a fault to
run to the agent (`fault_runner`): the fault's code runs on the host, its journal entry is in the host's state
directory, its events come back over the channel. `RemotePids` gives the node's pids on its host (as the host sees
them: for the record, not for signalling from here)."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from faults.errors import FaultError, FaultNotEffective, NodeNotBack
from harness.backends.broker_checks import BrokerChecks
from harness.hosts.agent_client import AgentError

NOT_EFFECTIVE = "FaultNotEffective: "
"""How the agent prefixes an error of that class in its answer (harness/agent/server.py)."""


class RemoteNodeNotReady(NodeNotBack):
    pass


@dataclass
class RemotePids:
    agent: Any
    node: str

    def __call__(self) -> list[int]:
        try:
            return list(self.agent.call("node_status", node=self.node, timeout_s=15)["pids"])
        except Exception:  # noqa: BLE001 - a host that does not answer has no pids we can name
            return []

    def to_json(self) -> dict[str, Any]:
        return {"static": []}


@dataclass
class RemoteNode(BrokerChecks):
    NOT_READY = RemoteNodeNotReady
    name: str
    role: str
    host: str  # the inventory's host name
    addr: str
    agent: Any = field(repr=False)  # harness.hosts.agent_client.AgentClient
    namesrv_addr: str | None = None
    master_addr: str | None = None
    broker_id: int | None = None
    stopped: bool = False
    fault_extras: dict[str, Any] = field(default_factory=dict)
    """what a fault on this node needs to know of the cluster (network faults: peers, kept addresses, probe ports,
    sinks: docs/faults.md), sent with each fault to the agent"""

    @property
    def pid_source(self) -> RemotePids:
        return RemotePids(self.agent, self.name)

    def pids(self) -> list[int]:
        return self.pid_source()

    def start(self) -> None:
        self.stopped = False
        self.agent.call("node_start", node=self.name)

    def stop(self) -> None:
        self.stopped = True
        self.agent.call("node_stop", node=self.name, timeout_s=120)

    def wait_ready(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        try:
            self.agent.call("node_ready", node=self.name, ready_timeout_s=timeout_s, timeout_s=timeout_s + 10)
        except Exception as err:  # noqa: BLE001 - the agent's one line, named as this node's
            raise RemoteNodeNotReady(f"{self.name} on host {self.host}: {err}") from None
        self.wait_registered(deadline)

    def exit_status(self) -> str | None:
        if self.stopped:
            return None
        try:
            return self.agent.call("node_status", node=self.name, timeout_s=15).get("exit")
        except Exception:  # noqa: BLE001 - a diagnostic must not raise
            return None

    @property
    def started_pids(self) -> list[int]:
        try:
            return list(self.agent.call("node_status", node=self.name, timeout_s=15).get("started_pids") or [])
        except Exception:  # noqa: BLE001 - a diagnostic must not raise
            return []

    def thread_dump(self) -> list[int]:
        """Have the host's agent send SIGQUIT to this node's dumping processes; the pids it signalled."""
        return list(self.agent.call("node_thread_dump", node=self.name, timeout_s=15).get("pids") or [])

    def memory_status(self) -> str:
        """The `Vm*` lines of this node's broker processes, read by the host's agent (`collectors.memory_status`)."""
        return str(self.agent.call("node_memory_status", node=self.name, timeout_s=15).get("text") or "")

    def fault_runner(self, spec: Any, emit: Any) -> RemoteFault:
        return RemoteFault(self, spec, dict(self.fault_extras))

    def to_json(self) -> dict[str, Any]:
        return {"factory": "harness.backends.ssh.remote_node:unavailable", "name": self.name, "host": self.host}


def unavailable(data: dict[str, Any], journal: Any) -> None:
    """A remote node cannot be rebuilt outside the run that holds its host's agent."""
    raise FaultError(f"node {data.get('name')} lives on host {data.get('host')}: use `rmq-chaos fault` with --hosts "
                     "against the run that holds it")


@dataclass
class RemoteFault:
    """A fault run by the agent of the node's host (same apply / verify / revert as a local one)."""

    node: RemoteNode
    spec: Any  # harness.scenario.FaultSpec
    extras: dict[str, Any]
    applied: bool = False

    def apply(self) -> dict[str, Any]:
        result = self.node.agent.call("fault_apply", node=self.node.name, kind=self.spec.kind,
                                      params=self.spec.params, fault_id=self.spec.id, extras=self.extras,
                                      target=self.spec.target, timeout_s=300)
        self.applied = True
        return result["evidence"]

    def verify(self) -> dict[str, Any]:
        """The agent's verify; a fault the agent found not effective is `FaultNotEffective` here too, so it ends the
        run in the same one line as on this machine (`<id> (<kind> on <target>): not effective: ... against ...`)."""
        try:
            return self.node.agent.call("fault_verify", fault_id=self.spec.id, timeout_s=300)["evidence"]
        except AgentError as err:
            _, marker, text = str(err).partition(NOT_EFFECTIVE)
            if marker:
                raise FaultNotEffective(text) from None
            raise

    def revert(self) -> dict[str, Any]:
        if not self.applied:
            return {"reverted": False, "reason": "not applied"}
        evidence = self.node.agent.call("fault_revert", fault_id=self.spec.id, timeout_s=600)["evidence"]
        self.applied = False
        return evidence

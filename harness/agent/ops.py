"""What the host agent does for the control node, one function per op (`OPS`), each taking the request and returning
a JSON-able result (an exception becomes the reply's one-line error):

- `hello`: this host as the control node must know it (name, Python, machine, clock, the checks of a node's needs);
- `clock`: this host's wall clock now (the control node measures its offset from round trips);
- `ports`: TCP ports free on an address of this host (single ones, brokers' blocks of three);
- `node_create`, `node_start`, `node_stop`, `node_ready`, `node_status`, `node_destroy`: a node of a run, made from
  the control node's `NodeSpec` (`harness.backends.hosted_node`), journaled in this host's state directory;
- `fault_apply`, `fault_verify`, `fault_revert`: a fault on one of its nodes (its events come back as notices);
- `sample`: each node's process figures now (cpu, rss, swap, io), for the control node's metrics collector;
- `cleanup`: `faults.cleanup` of this host's journal (what dead runs and dead agents left).
"""
from __future__ import annotations

import os
import platform
import socket
import sys
import time
from typing import Any

from harness.agent.checks import host_checks


def hello(agent: Any, msg: dict[str, Any]) -> dict[str, Any]:
    return {"hostname": socket.gethostname(), "python": f"{sys.version_info[0]}.{sys.version_info[1]}",
            "machine": platform.machine(), "pid": os.getpid(), "time_ns": time.time_ns(),
            "work": str(agent.work), "checks": host_checks(msg.get("rocketmq_home"), msg.get("version"))}


def clock(agent: Any, msg: dict[str, Any]) -> dict[str, Any]:
    return {"time_ns": time.time_ns()}


def ports(agent: Any, msg: dict[str, Any]) -> dict[str, Any]:
    """Free ports on `host` of this machine: one per `single`, a broker's three (listen - 2, listen, listen + 1) per
    `brokers` (as `harness.backends.ports.PortPicker` picks them on the local backend)."""
    from harness.backends.ports import PortPicker

    picker = PortPicker(host=msg["host"])
    return {"single": [picker.one() for _ in range(int(msg.get("single", 0)))],
            "brokers": [list(picker.broker()) for _ in range(int(msg.get("brokers", 0)))]}


def node_create(agent: Any, msg: dict[str, Any]) -> dict[str, Any]:
    from harness.backends.hosted_node import HostedNode, NodeSpec
    from harness.backends.programs import Program

    spec = NodeSpec.from_json(msg["spec"])
    if msg.get("rocketmq_home"):
        os.environ["ROCKETMQ_HOME"] = msg["rocketmq_home"]
    program = Program.choose(msg.get("program", "emulator"), spec.version)
    hosted = HostedNode.create(agent.journal, spec, program)
    agent.nodes[spec.name] = hosted
    return hosted.describe()


def _node(agent: Any, msg: dict[str, Any]) -> Any:
    name = msg.get("node")
    if name not in agent.nodes:
        raise KeyError(f"no node {name!r} on this host; allowed: {', '.join(agent.nodes) or 'none'}")
    return agent.nodes[name]


def node_start(agent: Any, msg: dict[str, Any]) -> dict[str, Any]:
    hosted = _node(agent, msg)
    hosted.node.start()
    return {"pids": hosted.node.pids()}


def node_stop(agent: Any, msg: dict[str, Any]) -> dict[str, Any]:
    hosted = _node(agent, msg)
    hosted.node.stop()
    return {"pids": hosted.node.pids()}


def node_ready(agent: Any, msg: dict[str, Any]) -> dict[str, Any]:
    """Running and its port open (the broker checks over the network are the control node's)."""
    hosted = _node(agent, msg)
    from harness.resources.node_process import ProcessNode

    ProcessNode.wait_ready(hosted.node, float(msg.get("ready_timeout_s", 60)))
    return {"pids": hosted.node.pids()}


def node_status(agent: Any, msg: dict[str, Any]) -> dict[str, Any]:
    hosted = _node(agent, msg)
    return {"pids": hosted.node.pids(), "exit": hosted.node.exit_status(),
            "started_pids": list(hosted.node.started_pids)}


def node_destroy(agent: Any, msg: dict[str, Any]) -> dict[str, Any]:
    """Stop the node, then its store and cgroups; every step tried, the errors returned."""
    hosted = _node(agent, msg)
    errors = []
    for what, step in (("stop", hosted.node.stop), ("store", hosted.store.destroy if hosted.store else None),
                       ("cgroups", hosted.cgroups.destroy)):
        if step is None:
            continue
        try:
            step()
        except Exception as err:  # noqa: BLE001 - take everything down, report the failures
            errors.append(f"{what}: {err}")
    agent.nodes.pop(hosted.spec.name, None)
    return {"errors": errors}


def fault_apply(agent: Any, msg: dict[str, Any]) -> dict[str, Any]:
    from faults.registry import fault_class

    hosted = _node(agent, msg)
    cls = fault_class(msg["kind"])
    fault = cls(hosted.target(msg.get("extras")), msg.get("params") or {}, journal=agent.journal,
                emit=agent.notify, fault_id=msg["fault_id"])
    evidence = fault.apply()
    agent.faults[msg["fault_id"]] = fault
    return {"evidence": evidence}


def _fault(agent: Any, msg: dict[str, Any]) -> Any:
    fault_id = msg.get("fault_id")
    if fault_id not in agent.faults:
        raise KeyError(f"no fault {fault_id!r} applied on this host")
    return agent.faults[fault_id]


def fault_verify(agent: Any, msg: dict[str, Any]) -> dict[str, Any]:
    return {"evidence": _fault(agent, msg).verify()}


def fault_revert(agent: Any, msg: dict[str, Any]) -> dict[str, Any]:
    fault = _fault(agent, msg)
    evidence = fault.revert()
    agent.faults.pop(msg["fault_id"], None)
    return {"evidence": evidence}


def sample(agent: Any, msg: dict[str, Any]) -> dict[str, Any]:
    from harness.collectors.process_sampler import ProcessSampler

    samplers = agent.__dict__.setdefault("samplers", {})
    out = {}
    for name in msg.get("nodes") or list(agent.nodes):
        if name in agent.nodes:
            sampler = samplers.setdefault(name, ProcessSampler(agent.nodes[name].node.pid_source))
            out[name] = sampler.sample()
    return {"samples": out, "time_ns": time.time_ns()}


def cleanup(agent: Any, msg: dict[str, Any]) -> dict[str, Any]:
    from faults.cleanup import cleanup as clean

    report = clean(agent.state)
    return {"reverted": len(report.reverted), "failed": [str(f.get("error")) for f in report.failed],
            "live": len(report.live)}


OPS = {f.__name__: f for f in (hello, clock, ports, node_create, node_start, node_stop, node_ready, node_status,
                               node_destroy, fault_apply, fault_verify, fault_revert, sample, cleanup)}

"""What the host agent does for the control node, one function per op (`OPS`), each taking the request and returning
a JSON-able result (an exception becomes the reply's one-line error):

- `hello`: this host as the control node must know it (name, Python, machine, clock, the checks of a node's needs);
- `clock`: this host's wall clock now (the control node measures its offset from round trips);
- `ports`: TCP ports free on an address of this host (single ones, brokers' blocks of three);
- `node_create`, `node_start`, `node_stop`, `node_ready`, `node_status`, `node_destroy`: a node of a run, made from
  the control node's `NodeSpec` (`harness.backends.local.hosted_node`), journaled in this host's state directory;
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
            "work": str(agent.work), "checks": host_checks(msg.get("rocketmq_home"), msg.get("version")),
            "ssh_client": (os.environ.get("SSH_CONNECTION") or "").split(" ")[0] or None}


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
    from harness.backends.local.hosted_node import HostedNode, NodeSpec
    from harness.backends.programs import Program

    spec = NodeSpec.from_json(msg["spec"])
    if msg.get("rocketmq_home"):
        os.environ["ROCKETMQ_HOME"] = msg["rocketmq_home"]
    program = Program.choose(msg.get("program", "emulator"), spec.version)
    hosted = HostedNode.create(agent.journal, spec, program)
    agent.nodes[spec.name] = hosted
    return hosted.describe()


def _known(table: dict[str, Any], key: Any, what: str) -> Any:
    """`table[key]`, or a KeyError naming the `what` and the allowed keys."""
    if key not in table:
        raise KeyError(f"no {what} {key!r} on this host; allowed: {', '.join(table) or 'none'}")
    return table[key]


def _node(agent: Any, msg: dict[str, Any]) -> Any:
    return _known(agent.nodes, msg.get("node"), "node")


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


def node_thread_dump(agent: Any, msg: dict[str, Any]) -> dict[str, Any]:
    """SIGQUIT to the node's processes that answer it with a thread dump (`harness.collectors.thread_dumps`)."""
    from harness.collectors.thread_dumps import signal_dump

    return {"pids": signal_dump(_node(agent, msg).node.pids())}


def node_memory_status(agent: Any, msg: dict[str, Any]) -> dict[str, Any]:
    """The memory status of the node's broker processes (`harness.collectors.memory_status`), as text."""
    from harness.collectors.memory_status import status_text
    from harness.collectors.thread_dumps import answering_pids

    hosted = _node(agent, msg)
    return {"text": status_text(answering_pids(hosted.node.pids()), hosted.spec.name)}


def node_destroy(agent: Any, msg: dict[str, Any]) -> dict[str, Any]:
    """Stop the node, settle the faults on it whose revert failed, then its store and cgroups; every step tried, the
    errors returned. A node this host never made (the control node was stopped while it asked for it) is absent."""
    if msg.get("node") not in agent.nodes:
        return {"errors": [], "absent": True}
    hosted = _node(agent, msg)
    errors = []
    for what, step in (("stop", hosted.node.stop), ("faults", lambda: _settle_faults_of(agent, hosted.spec.name)),
                       ("store", hosted.store.destroy if hosted.store else None), ("cgroups", hosted.cgroups.destroy)):
        if step is None:
            continue
        try:
            step()
        except Exception as err:  # noqa: BLE001 - take everything down, report the failures
            errors.append(f"{what}: {err}")
    agent.nodes.pop(hosted.spec.name, None)
    return {"errors": errors}


def _settle_faults_of(agent: Any, node: str) -> None:
    """The faults on `node` still applied when it is taken down (their revert failed: the node they restart would
    not start) are replayed from this host's journal, as `cleanup` would, so the agent holds none of them."""
    from faults.cleanup import settle

    mine = {fid: f for fid, f in agent.faults.items() if f.target.name == node}
    report = settle(agent.journal, [f.entry_id for f in mine.values() if f.entry_id])
    for fid in mine:
        agent.faults.pop(fid, None)
    report.raise_if_failed()


def fault_apply(agent: Any, msg: dict[str, Any]) -> dict[str, Any]:
    from faults.registry import fault_class

    hosted = _node(agent, msg)
    cls = fault_class(msg["kind"])
    emit = agent.notify
    target = msg.get("target")
    if target and target != msg["node"]:  # the events name the scenario's target and the node it names
        def emit(event: dict[str, Any]) -> None:
            agent.notify({**event, "target": target, "node": msg["node"]})
    fault = cls(hosted.target(msg.get("extras")), msg.get("params") or {}, journal=agent.journal,
                emit=emit, fault_id=msg["fault_id"])
    evidence = fault.apply()
    agent.faults[msg["fault_id"]] = fault
    return {"evidence": evidence}


def _fault(agent: Any, msg: dict[str, Any]) -> Any:
    return _known(agent.faults, msg.get("fault_id"), "fault applied")


def fault_verify(agent: Any, msg: dict[str, Any]) -> dict[str, Any]:
    return {"evidence": _fault(agent, msg).verify()}


def fault_revert(agent: Any, msg: dict[str, Any]) -> dict[str, Any]:
    fault = _fault(agent, msg)
    evidence = fault.revert()
    agent.faults.pop(msg["fault_id"], None)
    return {"evidence": evidence}


def sink_start(agent: Any, msg: dict[str, Any]) -> dict[str, Any]:
    """A TCP sink on `host` of this machine (what a bandwidth fault on a peer measures its rate against), journaled
    as a process of the run; ended with `sink_stop` or by cleanup."""
    import json
    import subprocess

    from harness.resources.processes import spawn

    log = agent.work / "runs" / msg["run_id"] / "sink.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    proc = spawn(agent.journal, [sys.executable, "-m", "faults.net_probe", "sink", "--listen", f"{msg['host']}:0"],
                 name="sink", run_id=msg["run_id"], log_path=str(log), stdout=subprocess.PIPE)
    line = proc.popen.stdout.readline() if proc.popen.stdout else b""
    agent.sink = proc
    return json.loads(line or b"{}")


def sink_stop(agent: Any, msg: dict[str, Any]) -> dict[str, Any]:
    proc = getattr(agent, "sink", None)
    if proc is not None:
        proc.stop(5.0)
        agent.sink = None
    return {}


def load_workers(agent: Any, msg: dict[str, Any]) -> dict[str, Any]:
    """`count` Locust workers of the run's load for the master at `master_host:master_port`, writing their rows
    under `<work>/runs/<run_id>/` (fetched by the control node after the stop); journaled processes."""
    from harness.resources.processes import spawn

    run_dir = agent.work / "runs" / msg["run_id"]
    (run_dir / "logs" / "load").mkdir(parents=True, exist_ok=True)
    spec = run_dir / "load-spec.json"
    spec.write_text(msg["spec"], encoding="utf-8")
    workers = agent.__dict__.setdefault("load_procs", [])
    for _ in range(int(msg.get("count", 1))):
        argv = [sys.executable, "-m", "loads.headless", "--role", "worker", "--master-host", msg["master_host"],
                "--master-port", str(msg["master_port"]), "--spec", str(spec), "--run-dir", str(run_dir),
                "--run-id", msg["run_id"]]
        workers.append(spawn(agent.journal, argv, name=f"load-worker-{len(workers) + 1}", run_id=msg["run_id"],
                             log_path=str(run_dir / "logs" / "load" / f"worker-{len(workers) + 1}.log")))
    return {"pids": [w.popen.pid for w in workers], "run_dir": str(run_dir)}


def load_status(agent: Any, msg: dict[str, Any]) -> dict[str, Any]:
    """Each load worker: pid, running or its exit code."""
    return {"workers": [{"pid": w.popen.pid, "code": w.popen.poll()} for w in agent.__dict__.get("load_procs", [])]}


def load_end(agent: Any, msg: dict[str, Any]) -> dict[str, Any]:
    """Wait for the workers to exit after their master drained them (SIGTERM, which also drains, after
    `timeout_s`); their journal entries closed."""
    import subprocess

    codes = []
    for w in agent.__dict__.get("load_procs", []):
        try:
            w.popen.wait(float(msg.get("timeout_s", 30)))
        except subprocess.TimeoutExpired:
            pass
        w.stop(5.0)
        codes.append(w.popen.returncode)
    agent.__dict__["load_procs"] = []
    return {"codes": codes}


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
                               node_thread_dump, node_memory_status, node_destroy, fault_apply, fault_verify,
                               fault_revert, sink_start, sink_stop, sample, load_workers, load_status, load_end,
                               cleanup)}

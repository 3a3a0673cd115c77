"""Nodes for fault tests, the crash harness and the soak benchmark: real OS resources (a loop-mounted ext4 store,
cgroups, the stand-in broker `target_node.py` spawned into them), each journaled, and their teardown."""
from __future__ import annotations

import json
import socket
import sys
from dataclasses import dataclass
from pathlib import Path

from faults.journal import Journal
from faults.target import NodeTarget
from harness.resources import LoopStore, NodeCgroups, ProcessNode

TARGET_NODE = str(Path(__file__).with_name("target_node.py"))
STORE_BYTES = 96 << 20
HEAP_BYTES = 48 << 20


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Node:
    target: NodeTarget
    control: ProcessNode
    store: LoopStore
    cgroups: NodeCgroups
    port: int

    def status(self) -> dict:
        with socket.create_connection(("127.0.0.1", self.port), timeout=5) as s:
            return json.loads(s.makefile().readline())


def make_node(journal: Journal, base: Path, run_id: str, name: str, *, role: str = "slave",
              heap: int = HEAP_BYTES, store_bytes: int = STORE_BYTES, extras: dict | None = None,
              node_args: list[str] = ()) -> Node:
    """`node_args`: more arguments of `target_node.py` (e.g. `--record-bytes 65536 --interval-ms 0`)."""
    cgroups = NodeCgroups.create(journal, run_id, name)
    store = LoopStore.create(journal, str(base / f"{name}.img"), str(base / f"{name}-store"), store_bytes,
                             run_id=run_id, node=name)
    port = free_port()
    control = ProcessNode(journal=journal, name=name, run_id=run_id,
                          argv=[sys.executable, TARGET_NODE, "--store", store.mount, "--port", str(port),
                                "--heap", str(heap), *node_args],
                          pidfile=str(base / "pids" / f"{name}.pid"), cgroups=cgroups.dirs,
                          log_path=str(base / f"{name}.log"), ready_port=port)
    control.start()
    control.wait_ready(30)
    target = NodeTarget(name=name, role=role, run_id=run_id, pids=control.pid_source, cgroups=dict(cgroups.paths),
                        store_mount=store.mount, store_device=store.device, store_image=store.image,
                        ports={"listen": port}, control=control, extras=dict(extras or {}))
    return Node(target, control, store, cgroups, port)


def teardown_node(node: Node) -> None:
    node.control.stop()
    node.cgroups.destroy()
    node.store.destroy()


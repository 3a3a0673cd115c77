"""One node on the machine this code runs on, whoever asked for it (the local backend for its own machine, the host
agent for its host): `NodeSpec` says what the node is (name, role, address, its conf properties, where its
directory and store go, heap, version), and `HostedNode.create` makes it: the node's cgroups, its loop-mounted store
(brokers), its conf file and its process (`BrokerNode`, not started), everything journaled; `target()` is the
`NodeTarget` faults get, `destroy()` takes it all away again.

`NodeSpec` round-trips through JSON: the control node of an `ssh` cluster builds the specs (it knows each host's
work directory, so the store path that goes into broker.conf) and the agent makes them."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from faults.target import NodeTarget
from harness.backends.brokerconf import render
from harness.backends.local.node import STOP_TIMEOUT_S, BrokerNode
from harness.backends.programs import Program


@dataclass
class NodeSpec:
    name: str
    role: str  # namesrv | master | slave
    run_id: str
    node_dir: str
    addr: str  # host:port the node listens on (its host's address)
    props: dict[str, Any]  # the conf file's properties, in order
    version: str
    heap: str
    store_size: int | None = None  # brokers: size of the loop-mounted store at `<node_dir>/store`
    broker_id: int | None = None
    namesrv_addr: str | None = None
    master_addr: str | None = None
    extras: dict[str, Any] = field(default_factory=dict)

    @property
    def host(self) -> str:
        return self.addr.rpartition(":")[0]

    @property
    def port(self) -> int:
        return int(self.addr.rpartition(":")[2])

    @property
    def store_mount(self) -> str:
        return str(Path(self.node_dir) / "store")

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> NodeSpec:
        return cls(**data)


@dataclass
class HostedNode:
    spec: NodeSpec
    node: BrokerNode
    cgroups: Any  # harness.resources.cgroups.NodeCgroups
    store: Any | None  # harness.resources.loop_store.LoopStore
    conf: Path
    log_sources: list[Path]

    @classmethod
    def create(cls, journal: Any, spec: NodeSpec, program: Program, *, cgroups: Any = None,
               store: Any = None) -> HostedNode:
        """Make what the node needs (its `cgroups` and `store` when the caller made them already)."""
        from harness.resources.cgroups import NodeCgroups
        from harness.resources.loop_store import LoopStore

        node_dir = Path(spec.node_dir)
        node_dir.mkdir(parents=True, exist_ok=True)
        if cgroups is None:
            cgroups = NodeCgroups.create(journal, spec.run_id, spec.name)
        if store is None and spec.store_size:
            store = LoopStore.create(journal, str(node_dir / "store.img"), spec.store_mount, spec.store_size,
                                     run_id=spec.run_id, node=spec.name, label=f"rmq-{spec.name}")
        conf = node_dir / f"{spec.name}.conf"
        conf.write_text(render(spec.props), encoding="utf-8")
        log_dir = node_dir / "logs"
        log_dir.mkdir(exist_ok=True)
        env = program.env(version=spec.version, heap=spec.heap, node_dir=node_dir, log_dir=log_dir, bind=spec.host)
        node = BrokerNode(journal=journal, name=spec.name, argv=program.argv(spec.role, conf), run_id=spec.run_id,
                          pidfile=str(node_dir / "pid"), cgroups=cgroups.dirs, env=env, cwd=str(node_dir),
                          log_path=str(node_dir / "stdout.log"), ready_port=spec.port, ready_host=spec.host,
                          stop_timeout_s=STOP_TIMEOUT_S, role=spec.role, addr=spec.addr,
                          namesrv_addr=spec.namesrv_addr, master_addr=spec.master_addr, broker_id=spec.broker_id)
        sources = [*program.log_dirs(node_dir, log_dir), node_dir / "stdout.log", conf]
        return cls(spec, node, cgroups, store, conf, sources)

    def target(self, extras: dict[str, Any] | None = None) -> NodeTarget:
        s, store = self.spec, self.store
        ports = {"listen": s.port, **({"ha": int(s.props["haListenPort"])} if "haListenPort" in s.props else {})}
        return NodeTarget(name=s.name, role=s.role, run_id=s.run_id, pids=self.node.pid_source,
                          cgroups=dict(self.cgroups.paths), store_mount=store.mount if store else None,
                          store_device=store.device if store else None, store_image=store.image if store else None,
                          ports=ports, control=self.node,
                          extras={"conf": str(self.conf), "addr": s.addr, **s.extras, **(extras or {})})

    def describe(self) -> dict[str, Any]:
        """What the control node keeps of a node made elsewhere (for cluster.json and its own NodeTarget)."""
        store = self.store
        return {"name": self.spec.name, "pidfile": self.node.pidfile, "pids": self.node.pids(),
                "cgroups": dict(self.cgroups.paths), "store_mount": store.mount if store else None,
                "store_device": store.device if store else None, "store_image": store.image if store else None,
                "conf": str(self.conf), "log_sources": [str(p) for p in self.log_sources]}

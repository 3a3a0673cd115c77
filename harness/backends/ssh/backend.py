"""The `ssh` backend: the topology's nodes (name server, controllers, each broker group's brokers; `harness.topology`) on
the hosts of an inventory (`cluster.hosts`, `--hosts FILE`; Ansible's YAML format), placed by `cluster.placement`,
each made and driven by a host agent (`harness.agent`) that the harness puts on its host and runs over SSH (OpenSSH,
one multiplexed connection per host).

`start_nodes`: every host is reached and checked before anything starts anywhere (`harness.hosts.deploy`); the
harness is installed where its bundle is not there yet; one agent per host starts (its lease renewed from here),
cleans up what dead runs left in its journal, and its clock offset to this machine is measured; free ports are taken
on each host's address; the nodes are made from `NodeSpec`s the control node builds (each conf from the backend's
`mode`: master_slave or controller) and started in the mode's order. Without a placement the inventory's groups
place them (`placement_from_groups`: `namesrv`, `controller`, `master`, `slave`). Readiness, cluster.json, the effective-config check, the read-back and
the shared `down()` flow are `ClusterBackend`'s: the brokers are reached over the network from here. Faults on a
node run on its host through its agent; their events come back and are put on this machine's clock (offset measured
at the start and the end, both in cluster.json with their error bounds)."""
from __future__ import annotations

import io
import json
import shutil
import tarfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from faults.target import NodeTarget
from harness.backends.base import ClusterBackend
from harness.backends.local.hosted_node import NodeSpec
from harness.backends.programs import Program
from harness.backends.ssh.remote_node import RemoteNode, RemotePids
from harness.collectors.metrics import MetricsNode
from harness.hosts.agent_client import AgentClient
from harness.hosts.deploy import HostNeeds, install, preflight
from harness.hosts.inventory import inventory_of
from harness.hosts.ssh import SshHost, make_control_dir
from harness.rundir import RunDir
from harness.scenario import Scenario

SINK_FAULTS = ("net_bandwidth", "net_delay", "partition")
"""Network faults: a sink on every host when a scenario has them (what a bandwidth fault measures against, and the
port a partition probes a load host on)."""
LOAD_PEER = "load-{host}"
"""A load host as a network fault's peer (a partition of the name server cuts the load's route lookups too)."""
LEASE_S = 10.0
"""How long an agent goes on without a word from this process before it reverts its faults and exits."""


def check_hosts(scenario: Scenario) -> None:
    """Every host the scenario uses reached and checked (`harness.hosts.deploy.preflight`) before anything starts;
    `HostError` / `SshError` with one line naming the host. The connections are closed again."""
    inventory = inventory_of(scenario.cluster.hosts)
    places = [(f"cluster.placement.{node}", w.partition(":")[0]) for node, w in scenario.cluster.placement.items()]
    places += [(f"load.hosts[{i}]", h) for i, h in enumerate(scenario.load.hosts)]
    used = {name: inventory.host(name, where) for where, name in places}  # SourceError: one line
    control = make_control_dir()
    hosts = {n: SshHost(h, control) for n, h in sorted(used.items())}
    apache = scenario.cluster.program == "apache"
    needs = {w.partition(":")[0]: HostNeeds(inventory.hosts[w.partition(":")[0]].rocketmq_home,
                                            scenario.cluster.version)
             for w in scenario.cluster.placement.values()} if apache else {}
    try:
        preflight(hosts, needs)
    finally:
        for ssh in hosts.values():
            ssh.close()
        shutil.rmtree(control, ignore_errors=True)


class SshBackend(ClusterBackend):
    name = "ssh"

    def __init__(self, scenario: Scenario, rd: RunDir, journal: Any, state_dir: Path) -> None:
        super().__init__(scenario, rd, journal, state_dir, Program.choose("emulator"))
        self.inventory = inventory_of(scenario.cluster.hosts)
        self.place = {n: self.inventory.hosts[w.partition(":")[0]] for n, w in scenario.cluster.placement.items()}
        self.fixed_port = {n: int(w.partition(":")[2]) for n, w in scenario.cluster.placement.items()
                           if w.partition(":")[2]}
        used = {h.name: h for h in [*self.place.values(), *(self.inventory.hosts[h] for h in scenario.load.hosts)]}
        control = make_control_dir()
        self.ssh = {name: SshHost(h, control) for name, h in used.items()}
        self.agents: dict[str, AgentClient] = {}
        self.control_addr: str | None = None
        self.sinks: dict[str, str] = {}  # host name -> "addr:port" of its sink (network shaping faults)
        self.offsets: dict[str, dict[str, int]] = {}
        self.specs: dict[str, NodeSpec] = {}

    # --- up ---------------------------------------------------------------------------------------------------

    def start_nodes(self, say: Callable[[str], None]) -> None:
        c = self.scenario.cluster
        apache = c.program == "apache"
        needs = {h.name: HostNeeds(h.rocketmq_home, c.version) for h in self.place.values() if apache}
        say(f"hosts: checking {', '.join(sorted(self.ssh))}")
        preflight(self.ssh, needs)
        self.program = Program("apache") if apache else Program("emulator")
        from harness.hosts.bundle import build_bundle

        bundle = build_bundle()
        for name, ssh in sorted(self.ssh.items()):
            say(f"hosts: the harness on {name} ({ssh.host.address})")
            python = install(ssh, bundle)
            agent = AgentClient(ssh, python, ssh.host.workdir, LEASE_S, on_event=self._event(name),
                                log_path=self.work / f"agent-{name}.log")
            agent.start()
            self.agents[name] = agent
            hello = agent.call("hello", rocketmq_home=ssh.host.rocketmq_home if apache else None, version=c.version)
            self.control_addr = self.control_addr or hello.get("ssh_client")
            agent.call("cleanup")
            if any(f.kind in SINK_FAULTS for _, f in self.scenario.faults):
                sink = agent.call("sink_start", host=ssh.host.address, run_id=self.run_id)
                self.sinks[name] = sink["listen"]
            self._measure_clock(name, "start")
        self._make_nodes()
        self.mode.nodes_made()
        self.start_in_mode_order(say)

    def start_words(self, node: str) -> str:
        return f"{node} on {self.place[node].name} ({self.nodes[node].addr})"

    def _ports(self) -> dict[str, Any]:
        """Free ports on each node's host: one for the name server and a controller, (listen, HA) for a broker."""
        ports: dict[str, Any] = {}
        for n in self.node_order:
            host, single = self.place[n], n not in self.broker_nodes
            got = self.agents[host.name].call("ports", host=host.address, single=int(single),
                                              brokers=int(not single))
            ports[n] = got["single"][0] if single else tuple(got["brokers"][0])
            if n in self.fixed_port:
                ports[n] = self.fixed_port[n] if single else (self.fixed_port[n], self.fixed_port[n] + 1)
        return ports

    def _make_nodes(self) -> None:
        self._create(self._specs(self._ports()))

    def _specs(self, ports: dict[str, Any]) -> list[NodeSpec]:
        """Each node's spec, its conf from the mode: the controllers' DLedger ports and every broker's
        `brokerIP1`/`brokerIP2` are their hosts' addresses."""
        c, mode = self.scenario.cluster, self.mode
        ns_host = self.place["namesrv"]
        self.namesrv_addr = f"{ns_host.address}:{ports['namesrv']}"
        dledger = mode.dledger_nodes()
        if dledger == ("namesrv",):  # the embedded controller's DLedger port: one more free port on its host
            got = self.agents[ns_host.name].call("ports", host=ns_host.address, single=1, brokers=0)
            peer_ports: tuple[int, ...] = (got["single"][0],)
        else:
            peer_ports = tuple(ports[n] for n in dledger)
        mode.place_controllers(peer_ports, hosts=tuple(self.place[n].address for n in dledger))
        specs = [self._spec("namesrv", mode.namesrv_props(ports["namesrv"], Path(self._node_dir("namesrv"))),
                            self.namesrv_addr)]
        for i, n in enumerate(self.topology.controllers):
            specs.append(self._spec(n, mode.controller_props(i, Path(self._node_dir(n))), mode.ctl.addrs[i],
                                    role="controller"))
        for m in self.topology.members:
            host, (listen, ha) = self.place[m.node], ports[m.node]
            self.broker_addrs[m.node] = f"{host.address}:{listen}"
            props = mode.broker_props(m, listen, ha, Path(self._node_dir(m.node)) / "store", host=host.address)
            specs.append(self._spec(m.node, props, self.broker_addrs[m.node],
                                    broker_id=m.broker_id if m.broker_id >= 0 else None, store_size=c.store_size,
                                    role=m.role))
        return specs

    def _create(self, specs: list[NodeSpec]) -> None:
        """Each node made on its host by its agent (not started)."""
        for spec in specs:
            spec.extras.update(self._net_extras(spec.name, {s.name: s for s in specs}))
            host = self.place[spec.name]
            agent = self.agents[host.name]
            self.specs[spec.name] = spec  # before the call: a signal that cuts the wait still takes the node down
            made = agent.call("node_create", spec=spec.to_json(), program=self.program.kind,
                              rocketmq_home=host.rocketmq_home, timeout_s=300)
            node = RemoteNode(name=spec.name, role=spec.role, host=host.name, addr=spec.addr, agent=agent,
                              namesrv_addr=self.namesrv_addr, master_addr=spec.master_addr,
                              broker_id=spec.broker_id)
            node.fault_extras = dict(spec.extras)
            self.nodes[spec.name] = node
            self.log_sources[spec.name] = [Path(p) for p in made["log_sources"]]
            self.targets[spec.name] = NodeTarget(
                name=spec.name, role=spec.role, run_id=self.run_id, pids=RemotePids(agent, spec.name),
                cgroups=made["cgroups"], store_mount=made["store_mount"], store_device=made["store_device"],
                store_image=made["store_image"], ports={"listen": spec.port}, control=node,
                extras={"conf": made["conf"], "addr": spec.addr, "host": host.name, "host_address": host.address})

    def _net_extras(self, node: str, specs: dict[str, NodeSpec]) -> dict[str, Any]:
        """What a network fault on `node` needs (docs/faults.md): the other nodes on other hosts and their hosts'
        addresses, the addresses never to cut (this machine, the node's own host), a port to probe each peer on,
        the peers' sinks."""
        own = self.place[node].address
        hosts = {m: self.place[m] for m in self.node_order if m != node}
        hosts.update({LOAD_PEER.format(host=h): self.inventory.hosts[h] for h in self.scenario.load.hosts})
        peers = {m: h.address for m, h in hosts.items() if h.address != own}
        keep = [a for a in (self.control_addr, own) if a]
        sinks = {m: self.sinks[hosts[m].name] for m in peers if hosts[m].name in self.sinks}
        probe = {m: specs[m].port if m in specs else int(sinks[m].rpartition(":")[2]) for m in peers
                 if m in specs or m in sinks}
        return {"peers": peers, "keep": keep, "probe_ports": probe, "sinks": sinks}

    def _node_dir(self, node: str) -> str:
        return f"{self.place[node].workdir}/runs/{self.run_id}/{node}"

    def _spec(self, name: str, props: dict[str, Any], addr: str, broker_id: int | None = None,
              store_size: int | None = None, role: str | None = None) -> NodeSpec:
        c = self.scenario.cluster
        master = self.topology.master_of(name)
        return NodeSpec(name=name, role=role or name, run_id=self.run_id, node_dir=self._node_dir(name), addr=addr,
                        props=props, version=c.version, heap=c.heap, store_size=store_size, broker_id=broker_id,
                        namesrv_addr=self.namesrv_addr, master_addr=self.broker_addrs.get(master or ""))

    def _measure_clock(self, host: str, when: str) -> None:
        offset, error = self.agents[host].clock_offset()
        self.offsets.setdefault(host, {}).update({f"offset_{when}_ns": offset, f"error_{when}_ns": error})
        self.rd.event("host_clock", host=host, when=when, offset_ns=offset, error_ns=error)
        if when == "end" and self.rd.layout.cluster.exists():  # written at ready; the end offsets join it here
            info = json.loads(self.rd.layout.cluster.read_text(encoding="utf-8"))
            info.setdefault("hosts", {}).setdefault(host, {}).update(self.offsets[host])
            self.rd.write_cluster(info)

    def _event(self, host: str) -> Callable[[dict[str, Any]], None]:
        """A fault event from the host's agent, put on this machine's clock (the offset measured at the start)."""
        def on_event(record: dict[str, Any]) -> None:
            offset = self.offsets.get(host, {}).get("offset_start_ns", 0)
            record = {**record, "wall_ns": record["wall_ns"] - offset, "host": host}
            self.rd.append(record)
        return on_event

    def ready_note(self) -> str:
        return " (on " + ", ".join(f"{n} {self.place[n].name}" for n in self.node_order) + ")"

    def cluster_info(self) -> dict[str, Any]:
        info = super().cluster_info()
        info.update({"program": self.program.kind, "hosts": {
            name: {"address": ssh.host.address, "port": ssh.host.port, "user": ssh.host.user,
                   "workdir": ssh.host.workdir, **self.offsets.get(name, {})} for name, ssh in self.ssh.items()}})
        for node in info["nodes"]:
            node["host"] = self.place[node["name"]].name
        return info

    # --- during the run ---------------------------------------------------------------------------------------

    def load_hosts(self) -> Any:
        """The Locust workers on the load hosts (`load.hosts`), or None: the load then runs on this machine."""
        if not self.scenario.load.hosts:
            return None
        from harness.hosts.load_hosts import LoadHosts

        self._load_hosts = LoadHosts(self)
        return self._load_hosts

    def fetch_load_rows(self) -> None:
        if getattr(self, "_load_hosts", None) is not None:
            self._load_hosts.fetch(self.rd.root)

    def metrics_nodes(self) -> list[MetricsNode]:
        return [MetricsNode(n, self.targets[n].pids, self.broker_addrs.get(n),
                            sampler=RemoteSampler(self.agents[self.place[n].name], n)) for n in self.node_order]

    def copy_logs(self) -> None:
        """Each node's log files, fetched from its host with tar over SSH into logs/<node>/."""
        for n in self.node_order:
            if n not in self.nodes:  # never made on its host (or the run stopped while it was asked for)
                continue
            ssh = self.ssh[self.place[n].name]
            dest = self.rd.layout.logs / n
            dest.mkdir(parents=True, exist_ok=True)
            node_dir = self.specs[n].node_dir
            proc = ssh.run(["sh", "-c", f"cd {node_dir} && tar -cf - --ignore-failed-read logs stdout.log "
                                        f"{n}.conf 2>/dev/null; true"], input=b"", timeout=300, check=False)
            with tarfile.open(fileobj=io.BytesIO(proc.stdout), mode="r|") as tar:
                tar.extractall(dest, filter="data")

    # --- down -------------------------------------------------------------------------------------------------

    def teardown_steps(self) -> Iterable[tuple[str, Callable[[], Any]]]:
        for n in reversed(self.node_order):
            if n in self.specs:
                agent = self.agents[self.place[n].name]
                yield f"{n} on {self.place[n].name}", lambda a=agent, n=n: _destroyed(a, n)
        for host in sorted(self.agents):
            yield f"clock of {host}", lambda h=host: self._measure_clock(h, "end")
        for host in sorted(self.agents) if any(f.kind in SINK_FAULTS for _, f in self.scenario.faults) else ():
            # every agent's, not only those whose answer came back: a signal may have cut the wait for one
            yield f"sink on {host}", lambda h=host: self.agents[h].call("sink_stop")
        for host, agent in sorted(self.agents.items()):
            yield f"agent on {host}", agent.close
        for host, ssh in sorted(self.ssh.items()):
            yield f"ssh to {host}", ssh.close
        yield "ssh control dir", lambda: shutil.rmtree(next(iter(self.ssh.values())).control_dir, ignore_errors=True)


def _destroyed(agent: AgentClient, node: str) -> None:
    errors = agent.call("node_destroy", node=node, timeout_s=300)["errors"]
    if errors:
        raise RuntimeError("; ".join(errors))


class RemoteSampler:
    """A node's process figures, sampled on its host by its agent (one call per second)."""

    def __init__(self, agent: AgentClient, node: str) -> None:
        self.agent, self.node = agent, node

    def sample(self) -> dict[str, Any]:
        try:
            return self.agent.call("sample", nodes=[self.node], timeout_s=5)["samples"].get(self.node, {})
        except Exception:  # noqa: BLE001 - a second without figures is a null row, not a failed run
            return {}


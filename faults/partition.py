"""`partition`: the target node's host stops exchanging packets with named peers (their hosts' addresses, from the
target's `extras["peers"]`), in one or both directions, optionally only on some ports. Mechanism: an iptables chain
of our own (`RMQ-<tag>`), jumped to first from INPUT and OUTPUT by rules whose comment names the fault; the kept
addresses (`extras["keep"]`: the control node, the host's own) that are not this host's own RETURN at its top, so
the management path is never cut by us (RETURN, not ACCEPT: the host's own rules after our jump still apply to
them); the host's own addresses are kept by never being a peer (a RETURN on them would match every packet).

Verify: a TCP connect from this host to each cut peer's probe port gets no answer (timeout) or our own EPERM while our
chain's DROP rules for that peer count packets (so the cut is ours, not a peer too busy to answer), and one to each
kept address with a probe port still reaches it; the evidence has what the DROP rules dropped since apply (the nodes'
own traffic with the probes'). Revert: the jumps deleted, the chain flushed and deleted (undo op
`iptables_chain_remove`, replayable by `cleanup` from any network namespace). Claims: `partition:net:[<netns>]:<peer
address>`, so two partitions on one host compose when they cut different peers."""
from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from faults.base import Fault
from faults.errors import FaultNotEffective, FaultRefused, FaultUnavailable
from faults.net_counters import chain_counters
from faults.net_probe import CUT, REACHED, connect_all
from faults.net_target import NetTarget, PeersParams, is_local
from faults.system import iptables, netns
from faults.system.tools import have_tool

PROBE_TIMEOUT_S = 0.5
ANY = "0.0.0.0/0"
"""How `iptables -L -n` prints the side of a rule that matches any address."""
MAX_PORTS = 15
"""The multiport match takes at most 15 ports."""


class PartitionParams(PeersParams):
    direction: Literal["both", "in", "out"] = Field("both", description="both | in (from the peers) | out (to them)")
    ports: list[int] | None = Field(None, min_length=1, max_length=MAX_PORTS,
                                    description="cut only TCP/UDP packets from or to these ports (either end)")

    @field_validator("ports")
    @classmethod
    def _ports(cls, ports: list[int] | None) -> list[int] | None:
        for p in ports or []:
            if not 1 <= p <= 65535:
                raise ValueError(f"port {p} is not in 1..65535")
        return ports


class Partition(Fault):
    kind = "partition"
    summary = "cut the node's host off from named peers' hosts (iptables chain of our own); revert: chain removed"
    Params = PartitionParams
    target_roles = ("namesrv", "master", "slave")
    NEEDS_ROOT = True
    VERIFY_TIMEOUT_S = 3.0

    @classmethod
    def problems(cls) -> list[str]:
        return super().problems() + ([] if have_tool(iptables.IPTABLES) else ["no iptables (Debian: iptables)"])

    def check(self) -> None:
        super().check()
        if not have_tool(iptables.IPTABLES):
            raise FaultUnavailable(f"{self.kind}: no iptables binary (Debian package iptables; run ./setup.sh)")
        net = NetTarget.of(self.kind, self.target)
        cut = net.chosen(self.params.peers)
        probes = {}
        ports = self.params.ports
        for name, addr in cut.items():
            port = net.probe_ports.get(name)
            if ports and port not in ports:  # only a cut port can show the cut
                port = ports[0]
            if port is None:
                raise FaultRefused(f"{self.kind}: no probe port for peer {name} (extras.probe_ports) and no "
                                   f"params.ports: the cut could not be measured")
            probes[name] = [addr, port]
        self.state.update(chain=iptables.chain_name(self.tag), netns=netns.current(), peers=cut,
                          keep=[a for a in net.keep if not is_local(a)],
                          probes=probes, keep_probes=[[a, net.probe_ports[a]] for a in net.keep
                                                      if a in net.probe_ports])

    def claims(self) -> list[str]:
        return [f"partition:{netns.label(self.state['netns'])}:{a}" for a in sorted(set(self.state["peers"].values()))]

    def jumps(self) -> list[dict]:
        rule = iptables.jump_rule(self.state["chain"], f"rmq-chaos {self.kind} {self.tag}")
        return [{"hook": hook, "rule": rule} for hook in iptables.HOOKS]

    def plan(self) -> list[dict]:
        return [{"op": "iptables_chain_remove", "chain": self.state["chain"], "jumps": self.jumps(),
                 "netns": self.state["netns"]}]

    def rules(self) -> list[list[str]]:
        rules = [[flag, a, "-j", "RETURN"] for a in self.state["keep"] for flag in ("-s", "-d")]
        flags = {"both": ("-s", "-d"), "in": ("-s",), "out": ("-d",)}[self.params.direction]
        ports = ",".join(str(p) for p in self.params.ports or [])
        matches = [["-p", proto, "-m", "multiport", "--ports", ports] for proto in ("tcp", "udp")] if ports else [[]]
        for addr in sorted(set(self.state["peers"].values())):
            rules += [[*m, flag, addr, "-j", "DROP"] for flag in flags for m in matches]
        return rules

    def inject(self) -> dict:
        iptables.create_chain(self.state["chain"], self.rules(), self.jumps())
        return {"chain": self.state["chain"], "rules": iptables.chain_rules(self.state["chain"]),
                "peers": self.state["peers"], "keep": self.state["keep"]}

    def _drops(self) -> dict[str, dict]:
        """Per cut peer address: packets and bytes our chain's DROP rules for it have counted since apply."""
        out = {a: {"packets": 0, "bytes": 0} for a in set(self.state["peers"].values())}
        for rule in chain_counters(iptables.IPTABLES, self.state["chain"]):
            addr = rule["destination"] if rule["source"] == ANY else rule["source"]
            if rule["target"] == "DROP" and addr in out:
                out[addr]["packets"] += rule["packets"]
                out[addr]["bytes"] += rule["bytes"]
        return out

    def measure(self) -> tuple[bool, dict]:
        """The probes cut, and our own DROP rules counted them (a connect that times out for any other reason, a
        peer too busy to answer, does not count); what the rules dropped since apply (the nodes' own traffic too)
        is in the evidence."""
        names = list(self.state["probes"])
        before = self._drops()
        cut = connect_all([tuple(self.state["probes"][n]) for n in names], PROBE_TIMEOUT_S)
        kept = connect_all([tuple(p) for p in self.state["keep_probes"]], PROBE_TIMEOUT_S)
        after = self._drops()
        peers, ok = {}, all(r in REACHED for r in kept)
        for n, result in zip(names, cut, strict=True):
            addr = self.state["peers"][n]
            counted = after[addr]["packets"] - before[addr]["packets"]
            peers[n] = {"probe": ":".join(map(str, self.state["probes"][n])), "connect": result,
                        "dropped_during_probe": counted, "dropped_since_apply": after[addr]}
            ok = ok and result in CUT and counted > 0
        evidence = {"peers": peers,
                    "kept": {f"{a}:{p}": r for (a, p), r in zip(self.state["keep_probes"], kept, strict=True)}}
        return ok, evidence

    def shortfall(self, evidence: dict) -> tuple[str, str]:
        parts = [f"connect to {n} ({p['probe']}) {p['connect']}, our DROP rules counted {p['dropped_during_probe']} "
                 f"packet(s) meanwhile" for n, p in evidence.get("peers", {}).items()]
        parts += [f"connect to kept {a} {r}" for a, r in evidence.get("kept", {}).items()]
        return "; ".join(parts), (f"every cut peer's connect unanswered within {PROBE_TIMEOUT_S:g} s (or EPERM) with "
                                  f"our DROP rules counting it, every kept address reached")

    def measure_gone(self) -> dict:
        chain = self.state["chain"]
        left = {"chain": iptables.chain_rules(chain), "jumps": iptables.jumps_to(chain)}
        names = list(self.state["probes"])
        after = connect_all([tuple(self.state["probes"][n]) for n in names], PROBE_TIMEOUT_S)
        evidence = {"chain_after": left["chain"], "jumps_after": left["jumps"],
                    "connect_after": dict(zip(names, after, strict=True))}
        if left["chain"] is not None or left["jumps"]:
            raise FaultNotEffective(f"{self.kind}: chain {chain} or a jump to it is still there: {evidence}",
                                    evidence)
        return evidence

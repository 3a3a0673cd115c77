"""The shared half of `net_bandwidth` and `net_delay`: traffic from the target node's host to named peers is shaped
by tc on the interface that routes to them, under a root htb qdisc of our own (`faults.system.tc`): one class per
peer, a u32 filter on its address, the subclass's rate and leaf qdisc; everything else leaves unshaped. Refused in
one line, before any change, when the peers are routed through different interfaces or the interface already has a
root qdisc that someone configured (any handle but the kernel's default `0:`). Revert: our root qdisc deleted (undo
op `tc_qdisc_remove`); the kernel's default comes back. Claim: `qdisc:net:[<netns>]:<dev>` (one shaping fault per
interface)."""
from __future__ import annotations

from typing import ClassVar

from faults.base import Fault
from faults.errors import FaultConflict, FaultNotEffective, FaultRefused, FaultUnavailable
from faults.net_counters import class_stats
from faults.net_target import NetTarget
from faults.system import netns, tc
from faults.system.tools import have_tool

TOOLS = {"tc": "iproute2", "ip": "iproute2", "unshare": "util-linux"}
FIRST_CLASS = 0x10
"""`tc.add_peer_shaping` numbers the peers' classes from `<major>:10`, in the order the peers are given."""


def class_of(handle: str, index: int) -> str:
    """The classid of the `index`-th peer under root `handle` (as `tc -s class show` prints it)."""
    return f"{handle.rstrip(':')}:{FIRST_CLASS + index:x}"


class NetShaping(Fault):
    """Subclasses give `rate_bits()` and `leaf()`, and `measure()`."""

    target_roles = ("namesrv", "master", "slave")
    NEEDS_ROOT = True
    ROOT_KIND: ClassVar[str] = "htb"

    @classmethod
    def problems(cls) -> list[str]:
        missing = [f"no {t} (Debian: {pkg})" for t, pkg in TOOLS.items() if not have_tool(t)]
        return super().problems() + missing

    def rate_bits(self) -> int:
        raise NotImplementedError

    def leaf(self) -> list[str] | None:
        return None

    def check(self) -> None:
        super().check()
        for t, pkg in TOOLS.items():
            if not have_tool(t):
                raise FaultUnavailable(f"{self.kind}: no {t} binary (Debian package {pkg}; run ./setup.sh)")
        net = NetTarget.of(self.kind, self.target)
        peers = net.chosen(self.params.peers)
        devs = {n: tc.route_dev(a) for n, a in peers.items()}
        if len(set(devs.values())) != 1 or "lo" in devs.values():
            raise FaultRefused(f"{self.kind}: the peers are not all reached through one interface ({devs})")
        dev, ns = next(iter(devs.values())), netns.current()
        claim = f"qdisc:{netns.label(ns)}:{dev}"
        held = [e.id for e in self.journal.open_entries() if claim in e.claims]
        if held:
            raise FaultConflict(f"{self.kind}: {claim} is already held by open journal entry {held[0]}")
        root = tc.root_qdisc(dev)
        if root["handle"] != tc.DEFAULT_HANDLE:
            raise FaultRefused(f"{self.kind}: interface {dev} already has a root qdisc {root['kind']} "
                               f"{root['handle']} that rmq-chaos did not make; refusing to replace it")
        handle = tc.handle_for(self.tag)
        self.state.update(dev=dev, netns=ns, handle=handle, peers=peers, claim=claim,
                          classes={n: class_of(handle, i) for i, n in enumerate(peers)},
                          probes={n: list(p) for n in peers if (p := net.probe_for(n))},
                          sinks={n: list(net.sinks[n]) for n in peers if n in net.sinks})

    @property
    def classes(self) -> dict[str, str]:
        """Peer name -> the classid of its class (journal entries older than this key computed again)."""
        return self.state.get("classes") or {n: class_of(self.state["handle"], i)
                                             for i, n in enumerate(self.state["peers"])}

    def claims(self) -> list[str]:
        return [self.state["claim"]]

    def plan(self) -> list[dict]:
        return [{"op": "tc_qdisc_remove", "dev": self.state["dev"], "handle": self.state["handle"],
                 "kind": self.ROOT_KIND, "netns": self.state["netns"]}]

    def inject(self) -> dict:
        tc.add_peer_shaping(self.state["dev"], self.state["handle"], list(self.state["peers"].values()),
                            self.rate_bits(), self.leaf())
        made = class_stats(self.state["dev"])
        missing = [c for c in self.classes.values() if c not in made]
        if missing:
            raise FaultNotEffective(f"{self.kind}: htb class(es) {', '.join(missing)} not found on "
                                    f"{self.state['dev']} after adding them (found: {', '.join(made) or 'none'})")
        return {"dev": self.state["dev"], "handle": self.state["handle"], "peers": self.state["peers"],
                "classes": self.classes,
                "qdiscs": [f"{q['kind']} {q['handle']}" for q in tc.qdiscs(self.state["dev"])]}

    def measure_gone(self) -> dict:
        root = tc.root_qdisc(self.state["dev"]) or {}
        evidence = {"root_qdisc_after": f"{root.get('kind')} {root.get('handle')}"}
        if root.get("handle") == self.state["handle"]:
            raise FaultNotEffective(f"{self.kind}: our root qdisc is still on {self.state['dev']}: {evidence}",
                                    evidence)
        return evidence

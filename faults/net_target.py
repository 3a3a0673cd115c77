"""What a network fault reads from its target: the contract a backend (the SSH backend's host agent, or a test) fills
in `NodeTarget.extras`, and the `peers` parameter the three network faults share.

    extras["peers"]        {node name: host address}   every other node of the cluster, with its host's IPv4 address
    extras["keep"]         [address, ...]              never cut or shaped: the control node (management path), the
                                                       host's own addresses
    extras["probe_ports"]  {node name or address: port} a TCP port to probe a peer (or a kept address) with
    extras["sinks"]        {node name: "addr:port"}    a `python -m faults.net_probe sink` on that peer's host

A peer the target does not list, or whose address is kept, is refused in one line naming the allowed ones."""
from __future__ import annotations

import errno
import ipaddress
import socket
from dataclasses import dataclass
from typing import Literal

from pydantic import Field, field_validator

from faults.base import FaultParams
from faults.errors import FaultRefused
from faults.target import NodeTarget


class PeersParams(FaultParams):
    peers: list[str] | str = Field(description='node names (extras.peers; a list, or "n2,n3"), or "all" of them')

    @field_validator("peers")
    @classmethod
    def _peers(cls, peers: list[str] | str) -> list[str] | Literal["all"]:
        if isinstance(peers, list) or peers == "all":
            return peers
        names = [n.strip() for n in peers.split(",") if n.strip()]
        if not names:
            raise ValueError('give node names (a list, or "n2,n3") or "all"')
        return names


def _ipv4(kind: str, what: str, addr: object) -> str:
    try:
        return str(ipaddress.IPv4Address(str(addr)))
    except ValueError:
        raise FaultRefused(f"{kind}: {what}: {addr!r} is not an IPv4 address (only IPv4 is cut or shaped)") from None


def is_local(addr: str) -> bool:
    """Whether `addr` is an address of this host (network namespace): binding to it works."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.bind((addr, 0))
        except OSError as e:
            if e.errno == errno.EADDRNOTAVAIL:
                return False
            raise
    return True


@dataclass
class NetTarget:
    """The target's peers, kept addresses, probe ports and sinks, checked."""

    kind: str
    peers: dict[str, str]
    keep: list[str]
    probe_ports: dict[str, int]
    sinks: dict[str, tuple[str, int]]

    @classmethod
    def of(cls, kind: str, target: NodeTarget) -> NetTarget:
        x = target.extras
        peers = {str(n): _ipv4(kind, f"extras.peers.{n}", a) for n, a in dict(x.get("peers") or {}).items()}
        if not peers:
            raise FaultRefused(f"{kind}: node {target.name} has no extras.peers ({{node name: host address}}): "
                               f"the backend names the other nodes and their hosts' addresses")
        keep = [_ipv4(kind, "extras.keep", a) for a in x.get("keep") or []]
        ports = {str(k): int(v) for k, v in dict(x.get("probe_ports") or {}).items()}
        sinks = {}
        for name, spec in dict(x.get("sinks") or {}).items():
            host, _, port = str(spec).rpartition(":")
            sinks[str(name)] = (_ipv4(kind, f"extras.sinks.{name}", host), int(port))
        return cls(kind, peers, keep, ports, sinks)

    def chosen(self, wanted: Literal["all"] | list[str]) -> dict[str, str]:
        """The peers a fault acts on: known, not kept, at least one ("all" leaves out peers at a kept address: nodes
        on this very host or on the control node)."""
        allowed = sorted(self.peers)
        if wanted == "all":
            wanted = [n for n in allowed if self.peers[n] not in self.keep]
        names = list(dict.fromkeys(wanted))
        if not names:
            raise FaultRefused(f"{self.kind}: no peer to act on (allowed: {', '.join(allowed)}, all; peers at kept "
                               f"addresses {', '.join(self.keep) or 'none'} are left out)")
        for name in names:
            if name not in self.peers:
                raise FaultRefused(f"{self.kind}: unknown peer {name!r} (allowed: {', '.join(allowed)}, all)")
            if self.peers[name] in self.keep:
                raise FaultRefused(f"{self.kind}: peer {name} is at {self.peers[name]}, a kept address (the control "
                                   f"node's or this host's own): never cut or shaped")
        return {n: self.peers[n] for n in names}

    def probe_for(self, name: str) -> tuple[str, int] | None:
        """Where to probe peer `name` with a TCP connect: its probe port, else its sink."""
        if name in self.probe_ports:
            return self.peers[name], self.probe_ports[name]
        return self.sinks.get(name)

"""`net_bandwidth`: traffic from the target node's host to each named peer is limited to `rate_bps` (bytes/s, per
peer) by a tc htb class of our own (`faults.net_shaping`); only the outgoing direction (ingress shaping would need an
ifb device).

Verify, under the traffic it shapes: a probe transfer to each peer's sink (`extras["sinks"]`, `python -m
faults.net_probe sink`), paced at twice the limit, keeps the peer's class backlogged while the class's own counters
are sampled (`faults.net_counters`: `tc -s class show`). The class carries the probe *and* whatever the nodes send
that peer meanwhile (the HA stream of a master throttled towards its slave), so a lone probe's rate is only its
share; the class's rate is what the limit is measured against. Effective when, for every peer, the class's send rate
over the window is within ±`TOLERANCE` of the limit (htb counts the frames, headers included: expect about 1.0x) and
the class is shaping: its overlimits (times it ran out of tokens) or drops grew, or packets waited in its queue.
The evidence has both rates, the probe's share, the counters' growth and the window. Revert: our root qdisc deleted;
the evidence has an unpaced probe's rate after it."""
from __future__ import annotations

from typing import Literal

from pydantic import Field

from faults.errors import FaultRefused
from faults.net_counters import ClassSampler
from faults.net_probe import transfer_rate
from faults.net_shaping import NetShaping
from faults.net_target import PeersParams

TOLERANCE = 0.20
PROBE_S = 0.8
MAX_PROBE_S = 6.0
"""The window runs on past PROBE_S, up to this, until the class's window has counted five times its largest jump
(`net_counters.BURSTS`): the nodes' 64 KiB GSO packets pass a slow class a few times a second (at 64 KiB/s, once)."""
CONNECT_S = 2.0
"""The probe's connect may wait this long: its SYN queues behind what the class already holds (a bulk stream keeps
up to `tcp_limit_output_bytes`, 4 MiB here, queued: 16 s at 256 KiB/s). A class that holds it up longer is shaping
by itself; the window goes on without the probe."""
PACE_BELOW_BPS = 4 << 20
"""Below this limit the probe paces itself at twice the limit (`net_probe.transfer_rate`'s `pace_bps`): measured on
veth, unpaced probes at 64-256 KiB/s read 1.29-1.36x (three to eight 64 KiB GSO bursts in the window), paced ones
0.95-1.0x; from 1 MiB/s on both read 0.93-0.97x."""


class NetBandwidthParams(PeersParams):
    rate_bps: int = Field(ge=64 << 10, le=10**10, description="bytes/s, each peer's own limit (on the wire)")
    direction: Literal["out"] = Field("out", description="out: from this host to the peers (the only one)")


class NetBandwidth(NetShaping):
    kind = "net_bandwidth"
    summary = "limit the rate from the node's host to named peers' hosts (tc htb of our own); revert: qdisc removed"
    Params = NetBandwidthParams
    VERIFY_TIMEOUT_S = 10.0

    def rate_bits(self) -> int:
        return self.params.rate_bps * 8

    def check(self) -> None:
        super().check()
        if not self.state["sinks"]:
            raise FaultRefused(f"{self.kind}: none of the peers {', '.join(self.state['peers'])} has a probe sink "
                               f"(extras.sinks: {{peer: \"addr:port\"}}): the rate could not be measured")

    def _probe(self, name: str) -> dict:
        """One peer: the class's counters sampled while the paced probe runs to the peer's sink. A connect or a
        transfer that the class's queue holds up (a bulk stream ahead of it: seconds at a low limit) does not end
        the window: the class is measured all the same."""
        limit = self.params.rate_bps
        host, port = self.state["sinks"][name]
        classid = self.classes[name]
        try:
            sampler = ClassSampler(self.state["dev"], classid)
        except LookupError:  # our qdisc is gone (removed behind our back): nothing shapes this peer
            return {"class": classid, "missing": True}
        sampler.start()
        try:
            probe = transfer_rate(host, port, PROBE_S, timeout_s=CONNECT_S,
                                  pace_bps=2 * limit if limit < PACE_BELOW_BPS else None,
                                  longer=lambda: not sampler.settled(), max_seconds=MAX_PROBE_S)
        except OSError as err:  # e.g. its connect waited behind the class's queue for CONNECT_S
            probe = {"rate_bps": None, "bytes": 0, "error": f"{type(err).__name__}: {err}"}
        try:
            sampler.wait(PROBE_S, MAX_PROBE_S)
        finally:
            sampler.finish()
        cls = sampler.rates()
        shaping = cls["overlimits"] > 0 or cls["dropped"] > 0 or cls["backlog_max"] > 0
        own = probe["rate_bps"]
        out = {"class": classid, "class_rate_bps": cls["rate_bps"], "class_ratio": round(cls["rate_bps"] / limit, 3),
               "shaping": shaping, "probe_rate_bps": own, "probe_ratio": None if own is None else round(own / limit, 3),
               "probe_share": round(own / cls["rate_bps"], 3) if own is not None and cls["rate_bps"] > 0 else None,
               "probe_bytes": probe["bytes"],
               "counters": {k: cls[k] for k in ("bytes", "packets", "overlimits", "dropped", "backlog_max")},
               "window_s": cls["window_s"], "samples": cls["samples"], "settled": cls["settled"]}
        return {**out, "probe_error": probe["error"]} if "error" in probe else out

    def measure(self) -> tuple[bool, dict]:
        peers = {name: self._probe(name) for name in self.state["sinks"]}
        ok = all(not p.get("missing") and abs(p["class_ratio"] - 1) <= TOLERANCE and p["shaping"]
                 for p in peers.values())
        return ok, {"limit_bps": self.params.rate_bps, "tolerance": TOLERANCE, "peers": peers}

    def shortfall(self, evidence: dict) -> tuple[str, str]:
        parts = []
        for name, p in evidence.get("peers", {}).items():
            if p.get("missing"):
                parts.append(f"no class {p['class']} for {name} on {self.state['dev']} (our qdisc is gone)")
                continue
            c = p["counters"]
            parts.append(f"class {p['class']} to {name} sent {p['class_rate_bps']} B/s ({p['class_ratio']}x; "
                         f"probe {p['probe_rate_bps']} B/s; overlimits +{c['overlimits']}, dropped +{c['dropped']}, "
                         f"backlog max {c['backlog_max']} B; {p['window_s']:.1f} s)")
        limit = self.params.rate_bps
        return "; ".join(parts) or "no peer measured", (f"{limit} B/s ±{TOLERANCE:.0%} with the class shaping "
                                                         f"(overlimits, drops or a backlog)")

    def measure_gone(self) -> dict:
        evidence = super().measure_gone()
        after = {}
        for name, (host, port) in self.state["sinks"].items():
            probe = transfer_rate(host, port, PROBE_S)
            rate = probe["rate_bps"]
            after[name] = {**probe, "ratio": None if rate is None else round(rate / self.params.rate_bps, 3)}
        evidence["probes_after"] = after
        return evidence

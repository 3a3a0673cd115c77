"""`net_bandwidth`: traffic from the target node's host to each named peer is limited to `rate_bps` (bytes/s, per
peer) by a tc htb class of our own (`faults.net_shaping`); only the outgoing direction (ingress shaping would need an
ifb device). Verify: a probe transfer to each peer's sink (`extras["sinks"]`, `python -m faults.net_probe sink`)
measures, where the bytes arrive, a payload rate within ±20 % of the limit (TCP/IP headers count against the limit:
expect about 0.95x). Revert: our root qdisc deleted; the evidence has a probe rate after it."""
from __future__ import annotations

from typing import Literal

from pydantic import Field

from faults.errors import FaultRefused
from faults.net_probe import transfer_rate
from faults.net_shaping import NetShaping
from faults.net_target import PeersParams

TOLERANCE = 0.20
PROBE_S = 0.8
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
    VERIFY_TIMEOUT_S = 5.0

    def rate_bits(self) -> int:
        return self.params.rate_bps * 8

    def check(self) -> None:
        super().check()
        if not self.state["sinks"]:
            raise FaultRefused(f"{self.kind}: none of the peers {', '.join(self.state['peers'])} has a probe sink "
                               f"(extras.sinks: {{peer: \"addr:port\"}}): the rate could not be measured")

    def _rates(self, paced: bool) -> dict:
        pace = 2 * self.params.rate_bps if paced and self.params.rate_bps < PACE_BELOW_BPS else None
        out = {}
        for name, (host, port) in self.state["sinks"].items():
            probe = transfer_rate(host, port, PROBE_S, pace_bps=pace)
            out[name] = {**probe, "ratio": round(probe["rate_bps"] / self.params.rate_bps, 3)}
        return out

    def measure(self) -> tuple[bool, dict]:
        rates = self._rates(paced=True)
        return all(abs(r["ratio"] - 1) <= TOLERANCE for r in rates.values()), {"limit_bps": self.params.rate_bps,
                                                                                "probes": rates}

    def measure_gone(self) -> dict:
        evidence = super().measure_gone()
        evidence["probes_after"] = self._rates(paced=False)
        return evidence

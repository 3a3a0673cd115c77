"""`net_delay`: packets from the target node's host to named peers wait `delay_ms` (± `jitter_ms`) in a netem qdisc
under a tc htb class of our own per peer (`faults.net_shaping`, same shape as `net_bandwidth`). Where the kernel has
no netem (`tc qdisc add ... netem` answers "Specified qdisc kind is unknown"), `problems()` says so and apply refuses
in one line (`FaultUnavailable`) before any change. Verify: TCP connects to each peer's probe port (or sink) take the
delay (the SYN waits; the answer does not): the fastest of three within 20 % + the jitter + `RTT_SLACK_MS`; the
evidence has each peer class's counters (sent, dropped, backlog). Untested on the machine it was written on (no netem
there)."""
from __future__ import annotations

import os

from pydantic import Field

from faults.errors import FaultRefused, FaultUnavailable
from faults.net_counters import class_stats
from faults.net_probe import connect_rtt_ms
from faults.net_shaping import NetShaping
from faults.net_target import PeersParams
from faults.system import tc

TOLERANCE = 0.20
RTT_SLACK_MS = 15.0
UNSHAPED_BITS = 10 * 10**9
"""The class's rate: high enough not to shape, only to hold the netem leaf."""


def netem_available() -> bool:
    return tc.kernel_has("netem", ("delay", "1ms"))


class NetDelayParams(PeersParams):
    delay_ms: float = Field(gt=0, le=60000, description="added one-way delay towards the peers")
    jitter_ms: float = Field(0, ge=0, le=60000, description="± this much (netem's jitter)")


class NetDelay(NetShaping):
    kind = "net_delay"
    summary = "delay packets from the node's host to named peers' hosts (tc netem); refused without netem"
    Params = NetDelayParams
    VERIFY_TIMEOUT_S = 5.0

    @classmethod
    def problems(cls) -> list[str]:
        found = super().problems()
        return found if found else ([] if netem_available() else ["no netem qdisc in this kernel"])

    def rate_bits(self) -> int:
        return UNSHAPED_BITS

    def leaf(self) -> list[str]:
        p = self.params
        return ["netem", "delay", f"{p.delay_ms}ms", *([f"{p.jitter_ms}ms"] if p.jitter_ms else [])]

    def check(self) -> None:
        if os.geteuid() == 0 and not netem_available():  # without root, the base check says "needs root"
            raise FaultUnavailable(f"{self.kind}: this kernel has no netem qdisc (tc: Specified qdisc kind is "
                                   f"unknown); nothing was changed")
        super().check()
        if not self.state["probes"]:
            raise FaultRefused(f"{self.kind}: none of the peers {', '.join(self.state['peers'])} has a probe port "
                               f"or sink (extras.probe_ports, extras.sinks): the delay could not be measured")

    def measure(self) -> tuple[bool, dict]:
        """The fastest of three connects to each peer within [delay - jitter, delay + jitter] (±20 %, + 15 ms on
        top): every connect waits at least the delay, and the fastest is not much slower. Not the slowest: on a busy
        link or a loaded host a connect also waits for the CPU or behind the nodes' packets in netem's queue (a
        dropped SYN is retried a second later), which says nothing about the delay added."""
        p, ok, out = self.params, True, {}
        low = (p.delay_ms - p.jitter_ms) * (1 - TOLERANCE)
        high = (p.delay_ms + p.jitter_ms) * (1 + TOLERANCE) + RTT_SLACK_MS
        for name, (host, port) in self.state["probes"].items():
            rtts = connect_rtt_ms(host, port, timeout_s=(p.delay_ms + p.jitter_ms) / 1000 * 3 + 5)
            out[name] = [round(r, 2) for r in rtts]
            ok = ok and low <= min(rtts) <= high
        stats = class_stats(self.state["dev"])
        classes = {n: {k: stats.get(c, {}).get(k) for k in ("bytes", "packets", "dropped", "backlog")}
                   for n, c in self.classes.items()}
        return ok, {"connect_ms": out, "expected_ms": [round(low, 2), round(high, 2)], "classes": classes}

    def shortfall(self, evidence: dict) -> tuple[str, str]:
        measured = "; ".join(f"connects to {n} took {', '.join(f'{r:g}' for r in rtts)} ms"
                             for n, rtts in evidence.get("connect_ms", {}).items())
        low, high = evidence.get("expected_ms", [None, None])
        return measured or "no connect measured", f"the fastest within {low}-{high} ms"

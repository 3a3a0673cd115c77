"""Charts of the consumer side (matplotlib, data URIs like `analysis.figures`): lag per group over time and the
end-to-end latency (born -> delivered) per second per group, with the phase marks and fault windows of the other
charts."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from analysis.consume_measures import RunConsume
from analysis.figures import _col, _finish, _panel, to_data_uri
from analysis.frames import NS_PER_S

GROUP_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")


def consume_figures(rc: RunConsume, t0_ns: int | None, phases: Sequence[dict[str, Any]],
                    faults: Sequence[dict[str, Any]]) -> dict[str, str]:
    """`lag` (one line per group) and `e2e` (p50 solid, p99 dashed per group) when there is data for them."""
    out: dict[str, str] = {}
    colors = {g: GROUP_COLORS[i % len(GROUP_COLORS)] for i, g in enumerate(rc.groups())}
    if rc.lag:
        fig, ax = _panel("Consumer lag per group (sum over queues)", "messages")
        xs_all: list[float] = []
        for g, s in sorted(rc.lag.items()):
            xs = [(p["ts_ns"] - t0_ns) / NS_PER_S if t0_ns is not None else p["sec"] for p in s.points]
            xs_all += xs
            ax.plot(xs, [p["lag"] for p in s.points], color=colors.get(g), label=g, drawstyle="steps-post")
        _finish(ax, phases, faults, min(xs_all, default=0.0), max(xs_all, default=0.0) + 1)
        out["lag"] = to_data_uri(fig)
    ps = rc.per_second
    if ps.num_rows:
        fig, ax = _panel("End-to-end latency per second (born -> delivered)", "ms")
        groups, secs = _col(ps, "group"), _col(ps, "sec")
        p50, p99 = _col(ps, "born_p50"), _col(ps, "born_p99")
        for g in sorted(set(groups)):
            idx = [i for i, x in enumerate(groups) if x == g]
            xs = [secs[i] for i in idx]
            ax.plot(xs, [p50[i] for i in idx], color=colors.get(g), label=f"{g} p50")
            ax.plot(xs, [p99[i] for i in idx], color=colors.get(g), linestyle="--", label=f"{g} p99")
        ax.set_yscale("symlog", linthresh=1.0)
        _finish(ax, phases, faults, float(min(secs)), float(max(secs)) + 1)
        out["e2e"] = to_data_uri(fig)
    return out

"""The per-group chart of a run with several broker groups (matplotlib, a data URI like `analysis.figures`): each
group's share of the sends per second, on the time axis of the other charts, phases marked and fault windows shaded,
so how fast sends leave a sick group (`group_leave_s`) can be seen."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from analysis.figures import _col, _finish, _panel, to_data_uri

GROUP_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")


def group_share_figure(per_second: pa.Table, phases: Sequence[dict[str, Any]], faults: Sequence[dict[str, Any]],
                       x_min: float, x_max: float) -> str | None:
    """One step line per group: its sends / the second's sends (analysis.per_group.group_per_second); None when no
    second had a send."""
    secs, brokers, shares = _col(per_second, "sec"), _col(per_second, "broker"), _col(per_second, "share")
    if not secs:
        return None
    fig, ax = _panel("Share of the sends per broker group per second (the group a send ended on; by start second)",
                     "share of the second's sends")
    for i, g in enumerate(dict.fromkeys(brokers)):
        at = {s: v for s, b, v in zip(secs, brokers, shares, strict=True) if b == g}
        xs = list(range(min(at), max(at) + 2))  # a second without sends breaks the line (NaN)
        ax.plot(xs, [at.get(x, at[x - 1] if x == xs[-1] else float("nan")) for x in xs], drawstyle="steps-post",
                color=GROUP_COLORS[i % len(GROUP_COLORS)], linewidth=max(1.2, 2.6 - 0.5 * i), label=g)  # equal shares overlap
    ax.set_ylim(-0.03, 1.03)
    _finish(ax, phases, faults, x_min, x_max)
    return to_data_uri(fig)

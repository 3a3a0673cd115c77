"""The report's charts: matplotlib (Agg) figures returned as `data:image/png;base64,...` URIs for the HTML page.

Per run: rate, latency percentiles, stacked outcomes and node metrics per second, on one time axis (seconds from
the first phase start), phases marked and fault windows shaded. For several runs: outcome mix and p99 side by side.

The outcomes chart has a second panel when any send was not SEND_OK: every other outcome as its own line on a log
scale, a dot on each second it occurred. Stacked on the first panel's scale, a fault phase's few errors per second
vanish under the healthy seconds' thousands (the seed run: RemotingTooMuchRequestException and SLAVE_NOT_AVAILABLE
under 5,000 SEND_OK/s); on their own log scale one send in a second stands as far from the axis as ten do from one.
"""
from __future__ import annotations

import base64
import io
from collections.abc import Sequence
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pyarrow as pa  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from analysis import contract as c  # noqa: E402

WIDTH_IN = 12.0
PANEL_HEIGHT_IN = 3.0
DPI = 100
FAULT_SHADE = "#d62728"
OUTCOME_COLORS = {
    c.SEND_OK: "#2ca02c",
    c.FLUSH_DISK_TIMEOUT: "#bcbd22",
    c.FLUSH_SLAVE_TIMEOUT: "#ff7f0e",
    c.SLAVE_NOT_AVAILABLE: "#e6c229",
    c.MQ_BROKER_EXCEPTION: "#d62728",
    c.REMOTING_TOO_MUCH_REQUEST: "#9467bd",
    c.REMOTING_TIMEOUT: "#8c564b",
    c.REMOTING_CONNECT: "#e377c2",
    c.REMOTING_SEND_REQUEST: "#7f7f7f",
    c.MQ_CLIENT_EXCEPTION: "#1f77b4",
}
EXTRA_COLORS = ("#17becf", "#aec7e8", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94")
PERCENTILE_STYLE = (("p50", "#1f77b4"), ("p90", "#2ca02c"), ("p99", "#ff7f0e"), ("p999", "#d62728"),
                    ("max", "#7f7f7f"))
MIB = 1 << 20
MARGINS = {"left": 0.07, "right": 0.78, "top": 0.88, "bottom": 0.17}
RARE_FLOOR = 0.5
"""The rare outcomes' log axis starts here, so a second with one send sits clearly above it."""


def outcome_color(outcome: str, order: Sequence[str] = ()) -> str:
    if outcome in OUTCOME_COLORS:
        return OUTCOME_COLORS[outcome]
    extra = [o for o in order if o not in OUTCOME_COLORS]
    return EXTRA_COLORS[extra.index(outcome) % len(EXTRA_COLORS)] if outcome in extra else "#000000"


def to_data_uri(fig: Figure) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI)
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _panel(title: str, ylabel: str) -> tuple[Figure, Axes]:
    fig, ax = plt.subplots(figsize=(WIDTH_IN, PANEL_HEIGHT_IN))
    fig.subplots_adjust(**MARGINS)  # the same plot area in every panel: time axes line up on the page
    ax.set_title(title, loc="left", fontsize=11)
    ax.set_ylabel(ylabel)
    ax.set_xlabel("seconds from the first phase start")
    ax.grid(True, alpha=0.3)
    return fig, ax


def _marks(ax: Axes, phases: Sequence[dict[str, Any]], faults: Sequence[dict[str, Any]], x_max: float) -> None:
    """Phase boundaries (dashed, named), fault windows (shaded from apply to revert, or to the end) and their
    transitions (hatched: apply to verify, revert started to revert ok; analysis.transitions), one legend entry."""
    for ph in phases:
        if ph.get("start_s") is not None:
            ax.axvline(ph["start_s"], color="#444444", linestyle="--", linewidth=0.8)
            ax.text(ph["start_s"], 1.0, f" {ph['name']}", transform=ax.get_xaxis_transform(), fontsize=8,
                    va="top", ha="left", color="#444444")
    for f in faults:
        if f.get("apply_s") is None:
            continue
        end = f["reverted_s"] if f.get("reverted_s") is not None else x_max
        ax.axvspan(f["apply_s"], end, color=FAULT_SHADE, alpha=0.12, label=f"fault {f['fault_id']}")
        if f.get("verified_s") is not None:
            ax.axvline(f["verified_s"], color=FAULT_SHADE, linewidth=0.8)
    spans = [t for f in faults for t in f.get("transitions") or () if t.get("start_s") is not None]
    for i, t in enumerate(spans):
        end = t["end_s"] if t.get("end_s") is not None else x_max
        ax.axvspan(t["start_s"], max(end, t["start_s"]), facecolor="none", edgecolor=FAULT_SHADE, hatch="////",
                   linewidth=0.0, zorder=2.5, label="transition" if i == 0 else None)


def _col(table: pa.Table, name: str) -> list[Any]:
    return table.column(name).to_pylist() if name in table.column_names else []


def time_range(per_second: pa.Table, metrics: pa.Table) -> tuple[float, float]:
    """The x range every per-run chart shares: the seconds with sends or node metrics."""
    all_secs = _col(per_second, "sec") + [s for s in _col(metrics, "sec") if s is not None]
    return (float(min(all_secs)), float(max(all_secs)) + 1) if all_secs else (0.0, 1.0)


def run_figures(per_second: pa.Table, outcomes: pa.Table, metrics: pa.Table, phases: Sequence[dict[str, Any]],
                faults: Sequence[dict[str, Any]]) -> dict[str, str]:
    """The per-run charts as data URIs: rate, latency, outcomes, write_bw, swap (node metrics when present)."""
    secs = _col(per_second, "sec")
    x_min, x_max = time_range(per_second, metrics)
    out: dict[str, str] = {}

    fig, ax = _panel("Send rate per second", "sends/s")
    ax.plot(secs, _col(per_second, "intended"), color="#999999", linestyle="--", label="intended (schedule)")
    ax.plot(secs, _col(per_second, "sends"), color="#1f77b4", label="started")
    ax.plot(secs, _col(per_second, "send_ok"), color=OUTCOME_COLORS[c.SEND_OK], label="SEND_OK")
    _finish(ax, phases, faults, x_min, x_max)
    out["rate"] = to_data_uri(fig)

    fig, ax = _panel("Latency percentiles per second (from intended start; dotted: from actual start)", "ms")
    for name, color in PERCENTILE_STYLE:
        ax.plot(secs, _col(per_second, f"intended_{name}"), color=color, label=name.replace("p999", "p99.9"))
    ax.plot(secs, _col(per_second, "actual_p99"), color="#ff7f0e", linestyle=":", label="p99 (actual)")
    if any(v and v > 0 for v in _col(per_second, "intended_max")):
        ax.set_yscale("log")
    _finish(ax, phases, faults, x_min, x_max)
    out["latency"] = to_data_uri(fig)

    out["outcomes"] = to_data_uri(outcomes_figure(outcomes, secs, phases, faults, x_min, x_max))

    for key, column, title, unit, scale in (
        ("write_bw", "write_bytes_per_s", "Write bandwidth per node", "MB/s", 1e6),
        ("swap", "swap_bytes", "Swap used per node", "MiB", MIB),
        ("fallbehind", "slave_fallbehind_bytes", "Slave fall-behind (master view)", "MiB", MIB),
        ("cpu", "cpu_percent", "CPU per node", "%", 1.0),
    ):
        if metrics.num_rows == 0 or all(v is None for v in _col(metrics, column)):
            continue
        fig, ax = _panel(title, unit)
        for node in sorted(set(_col(metrics, "node"))):
            rows = [(s, v) for n, s, v in zip(_col(metrics, "node"), _col(metrics, "sec"), _col(metrics, column),
                                              strict=True) if n == node and v is not None]
            if rows:
                ax.plot([s for s, _ in rows], [v / scale for _, v in rows], label=node)
        _finish(ax, phases, faults, x_min, x_max)
        out[key] = to_data_uri(fig)
    return out


def outcomes_figure(outcomes: pa.Table, secs: Sequence[int], phases: Sequence[dict[str, Any]],
                    faults: Sequence[dict[str, Any]], x_min: float, x_max: float) -> Figure:
    """Outcomes per second stacked (sends/s) and, when a send was not SEND_OK, below it every other outcome on its
    own log scale (see the module docstring). The axes are `fig.axes`: [stacked] or [stacked, rare]."""
    words, series = _outcome_series(outcomes, secs)
    rare = [w for w in words if w != c.SEND_OK and any(series[w])]
    if not rare:
        fig, ax = _panel("Outcomes per second (stacked, by start second)", "sends/s")
        _stacked_outcomes(ax, words, series, secs)
        _finish(ax, phases, faults, x_min, x_max)
        return fig
    fig, (top, low) = plt.subplots(2, 1, sharex=True, figsize=(WIDTH_IN, 2 * PANEL_HEIGHT_IN))
    fig.subplots_adjust(**{**MARGINS, "bottom": MARGINS["bottom"] / 2, "top": 1 - (1 - MARGINS["top"]) / 2,
                           "hspace": 0.3})
    top.set_title("Outcomes per second (stacked, by start second)", loc="left", fontsize=11)
    top.set_ylabel("sends/s")
    top.grid(True, alpha=0.3)
    _stacked_outcomes(top, words, series, secs)
    _finish(top, phases, faults, x_min, x_max)
    low.set_title("Outcomes other than SEND_OK per second (each on its own, log scale; a dot per second with any)",
                  loc="left", fontsize=11)
    low.set_ylabel("sends/s (log)")
    low.set_xlabel("seconds from the first phase start")
    low.grid(True, alpha=0.3, which="both")
    mids = [s + 0.5 for s in secs]  # the middle of the second its bar spans on the stacked panel
    for w in rare:
        ys = [float(n) if n else float("nan") for n in series[w]]  # a second without it breaks the line
        low.plot(mids, ys, color=outcome_color(w, words), marker="o", markersize=3, linewidth=1.0,
                 label=w)
    low.set_yscale("log")
    low.set_ylim(RARE_FLOOR, max(max(series[w]) for w in rare) * 2.0)
    _finish(low, phases, faults, x_min, x_max)
    return fig


def _outcome_series(outcomes: pa.Table, secs: Sequence[int]) -> tuple[list[str], dict[str, list[int]]]:
    """The outcome words in the chart's order and each one's sends per second of `secs`."""
    words = sorted(set(_col(outcomes, "outcome")), key=lambda o: (o not in OUTCOME_COLORS, list(
        OUTCOME_COLORS).index(o) if o in OUTCOME_COLORS else 0, o))
    index = {s: i for i, s in enumerate(secs)}
    series = {w: [0] * len(secs) for w in words}
    for s, o, n in zip(_col(outcomes, "sec"), _col(outcomes, "outcome"), _col(outcomes, "sends"), strict=True):
        if s in index:
            series[o][index[s]] = n
    return words, series


def _stacked_outcomes(ax: Axes, words: Sequence[str], series: dict[str, list[int]], secs: Sequence[int]) -> None:
    if words and secs:
        xs = [*secs, secs[-1] + 1]  # a post step ends where its last second ends
        ax.stackplot(xs, *[[*series[w], series[w][-1]] for w in words], labels=words,
                     colors=[outcome_color(w, words) for w in words], step="post")


def _finish(ax: Axes, phases: Sequence[dict[str, Any]], faults: Sequence[dict[str, Any]], x_min: float,
            x_max: float) -> None:
    _marks(ax, phases, faults, x_max)
    ax.set_xlim(x_min, x_max)
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False)


def compare_figures(rows: Sequence[dict[str, Any]]) -> dict[str, str]:
    """Charts for several runs: outcome share per run (stacked bars) and p99 per run (both bases)."""
    names = [r["run_id"] for r in rows]
    out: dict[str, str] = {}
    height = max(2.5, 0.45 * len(rows) + 1.2)
    fig, ax = plt.subplots(figsize=(WIDTH_IN, height))
    fig.subplots_adjust(left=0.15, right=0.78, top=0.9, bottom=0.5 / height + 0.1)
    order = list(OUTCOME_COLORS)
    words = sorted({w for r in rows for w in r["outcomes"]},
                   key=lambda o: (order.index(o) if o in order else len(order), o))
    left = [0.0] * len(rows)
    for w in words:
        shares = [r["outcomes"].get(w, 0) / r["sends"] if r["sends"] else 0.0 for r in rows]
        ax.barh(names, shares, left=left, color=outcome_color(w, words), label=w)
        left = [a + b for a, b in zip(left, shares, strict=True)]
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of sends")
    ax.set_title("Outcome mix per run", loc="left", fontsize=11)
    ax.invert_yaxis()
    if words:
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False)
    out["outcome_mix"] = to_data_uri(fig)

    fig, ax = plt.subplots(figsize=(WIDTH_IN, height))
    fig.subplots_adjust(left=0.15, right=0.78, top=0.9, bottom=0.5 / height + 0.1)
    y = list(range(len(rows)))
    ax.barh([i - 0.2 for i in y], [r["p99_intended"] or 0 for r in rows], height=0.4, label="p99 from intended")
    ax.barh([i + 0.2 for i in y], [r["p99_actual"] or 0 for r in rows], height=0.4, label="p99 from actual")
    ax.set_yticks(y, names)
    ax.invert_yaxis()
    ax.set_xlabel("ms (whole run)")
    ax.set_title("p99 latency per run", loc="left", fontsize=11)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False)
    out["p99"] = to_data_uri(fig)
    return out

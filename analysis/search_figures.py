"""The chart of a sustainable-rate search (matplotlib, a data URI like `analysis.figures`): per step the target and
the achieved rate (upper panel) and the p99 from the intended start (lower panel) over the run's time axis, steps
that exceeded a bound shaded and marked with the bounds they broke, the found rate and the p99 bound as lines."""
from __future__ import annotations

from typing import Any

from analysis.figures import DPI, FAULT_SHADE, MARGINS, OUTCOME_COLORS, PANEL_HEIGHT_IN, WIDTH_IN, plt, to_data_uri
from analysis.frames import NS_PER_S

TARGET, ACHIEVED, P99, FOUND = "#999999", "#1f77b4", "#ff7f0e", OUTCOME_COLORS["SEND_OK"]


def search_figure(ph: dict[str, Any], t0_ns: int | None) -> str | None:
    """The two-panel chart of one phase's search; None without steps."""
    steps = ph["steps"]
    if not steps:
        return None
    zero = t0_ns if t0_ns is not None else steps[0]["start_ns"]
    starts = [(s["start_ns"] - zero) / NS_PER_S for s in steps]
    ends = [(s["end_ns"] - zero) / NS_PER_S for s in steps]
    mids = [(a + b) / 2 for a, b in zip(starts, ends, strict=True)]
    fig, (top, low) = plt.subplots(2, 1, sharex=True, figsize=(WIDTH_IN, 2 * PANEL_HEIGHT_IN), dpi=DPI)
    fig.subplots_adjust(**{**MARGINS, "bottom": MARGINS["bottom"] / 2, "top": 1 - (1 - MARGINS["top"]) / 2})
    top.set_title(f"Sustainable-rate search in phase {ph['phase']} (bounds: {ph['bounds_text']}; hold "
                  f"{ph['hold']} steps)", loc="left", fontsize=11)
    xs = [*starts, ends[-1]]
    top.plot(xs, [s["rate"] for s in steps] + [steps[-1]["rate"]], drawstyle="steps-post", color=TARGET,
             linewidth=4, alpha=0.5, label="target rate")
    top.plot(xs, [s["achieved"] for s in steps] + [steps[-1]["achieved"]], drawstyle="steps-post", color=ACHIEVED,
             label="achieved (rows)")
    bad = [i for i, s in enumerate(steps) if not s["within"]]
    for ax in (top, low):
        for i in bad:
            ax.axvspan(starts[i], ends[i], color=FAULT_SHADE, alpha=0.12, label="_")
        ax.grid(True, alpha=0.3)
    top.scatter([mids[i] for i in bad], [steps[i]["achieved"] for i in bad], color=FAULT_SHADE, marker="x",
                zorder=3, label="step outside bounds")
    for i in bad:  # which bounds it broke, over its achieved mark
        top.annotate(", ".join(steps[i]["exceeded"]) or "no rows", (mids[i], steps[i]["achieved"]), fontsize=7,
                     color=FAULT_SHADE, ha="center", textcoords="offset points", xytext=(0, 6))
    if ph["sustainable_rate"]:
        top.axhline(ph["sustainable_rate"], color=FOUND, linestyle=":", label=f"sustainable {ph['sustainable_rate']:,.0f}/s")
    top.set_ylim(0, 1.15 * max(max(s["rate"], s["achieved"]) for s in steps) or 1.0)  # room for the labels
    top.set_ylabel("sends/s")
    p99 = [s["p99_ms"] for s in steps]
    low.plot(mids, [float("nan") if v is None else v for v in p99], color=P99, marker="o", markersize=4,
             label="p99 (intended start)")
    low.scatter([mids[i] for i in bad if p99[i] is not None], [p99[i] for i in bad if p99[i] is not None],
                color=FAULT_SHADE, marker="x", zorder=3, label="step outside bounds")
    if ph["bounds"].get("p99_ms") is not None:
        low.axhline(ph["bounds"]["p99_ms"], color=FAULT_SHADE, linestyle="--", linewidth=0.8, label="p99 bound")
    low.set_ylabel("ms")
    low.set_xlabel("seconds from the first phase start")
    for ax in (top, low):
        ax.set_xlim(starts[0], ends[-1])
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False)
    return to_data_uri(fig)


def compare_search_figure(rows: list[dict[str, Any]]) -> str:
    """Bars of the sustainable rate per run, one group per search phase (`analysis.compare_phases.search_rows`)."""
    runs = [r["run_id"] for r in rows[0]["runs"]]
    height = max(2.5, 0.35 * len(runs) * len(rows) + 1.2)
    fig, ax = plt.subplots(figsize=(WIDTH_IN, height), dpi=DPI)
    fig.subplots_adjust(left=0.15, right=0.78, top=0.9, bottom=0.5 / height + 0.1)
    bar = 0.8 / len(rows)
    for j, ph in enumerate(rows):
        ys = [i + (j - (len(rows) - 1) / 2) * bar for i in range(len(runs))]
        ax.barh(ys, [r["sustainable_rate"] or 0 for r in ph["runs"]], height=bar, label=f"phase {ph['phase']}")
    ax.set_yticks(range(len(runs)), runs)
    ax.invert_yaxis()
    ax.set_xlabel("sends/s (unknown or no search: 0)")
    ax.set_title("Sustainable rate per run", loc="left", fontsize=11)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False)
    return to_data_uri(fig)

"""The HTML pages: one per run (`report/index.html`) and one comparing several runs, from Jinja2 templates.

Pages are self-contained: charts are embedded as data URIs, the style is inline, nothing is fetched from a
network when the page is opened.
"""
from __future__ import annotations

import datetime as dt
import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import jinja2
import yaml

from analysis import contract as c
from analysis.compare_phases import phase_rows, search_rows
from analysis.compute import RunResults
from analysis.figures import OUTCOME_COLORS, compare_figures, run_figures, time_range
from analysis.group_figures import group_share_figure
from analysis.search import sentence
from analysis.search_figures import compare_search_figure, search_figure
from analysis.transitions import slice_name
from analysis.verdict import RunVerdict, merge_valid

TOP_REMARKS = 15
CHART_TITLES = (("rate", "send rate"), ("latency", "latency percentiles"), ("outcomes", "outcomes per second"),
                ("write_bw", "write bandwidth"), ("swap", "swap"), ("fallbehind", "slave fall-behind"),
                ("cpu", "cpu"))
WORD = {True: "valid", False: "invalid", "unknown": "unknown"}
CSS = {True: "held", False: "failed", "unknown": "unknown"}
SCENARIO_SKIP_KEYS = ("expect",)
RUN_IDENTITY_KEYS = frozenset({
    "cluster_id", "run_id", "nodes", "namesrv", "listenPort", "haListenPort", "fastListenPort", "namesrvAddr",
    "haMasterAddress", "storePathRootDir", "storePathCommitLog", "storePathConsumeQueue", "storePathIndex",
    "storeCheckpoint", "abortFile", "rocketmqHome", "kvConfigPath", "configStorePath",
})
"""Config keys (last name of the flattened key) whose values name one run's ports, addresses, paths or ids: they
differ between any two runs, so the comparison counts them instead of listing them among the differences."""


def _num(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        if math.isinf(v):
            return "never"
        return f"{v:,.3f}".rstrip("0").rstrip(".") if abs(v) < 1e6 else f"{v:,.0f}"
    return f"{v:,}" if isinstance(v, int) else str(v)


def _pct(v: Any) -> str:
    return "-" if v is None else f"{100 * v:.2f}%"


def environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.PackageLoader("analysis", "templates"),
                             autoescape=jinja2.select_autoescape(["html", "j2"]), undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True)
    env.filters["num"] = _num
    env.filters["pct"] = _pct
    return env


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _iso(ns: int | None) -> str:
    return "unknown" if ns is None else dt.datetime.fromtimestamp(ns / 1e9, dt.UTC).strftime("%Y-%m-%d %H:%M:%S.%f")


def flatten(data: Any, prefix: str = "") -> dict[str, str]:
    """Nested mappings as `a.b.c -> value` strings (lists as JSON)."""
    out: dict[str, str] = {}
    if isinstance(data, Mapping):
        for k, v in data.items():
            out.update(flatten(v, f"{prefix}.{k}" if prefix else str(k)))
    elif isinstance(data, list):
        out[prefix] = json.dumps(data, sort_keys=True, default=str)
    else:
        out[prefix] = "" if data is None else str(data)
    return out


def verdict_view(v: RunVerdict) -> dict[str, Any]:
    return {
        "word": WORD[v.valid], "css": CSS[v.valid], "counts": v.counts(), "incomplete": v.incomplete,
        "results": [{"name": r.name, "metric": r.expectation.metric + (f" ({r.expectation.basis})"
                                                                      if r.expectation.metric.startswith("latency_")
                                                                      else f" (below {r.expectation.below:g})"
                                                                      if r.expectation.below is not None else ""),
                     "filters": ", ".join(f"{k}={val}" for k, val in r.expectation.filters.items()),
                     "measured": r.measured_text(), "limit": r.limit_text(), "status": r.status, "note": r.note}
                    for r in v.results],
    }


def _config(cluster: dict[str, Any] | None) -> tuple[list[str], list[dict[str, Any]]]:
    """Config table: one column per node when cluster.json has `nodes`, else one column."""
    if not cluster:
        return [], []
    nodes = cluster.get("nodes")
    if isinstance(nodes, Mapping) and nodes:
        names = list(nodes)
        flat = {n: flatten(nodes[n]) for n in names}
        common = flatten({k: v for k, v in cluster.items() if k != "nodes"})
        keys = sorted({k for f in flat.values() for k in f})
        rows = [{"key": k, "values": [v] * len(names), "differs": False} for k, v in common.items()]
        for k in keys:
            values = [flat[n].get(k, "") for n in names]
            rows.append({"key": k, "values": values, "differs": len(set(values)) > 1})
        return names, rows
    return ["value"], [{"key": k, "values": [v], "differs": False} for k, v in flatten(cluster).items()]


def _outcome_matrix(res: RunResults) -> dict[str, Any]:
    """Outcome x slice counts: a column per phase and per transition slice (analysis.per_phase), as the Phases
    table's rows."""
    phases = [p["slice"] for p in res.per_phase if not p["whole_run"]]
    cells: dict[tuple[str, str], int] = {}
    cls_of: dict[str, str] = {}
    for row in res.outcome_counts.to_pylist():
        key = (row["outcome"], slice_name(row["phase"], row.get("transition")))
        cells[key] = cells.get(key, 0) + row["sends"]
        cls_of[row["outcome"]] = row["cls"]
    order = list(OUTCOME_COLORS)
    words = sorted(cls_of, key=lambda o: (order.index(o) if o in order else len(order), o))
    rows = [{"outcome": w, "cls": cls_of[w], "counts": [cells.get((w, p), 0) for p in phases],
             "total": sum(n for (o, _), n in cells.items() if o == w)} for w in words]
    return {"phases": phases, "rows": rows}


def _top_remarks(res: RunResults) -> list[dict[str, Any]]:
    agg: dict[tuple[Any, ...], dict[str, Any]] = {}
    for row in res.outcome_counts.to_pylist():
        if row["remark_pattern"] is None and row["response_code"] in (None, 0):
            continue
        key = (row["outcome"], row["response_code"], row["remark_pattern"])
        a = agg.setdefault(key, {"outcome": key[0], "response_code": key[1], "remark_pattern": key[2],
                                 "remark_example": row["remark_example"], "sends": 0})
        a["sends"] += row["sends"]
    return sorted(agg.values(), key=lambda a: -a["sends"])[:TOP_REMARKS]


def phase_marks(res: RunResults) -> list[dict[str, Any]]:
    t0 = res.t0_ns
    return [{"name": p.name, "start_s": None if t0 is None else (p.start_ns - t0) / 1e9}
            for p in res.run.timeline.phases]


def render_run_page(res: RunResults) -> str:
    figures = run_figures(res.per_second, res.outcomes_per_second, res.metrics_per_second, phase_marks(res),
                          res.faults)
    nodes, rows = _config(res.run.cluster)
    consume = None
    if res.consume is not None:
        from analysis.consume_figures import consume_figures
        from analysis.pagecache import BUCKETS

        rc = res.consume
        consume = {"groups": rc.groups(), "figures": consume_figures(rc, res.t0_ns, phase_marks(res), res.faults),
                   "rows": _consume_rows(rc), "loss": rc.loss, "loss_measured": rc.loss_measured,
                   "reordered": rc.reordered, "pagecache": rc.pagecache, "buckets": BUCKETS,
                   "verdicts": rc.verdicts, "lag": rc.to_json()["lag"]}
    return environment().get_template("run.html.j2").render(
        consume=consume, groups=group_view(res),
        generated=_now(),
        run={"run_id": res.run.run_id, "scenario": res.run.scenario_name, "status": res.run.timeline.status,
             "rows": res.rows, "t0": _iso(res.t0_ns)},
        verdict=verdict_view(res.verdict), warnings=res.warnings, figures=figures, chart_titles=CHART_TITLES,
        phases=res.per_phase, outcome_matrix=_outcome_matrix(res), remarks=_top_remarks(res), faults=res.faults,
        failover=res.failover, search=search_view(res),
        loss={**res.loss.counts, "measured": res.loss.measured, "note": res.loss.note, "samples": res.loss.samples,
              "unread": [q.to_json() for q in res.loss.unread]},
        config_nodes=nodes, config_rows=rows, scenario_text=res.run.scenario_text,
    )


def group_view(res: RunResults) -> dict[str, Any] | None:
    """The per-group panel of a run with several broker groups (analysis.per_group): the share chart and per slice
    a row per group (the slice's name on its first); None for one group."""
    if res.per_group is None or res.group_per_second is None:
        return None
    x_min, x_max = time_range(res.per_second, res.metrics_per_second)
    slices: dict[str, list[dict[str, Any]]] = {}
    for r in res.per_group:
        text = ", ".join(f"{w} {n:,}" for w, n in r["outcomes"].items())
        slices.setdefault(r["slice"], []).append({**r, "outcome_text": text})
    return {"groups": res.run.broker_groups, "slices": slices,
            "figure": group_share_figure(res.group_per_second, phase_marks(res), res.faults, x_min, x_max)}


def search_view(res: RunResults) -> list[dict[str, Any]]:
    """Per search phase: the sentence, the chart and the steps (start second from the run's time 0)."""
    out = []
    for ph in (res.search or {}).values():
        zero = res.t0_ns
        steps = [{**s, "start_s": None if zero is None else (s["start_ns"] - zero) / 1e9} for s in ph["steps"]]
        out.append({**ph, "steps": steps, "sentence": sentence(ph), "figure": search_figure(ph, zero)})
    return out


def _consume_rows(rc: Any) -> list[dict[str, Any]]:
    """Per group per phase (then per group over the run): deliveries, rate, e2e p50/p99 of both bases, from slave."""
    out = []
    for r in rc.per_phase:
        if r["basis"] != "born" or r["level"] not in ("group_phase", "group"):
            continue
        stored = rc.row(r["group"], r["phase"], "stored") or {}
        phase = r["phase"] if r["level"] == "group_phase" else "(whole run)"
        out.append({"group": r["group"], "phase": phase if phase is not None else "(after the phases: drain)",
                    "deliveries": r["deliveries"], "successes": r["successes"], "rate": r["rate"],
                    "born_p50": r["p50"], "born_p99": r["p99"], "stored_p50": stored.get("p50"),
                    "stored_p99": stored.get("p99"), "max": r["max"], "from_slave": r["from_slave"]})
    return out


def compare_rows(results: Sequence[RunResults], page_dir: Path) -> list[dict[str, Any]]:
    rows = []
    for res in results:
        whole = next((p for p in res.per_phase if p["whole_run"]), {})
        outcomes: dict[str, int] = {}
        for row in res.outcome_counts.to_pylist():
            outcomes[row["outcome"]] = outcomes.get(row["outcome"], 0) + row["sends"]
        v = res.verdict
        rows.append({
            "run_id": res.run.run_id, "scenario": res.run.scenario_name, "word": WORD[v.valid], "css": CSS[v.valid],
            "counts": v.counts(), "status": res.run.timeline.status, "sends": res.rows, "outcomes": outcomes,
            "ok_share": outcomes.get(c.SEND_OK, 0) / res.rows if res.rows else None,
            "p99_intended": whole.get("intended_p99"), "p99_actual": whole.get("actual_p99"),
            "lost": res.loss.counts.get("lost"), "not_on_slave": res.loss.counts.get("not_on_slave"),
            "failing": [r.message() for r in v.results if r.status != "held"],
            "phases": {p["phase"]: p for p in res.per_phase if not p["whole_run"] and p["transition"] is None},
            "link": os.path.relpath(res.run.layout.report_index, page_dir),
        })
    return rows


def compare_consumer_rows(results: Sequence[RunResults]) -> list[dict[str, Any]]:
    """Per run per consumer group, side by side: deliveries, e2e p99 of both bases, lost, duplicates, lag max,
    committed-offset stall, and the run's master PAGECACHERT figures. A run without consumer groups has no row
    (its PAGECACHERT alone is no consumer side); empty when no run had consumers."""
    out = []
    for res in results:
        rc = res.consume
        if rc is None:
            continue
        lag = rc.to_json()["lag"]
        master = next((r for r in rc.pagecache if r["node"] == "master" and r["window"] == "(whole run)"), {})
        for g in rc.groups() or ([None] if rc.per_phase else []):
            born, stored = rc.row(g, None, "born") or {}, rc.row(g, None, "stored") or {}
            loss = rc.loss.get(g or "", {})
            out.append({"run_id": res.run.run_id, "group": g, "deliveries": born.get("deliveries"),
                        "born_p99": born.get("p99"), "stored_p99": stored.get("p99"),
                        "lost": loss.get("lost") if rc.loss_measured else None, "duplicated": loss.get("duplicated"),
                        "lag_max": lag.get(g or "", {}).get("max"), "stall_s": lag.get(g or "", {}).get("stall_s"),
                        "rewind": lag.get(g or "", {}).get("rewind"),
                        "put_fast": master.get("under_10ms_share"), "put_p99": master.get("p99_upper_ms")})
    return out


def config_differences(results: Sequence[RunResults]) -> tuple[list[dict[str, Any]], list[str], int]:
    """Keys of scenario (without `expect`) and cluster config whose values differ between runs; the keys that differ
    only because they name each run's ports, paths and ids (`RUN_IDENTITY_KEYS`); how many keys are the same."""
    flats = []
    for res in results:
        scenario = {}
        if res.run.scenario_text:
            loaded = yaml.safe_load(res.run.scenario_text) or {}
            scenario = {k: v for k, v in loaded.items() if k not in SCENARIO_SKIP_KEYS} if isinstance(
                loaded, dict) else {}
        flats.append({**flatten(scenario, "scenario"), **flatten(res.run.cluster or {}, "cluster")})
    keys = sorted({k for f in flats for k in f})
    differing = [k for k in keys if len({f.get(k) for f in flats}) > 1]
    identity = [k for k in differing if k.rsplit(".", 1)[-1] in RUN_IDENTITY_KEYS]
    diff = [{"key": k, "values": [f.get(k) for f in flats]} for k in differing if k not in identity]
    return diff, identity, len(keys) - len(differing)


def render_compare_page(results: Sequence[RunResults], page_dir: Path) -> str:
    rows = compare_rows(results, page_dir)
    valid = merge_valid(r.verdict.valid for r in results)
    outcomes = sorted({o for r in rows for o in r["outcomes"]},
                      key=lambda o: (list(OUTCOME_COLORS).index(o) if o in OUTCOME_COLORS else 99, o))
    phase_names: list[str] = []
    for r in rows:
        phase_names += [p for p in r["phases"] if p not in phase_names]
    diff, identity, same = config_differences(results)
    searches = search_rows(results)
    return environment().get_template("compare.html.j2").render(
        search_rows=searches, search_figure=compare_search_figure(searches) if searches else None,
        phase_rows=phase_rows(results), consumer_rows=compare_consumer_rows(results), generated=_now(), rows=rows, verdict_word=WORD[valid], verdict_css=CSS[valid],
        figures=compare_figures(rows), outcomes=outcomes, phase_names=phase_names, config_diff=diff,
        config_same=same, config_identity=identity,
    )

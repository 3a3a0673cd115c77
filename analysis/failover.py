"""Failover figures of a controller-mode run (harness `cluster.mode: controller`), from the `roles` events the
harness's sampler wrote (the controller's master and the name server's route, sampled every 100 ms) and the request
rows. t = 0 is the death of the master: the `apply ok` event of the fault on `master` (a kill: the SIGKILL sent),
or the moment the fault's evidence says the process died (`died_ns`: Docker's `State.FinishedAt` of a killed
container) when that came before it. `roles` answers count from the apply's start: a controller can name the new
master before the harness has heard that its kill is done (`docker kill` returns after the container is dead: an
election 0.1 s after the kill, the ok 0.2 s after it); a figure is never below 0.

- failover_election_s: first `roles` answer (from the apply's start) where the controller names a master other than
  the fault's node, from t
- failover_route_s: first `roles` answer (the same) where the name server's route gives brokerId 0 to another node
- failover_first_ok_s: end of the first SEND_OK among the sends started after t
- failover_unavailable_s: that end minus the end of the last SEND_OK completed before t (producers without a
  master that acknowledges)

Every send counts, those started while the fault was still being verified too (analysis.transitions): the master
is gone from the `apply ok` on, whatever the harness's verification still measures.

`inf`: it never happened in the run; `None` (unknown): no fault on the master was applied, or no `roles` events
(not a controller-mode run). The `fault` filter picks the fault (default: the first applied to `master`, or to a
set's master, `broker-b/master`). With several broker sets the figures are the dead master's set's: its `roles`
events (`group`) and the sends that ended on it (the other sets go on serving)."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from analysis import contract as c
from analysis.expectations import FAILOVER_METRICS
from analysis.rundir import run_events
from analysis.timeline import NS

ANSWERED_AT = {"master": "controller_ns", "route_master": "route_ns"}


@dataclass
class Failover:
    fault_id: str | None = None
    node: str | None = None  # the node that held the master role when the fault was applied
    death_ns: int | None = None
    figures: dict[str, float | None] | None = None
    note: str | None = None


def death_of(events: list[dict[str, Any]], fault: str | None) -> tuple[str | None, str | None, int | None, int | None]:
    """(fault id, node, death, the apply's start) of the fault on the master."""
    for ev in events:
        if ev.get("event") == c.EVENT_FAULT and ev.get("action") == "apply" and ev.get("status") == "ok" and (
                ev.get("fault_id") == fault if fault else ev.get("target") in ("master", *_group_masters(ev))):
            ok, fid = ev.get("wall_ns"), ev.get("fault_id")
            mine = [e for e in events if e.get("event") == c.EVENT_FAULT and e.get("fault_id") == fid]
            started = next((e.get("wall_ns") for e in mine if e.get("action") == "apply"
                            and e.get("status") == "started"), ok)
            died = [d for e in mine if e.get("action") in ("apply", "verify") and e.get("status") == "ok"
                    for d in [(e.get("evidence") or {}).get("died_ns")] if isinstance(d, int) and started <= d < ok]
            return fid, ev.get("node") or ev.get("target"), min(died, default=ok), started
    return None, None, None, None


def first_after(roles: list[dict[str, Any]], key: str, node: str | None, started: int, death: int) -> float:
    """Seconds from the death to the first `roles` answer, from the apply's start on, naming a `key` other than
    `node` (never below 0); inf when none does."""
    stamp = ANSWERED_AT[key]  # when that answer came (older runs: the event's time)
    t = next((ev.get(stamp) or ev["wall_ns"] for ev in roles
              if (ev.get(stamp) or ev["wall_ns"]) >= started and ev.get(key) not in (None, node)), None)
    return math.inf if t is None else max(0, t - death) / NS


def _group_masters(ev: dict[str, Any]) -> tuple[str, ...]:
    """A set's master as a fault target with several sets (`broker-b/master`)."""
    target = str(ev.get("target") or "")
    return (target,) if target.endswith("/master") else ()


def _group_of(run: Any, node: str | None) -> str | None:
    """The broker set of `node` when the run has several (cluster.json's `groups`); None with one."""
    if len(run.broker_groups) < 2:
        return None
    groups = (run.cluster or {}).get("groups") or []
    return next((g.get("name") for g in groups if node in (g.get("members") or [])), None)


def failover(run: Any, requests: DataFrame, fault: str | None = None) -> Failover:
    """The failover figures of one run (one Spark aggregation over its rows). With several broker sets, those of
    the set the dead master belonged to: its `roles` events, and the sends that ended on it."""
    events = run_events(run)
    fault_id, node, death, started = death_of(events, fault)
    if death is None or started is None:
        return Failover(note=f"no fault {fault!r} applied" if fault else "no fault on the master was applied")
    group = _group_of(run, node)
    roles = [ev for ev in events if ev.get("event") == c.EVENT_ROLES and "route_master" in ev
             and (group is None or ev.get("group") == group)]
    if not roles:
        return Failover(fault_id, node, death, note="no roles events (not a controller-mode run)")

    rows = requests.where((F.col("run_id") == F.lit(run.run_id)) & (F.col("outcome") == c.SEND_OK))
    if group is not None:
        rows = rows.where(F.col("broker") == F.lit(group))
    agg = rows.agg(F.max(F.when(F.col("end_ns") < F.lit(death), F.col("end_ns"))).alias("last"),
                   F.min(F.when(F.col("start_ns") >= F.lit(death), F.col("end_ns"))).alias("first")).first()
    last, first = (agg["last"], agg["first"]) if agg is not None else (None, None)
    figures: dict[str, float | None] = {f"failover_{name}_s": first_after(roles, key, node, started, death)
                                        for name, key in (("election", "master"), ("route", "route_master"))}
    figures["failover_first_ok_s"] = math.inf if first is None else (first - death) / NS
    figures["failover_unavailable_s"] = (math.inf if first is None else None if last is None
                                         else (first - last) / NS)
    return Failover(fault_id, node, death, figures)


def _measurement(fo: Failover, metric: str, run: Any) -> Any:
    from analysis.measures import Measurement

    if fo.figures is None:
        return Measurement(None, fo.note)
    value = fo.figures.get(metric)
    if value is None:
        return Measurement(None, "no SEND_OK before the master's death")
    if math.isinf(value) and not run.timeline.completed:
        return Measurement(None, "never in the rows there are, but the run did not complete")
    return Measurement(value, f"fault {fo.fault_id} on {fo.node}")


def failover_of(run: Any, requests: DataFrame, measured: dict[tuple[str, int], Any]) -> dict[str, Any] | None:
    """Measure the run's failover expectations into `measured`; the figures for the report (None: the run has no
    `roles` events, so it is not a controller-mode run)."""
    base = failover(run, requests)
    for i, e in enumerate(run.expectations):
        if e.metric in FAILOVER_METRICS:
            fo = base if not e.fault else failover(run, requests, e.fault)
            measured[(run.run_id, i)] = _measurement(fo, e.metric, run)
    if base.note == "no roles events (not a controller-mode run)" or (
            base.figures is None and not any(ev.get("event") == c.EVENT_ROLES for ev in run_events(run))):
        return None
    figures = {k: (None if v is None or math.isinf(v) else round(v, 3)) for k, v in (base.figures or {}).items()}
    return {"fault_id": base.fault_id, "node": base.node, "note": base.note, **figures}

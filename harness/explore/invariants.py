"""The invariants every explored run is checked against, written as expectations of the generated scenario (the
analysis measures them like any other): the built-in ones that hold for any correct cluster, where the metrics
allow, and the explore file's own `expect:`.

- `inv-nothing-acked-lost`: `{metric: lost, max: 0}`: no acknowledged send missing from the read-back (off with
  `invariants.lost: false`, e.g. for unclean elections).
- `inv-producers-back`: in the `after` phase, from `producers_back_s` after the last revert on, the share of
  SEND_OK is at least `producers_share`: the producers recovered, and the nodes faulted serve again.
- `inv-nodes-back`: `{metric: nodes_not_back, max: 0}`: every node a revert (or a timed or one-shot restart)
  started again came back (a 5.3.0 slave whose epoch checkpoint is empty after `readonly_fs` does not); such a run
  ends with a revert error, yet this failure is the cluster's, so it counts even though the run did not complete.
- with consumer groups, per group: `inv-<group>-delivers-all` (`consumer_lost` 0: every acknowledged send
  delivered) and `inv-<group>-in-order` (`consumer_reordered` 0: nothing reordered within a queue).

A node that came back but serves no producer (a controller follower) is judged by its start alone (up and, for a
broker, registered), not by traffic.

A run's verdict for explore (Jepsen's priority): `fail` when an expectation failed, else `unknown` when one could
not be measured or the run did not complete (discarded, never a pass or a failure), else `pass`; in a run that did
not complete only `inv-nodes-back` counts as failed."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.explore.schedule import AFTER_PHASE
from harness.explore.spec import Space

PASS, FAIL, UNKNOWN = "pass", "fail", "unknown"


def expectations(space: Space, consumer_groups: list[str]) -> list[dict[str, Any]]:
    """The expectations of every generated scenario: the built-in invariants, then the file's own."""
    inv = space.invariants
    out: list[dict[str, Any]] = []
    if inv.lost:
        out.append({"name": "inv-nothing-acked-lost", "metric": "lost", "max": 0})
    if inv.nodes_back:
        out.append({"name": "inv-nodes-back", "metric": "nodes_not_back", "max": 0})
    if inv.producers_back_s is not None:
        out.append({"name": "inv-producers-back", "phase": AFTER_PHASE, "after_s": inv.producers_back_s,
                    "outcome": "SEND_OK", "metric": "share", "min": inv.producers_share})
    if inv.consumers:
        for g in consumer_groups:
            out.append({"name": f"inv-{g}-delivers-all", "group": g, "metric": "consumer_lost", "max": 0})
            out.append({"name": f"inv-{g}-in-order", "group": g, "metric": "consumer_reordered", "max": 0})
    out += [{**e.model_dump(mode="json", exclude_unset=True, exclude_none=True), "name": e.label()}
            for e in space.expect]
    return out


@dataclass(frozen=True)
class Judgement:
    verdict: str
    failed: tuple[str, ...] = ()
    unknown: tuple[str, ...] = ()
    why: str = ""
    """for `unknown`: the run's status and error, or the expectations not measured; for `fail`: the lines"""


CLUSTER_FAILURE_METRICS = ("nodes_not_back",)
"""Failed, these are the cluster's failure even in a run that did not complete (its revert failed on them)."""


def judge(status: str, error: str | None, verdict: Mapping[str, Any] | None) -> Judgement:
    """Explore's verdict of one run from its status and its verdict.json (None: the analysis wrote none)."""
    if status != "completed":
        items = (verdict or {}).get("expectations") or []
        theirs = [e for e in items if e.get("status") == "failed" and e.get("metric") in CLUSTER_FAILURE_METRICS]
        if theirs:  # a node that did not come back ended the run: the cluster's failure, not the harness's
            return Judgement(FAIL, tuple(e["name"] for e in theirs),
                             why="; ".join(f"{e['name']}: {e.get('note') or e.get('measured_text')}" for e in theirs))
        return Judgement(UNKNOWN, why=f"run {status}" + (f": {error}" if error else ""))
    if verdict is None:
        return Judgement(UNKNOWN, why="the analysis wrote no verdict")
    items = verdict.get("expectations") or []
    failed = tuple(e["name"] for e in items if e.get("status") == "failed")
    unknown = tuple(e["name"] for e in items if e.get("status") == "unknown")
    if failed:
        lines = [f"{e['name']}: measured {e.get('measured_text', e.get('measured'))}"
                 for e in items if e.get("status") == "failed"]
        return Judgement(FAIL, failed, unknown, "; ".join(lines))
    if unknown:
        return Judgement(UNKNOWN, failed, unknown, "not measured: " + ", ".join(unknown))
    return Judgement(PASS)


def only(expect: list[dict[str, Any]], names: set[str]) -> list[dict[str, Any]]:
    """The expectations named (the minimal file keeps the invariants that failed)."""
    return [e for e in expect if e.get("name") in names]

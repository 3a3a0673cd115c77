"""`nodes_not_back`: the nodes that a fault's revert (or a one-shot `restart`) started again and that did not come
back: exited while starting, or not serving within the bound of the start (the harness's `NodeNotBack`, recorded as
`node_not_back` on the fault's `apply` or `revert` event that failed; the node is the event's `node`, the node its
target resolved to). This is the cluster's failure, not the
harness's: a 5.3.0 slave whose epoch checkpoint is empty after a read-only store does not start again, and a run
that meets it fails with a revert error, which this metric measures (explore's `inv-nodes-back`).

Measured from events.jsonl alone: the count of distinct nodes; unknown when there are none and the run did not
complete (a fault applied may not have been reverted yet)."""
from __future__ import annotations

from typing import Any

from analysis import contract as c
from analysis.expectations import NODE_METRICS
from analysis.rundir import run_events


def nodes_not_back(events: list[dict[str, Any]]) -> dict[str, str]:
    """node -> the error of the first fault event that found it not back."""
    out: dict[str, str] = {}
    for ev in events:
        if ev.get("event") == c.EVENT_FAULT and ev.get("status") == "failed" and ev.get("node_not_back"):
            out.setdefault(str(ev.get("node") or ev.get("target")), str(ev.get("error") or ""))
    return out


def measure_nodes_back(run: Any, measured: dict[tuple[str, int], Any]) -> dict[str, str]:
    """Measure the run's `nodes_not_back` expectations into `measured`; the nodes not back (for the verdict)."""
    from analysis.measures import Measurement

    found = nodes_not_back(run_events(run))
    for i, e in enumerate(run.expectations):
        if e.metric not in NODE_METRICS:
            continue
        if found:
            note = "; ".join(f"{node}: {error[:200]}" for node, error in sorted(found.items()))
            measured[(run.run_id, i)] = Measurement(float(len(found)), note)
        elif not run.timeline.completed:
            measured[(run.run_id, i)] = Measurement(None, "no node found not back, but the run did not complete "
                                                          "(a fault may not have been reverted)")
        else:
            measured[(run.run_id, i)] = Measurement(0.0, "every fault reverted")
    return found

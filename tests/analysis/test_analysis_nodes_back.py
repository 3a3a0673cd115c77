"""`nodes_not_back` (analysis.nodes_back) from fault events, and the harness's side of it: a revert whose node start
raised `NodeNotBack`, wrapped in an undo op's `UndoError` as it is, is recognised (faults.errors.not_back)."""
from __future__ import annotations

from types import SimpleNamespace

from analysis.expectations import Expectation
from analysis.nodes_back import measure_nodes_back, nodes_not_back
from faults.errors import FaultError, NodeNotBack, UndoError, not_back


def _fault(action: str, status: str, node: str, **extra) -> dict:
    return {"event": "fault", "fault_id": "f", "kind": "readonly_fs", "target": "slave", "node": node,
            "action": action, "status": status, **extra}


def test_not_back_looks_through_the_undo_error_it_is_wrapped_in() -> None:
    try:
        try:
            raise NodeNotBack("node broker-1 exited with 255 while starting")
        except NodeNotBack as e:
            raise UndoError(f"undo node_start failed: {e}") from e
    except UndoError as wrapped:
        assert not_back(wrapped)
    assert not not_back(FaultError("verify: not effective")) and not not_back(None)


def test_the_nodes_whose_start_failed_once_each() -> None:
    events = [_fault("apply", "ok", "broker-1"),
              _fault("revert", "failed", "broker-1", error="exited with 255", node_not_back=True),
              _fault("revert", "failed", "broker-1", error="exited with 255 again", node_not_back=True),
              _fault("revert", "failed", "broker-0", error="iptables: busy"),  # the harness's failure
              _fault("apply", "failed", "namesrv", error="not ready within 120 s", node_not_back=True)]
    assert nodes_not_back(events) == {"broker-1": "exited with 255", "namesrv": "not ready within 120 s"}


def _run(completed: bool, monkeypatch, events: list[dict]):
    monkeypatch.setattr("analysis.nodes_back.run_events", lambda run: events)
    expect = [Expectation(metric="nodes_not_back", max=0, name="back"), Expectation(metric="lost", max=0)]
    return SimpleNamespace(run_id="r", expectations=expect, timeline=SimpleNamespace(completed=completed))


def test_measured_even_when_the_run_did_not_complete(monkeypatch) -> None:
    measured: dict = {}
    failed = [_fault("revert", "failed", "broker-1", error="exited with 255", node_not_back=True)]
    assert measure_nodes_back(_run(False, monkeypatch, failed), measured) == {"broker-1": "exited with 255"}
    assert measured[("r", 0)].value == 1 and "broker-1" in measured[("r", 0)].note and ("r", 1) not in measured
    measured.clear()
    measure_nodes_back(_run(False, monkeypatch, []), measured)
    assert measured[("r", 0)].value is None  # not known: a fault may not have been reverted
    measured.clear()
    measure_nodes_back(_run(True, monkeypatch, []), measured)
    assert measured[("r", 0)].value == 0

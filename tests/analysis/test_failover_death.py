"""The failover figures' t = 0 (analysis/failover.py): a controller may name the new master before the harness
hears its kill is done (compose: `docker kill` returns 0.2 s after the signal, the election came 0.1 s after it);
that election counts from the death Docker stamped, and a figure is never below 0. The events are a compose
run's of CI (20261128T174929Z-master-killed-controller), shifted to start at 0."""
from __future__ import annotations

import math

from analysis.failover import death_of, first_after

S = 1_000_000_000


def fault(action: str, status: str, at: float, **evidence: int) -> dict:
    ev = {"event": "fault", "fault_id": "kill-master", "kind": "kill", "target": "master", "node": "broker-0",
          "action": action, "status": status, "wall_ns": int(at * S)}
    return {**ev, "evidence": evidence} if evidence else ev


def roles(at: float, master: str, route: str) -> dict:
    return {"event": "roles", "wall_ns": int(at * S), "master": master, "route_master": route,
            "controller_ns": int(at * S), "route_ns": int(at * S)}


EVENTS = [roles(90.513, "broker-0", "broker-0"), fault("apply", "started", 100.0),
          roles(100.101, "broker-1", "broker-1"), fault("apply", "ok", 100.212),
          fault("verify", "started", 100.212), fault("verify", "ok", 100.220, died_ns=int(100.031 * S)),
          roles(115.242, "broker-1", "broker-1")]
ROLES = [e for e in EVENTS if e["event"] == "roles"]


def test_an_election_seen_before_the_kill_returned_counts_from_the_death_docker_stamped() -> None:
    fid, node, death, started = death_of(EVENTS, None)
    assert (fid, node, started, death) == ("kill-master", "broker-0", 100 * S, int(100.031 * S))
    assert math.isclose(first_after(ROLES, "master", node, started, death), 0.070, abs_tol=1e-6)
    assert math.isclose(first_after(ROLES, "route_master", node, started, death), 0.070, abs_tol=1e-6)


def test_without_a_stamp_the_death_is_the_apply_ok_and_an_earlier_answer_is_0_not_negative() -> None:
    events = [e for e in EVENTS if not (e["action"] == "verify" if e["event"] == "fault" else False)]
    _, node, death, started = death_of(events, None)
    assert death == int(100.212 * S)
    assert first_after(ROLES, "master", node, started, death) == 0.0


def test_a_stamp_outside_the_apply_is_not_taken_and_a_master_never_replaced_is_inf() -> None:
    events = [*EVENTS[:5], fault("verify", "ok", 100.22, died_ns=int(99.0 * S))]
    _, node, death, started = death_of(events, None)
    assert death == int(100.212 * S)
    assert first_after([ROLES[0]], "master", node, started, death) == math.inf

"""A run of two broker groups with known answers (issue 42), written through `known_runs.RunBuilder`.

steady (0-4 s) -> sick (4-12 s, fault `slow-a` on broker-a's master: apply started 4.000 s, verified 4.200 s, revert
started 11.800 s, ok 12.000 s) -> healed (12-16 s). A send every 10 ms (intended = actual start), alternating
broker-a / broker-b (SEND_OK: 2 ms on broker-a, 4 ms on broker-b), except while the fault is in effect: counted in
seconds k from the verify, broker-a gets every 2nd send in k = 0, 3 of 10 in k = 1, 1 of 10 in k = 2, none in
k = 3, 4, 6, 7 and one of 100 in k = 5; in k = 4 (8.2-9.2 s) no send starts at all (the load paused); k = 7 is
cut at the revert's start (60 sends). broker-a's sends then are MQBrokerException code 2 (210 ms), broker-b's
SEND_OK. Two sends in `healed` reached no broker (MQClientException, `broker` null).

| slice | broker-a | broker-b | (no broker) |
|---|---|---|---|
| steady | 200 | 200 | 0 |
| sick | 91 (0 SEND_OK) | 569 | 0 |
| sick (transition: slow-a apply) | 10 | 10 | 0 |
| sick (transition: slow-a revert) | 10 | 10 | 0 |
| healed | 200 | 200 | 2 |
| (whole run) | 511 (420 SEND_OK) | 989 | 2 |

broker-a's share per second from the verify: 0.5, 0.3, 0.1, 0, (none), 0.01, 0, 0; `group_leave_s` counts its seconds
from the apply's start, 0.2 s earlier: 0.5, 0.34, 0.14, 0.02, 0, ...: 3 below 0.05, 2 below 0.2, 0 below 0.5;
broker-b's last second is all broker-b, so below 0.5 it never leaves.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from known_runs import Answers, RunBuilder, _standard_events

from analysis import contract as c

A, B = "broker-a", "broker-b"
PHASES = [("steady", 0, 4000), ("sick", 4000, 12000), ("healed", 12000, 16000)]
APPLY, VERIFIED, REVERT, REVERTED = 4000, 4200, 11800, 12000
PAUSE = (8200, 9200)
BUSY = "[REJECTREQUEST]system busy, start flow control for a while"
SICK_SHARE = {0: lambda i: i % 2 == 0, 1: lambda i: i % 10 < 3, 2: lambda i: i % 10 == 0, 5: lambda i: i == 0}
"""Second k from the verify -> which send i of that second (0..99) goes to broker-a."""
NONE_ROUTE = "No route info of this topic: ChaosTopic"

ANSWERS: dict[tuple[str, str], tuple[int, int, float | None]] = {  # (slice, group) -> sends, SEND_OK, intended p99
    ("steady", A): (200, 200, 2.0), ("steady", B): (200, 200, 4.0),
    ("sick", A): (91, 0, 210.0), ("sick", B): (569, 569, 4.0),
    ("sick (transition: slow-a apply)", A): (10, 10, 2.0), ("sick (transition: slow-a apply)", B): (10, 10, 4.0),
    ("sick (transition: slow-a revert)", A): (10, 10, 2.0), ("sick (transition: slow-a revert)", B): (10, 10, 4.0),
    ("healed", A): (200, 200, 2.0), ("healed", B): (200, 200, 4.0), ("healed", "(no broker)"): (2, 0, 1.0),
    ("(whole run)", A): (511, 420, 210.0), ("(whole run)", B): (989, 989, 4.0),
    ("(whole run)", "(no broker)"): (2, 0, 1.0),
}
EXPECT: list[dict[str, Any]] = [
    {"name": "steady-a-half", "phase": "steady", "broker": A, "metric": "group_share", "min": 0.5, "max": 0.5},
    {"name": "sick-a-share", "phase": "sick", "broker": A, "metric": "group_share", "max": 0.2},
    {"name": "sick-a-share-transitions", "phase": "sick", "broker": A, "metric": "group_share",
     "transitions": "only", "min": 0.5, "max": 0.5},
    {"name": "a-share-run", "broker": A, "metric": "group_share", "max": 0.5},
    {"name": "healed-b-share", "phase": "healed", "broker": B, "metric": "group_share", "min": 0.49},
    {"name": "sick-a-count", "phase": "sick", "broker": A, "metric": "count", "min": 91, "max": 91},
    {"name": "sick-a-busy", "phase": "sick", "broker": A, "outcome": "MQBrokerException", "metric": "share",
     "min": 1},
    {"name": "sick-b-ok", "phase": "sick", "broker": B, "outcome": "SEND_OK", "metric": "share", "min": 1},
    {"name": "sick-a-rate", "phase": "sick", "broker": A, "metric": "rate", "max": 12},
    {"name": "steady-b-p99", "phase": "steady", "broker": B, "metric": "latency_p99_ms", "max": 4},
    {"name": "a-leaves", "fault": "slow-a", "broker": A, "metric": "group_leave_s", "below": 0.05, "max": 5},
    {"name": "a-leaves-all", "fault": "slow-a", "broker": A, "metric": "group_leave_s", "below": 0, "max": 10},
    {"name": "a-leaves-20", "fault": "slow-a", "broker": A, "metric": "group_leave_s", "below": 0.2, "max": 5},
    {"name": "a-half-at-once", "fault": "slow-a", "broker": A, "metric": "group_leave_s", "below": 0.5, "max": 0},
    {"name": "b-never-leaves", "fault": "slow-a", "broker": B, "metric": "group_leave_s", "below": 0.5, "max": 60},
    {"name": "no-such-group", "broker": "broker-c", "metric": "count", "min": 0},
]
MEASURED: dict[str, tuple[float | None, str]] = {  # name -> (measured, status)
    "steady-a-half": (0.5, "held"), "sick-a-share": (91 / 660, "held"), "sick-a-share-transitions": (0.5, "held"),
    "a-share-run": (511 / 1502, "held"), "healed-b-share": (200 / 402, "held"), "sick-a-count": (91, "held"),
    "sick-a-busy": (1.0, "held"), "sick-b-ok": (1.0, "held"), "sick-a-rate": (91 / 7.6, "held"),
    "steady-b-p99": (4.0, "held"), "a-leaves": (3.0, "held"), "a-leaves-all": (6.0, "held"),
    "a-leaves-20": (2.0, "held"), "a-half-at-once": (0.0, "held"), "b-never-leaves": (math.inf, "failed"),
    "no-such-group": (None, "unknown"),
}


def _on_a(t: int) -> bool:
    if t < VERIFIED or t >= REVERT:
        return (t // 10) % 2 == 0
    k, rest = divmod(t - VERIFIED, 1000)
    rule = SICK_SHARE.get(k)
    return rule is not None and rule(rest // 10)


def _cluster() -> dict[str, Any]:
    groups = [{"name": g, "members": [f"{g}-master", f"{g}-slave"]} for g in (A, B)]
    nodes = [{"name": f"{g}-{role}", "role": role, "group": g, "addr": f"127.0.0.1:{port}"}
             for g, base in ((A, 10911), (B, 10921)) for role, port in (("master", base), ("slave", base + 1000))]
    return {"backend": "local", "version": "4.9.1", "cluster_name": "DefaultCluster", "broker_name": A,
            "groups": groups, "nodes": nodes}


def two_group_run(root: Path, run_id: str = "two-groups") -> tuple[Path, Answers]:
    """The run of the module docstring; its answers in `ANSWERS` and `MEASURED`."""
    b = RunBuilder(root, run_id)
    seq = 0
    for t in range(0, 16000, 10):
        if PAUSE[0] <= t < PAUSE[1]:
            continue
        phase = next(name for name, lo, hi in PHASES if lo <= t < hi)
        on_a = _on_a(t)
        busy = on_a and VERIFIED <= t < REVERT
        b.send(worker="w1", seq=seq, start_ms=t, queue_ms=0.0, phase=phase, broker=A if on_a else B,
               service_ms=210.0 if busy else 2.0 if on_a else 4.0,
               outcome=c.MQ_BROKER_EXCEPTION if busy else c.SEND_OK, response_code=2 if busy else 0,
               remark=BUSY if busy else None)
        seq += 1
    for t in (13_005, 13_015):
        b.send(worker="w1", seq=seq, start_ms=t, queue_ms=0.0, phase="healed", broker=None, service_ms=1.0,
               outcome=c.MQ_CLIENT_EXCEPTION, remark=NONE_ROUTE)
        seq += 1
    _standard_events(b, PHASES, readback=False)
    for ms, action, status in ((APPLY, "apply", "started"), (APPLY + 100, "apply", "ok"),
                               (VERIFIED, "verify", "ok"), (REVERT, "revert", "started"),
                               (REVERTED, "revert", "ok")):
        b.event(ms, "fault", fault_id="slow-a", kind="disk_throttle", target="broker-a/master", action=action,
                status=status)
    b.events.sort(key=lambda e: e["wall_ns"])
    b.answers.numbers = {"transitions": {"slow-a apply": (APPLY, VERIFIED), "slow-a revert": (REVERT, REVERTED)}}
    scenario = {"name": "two-groups", "cluster": {"groups": 2},
                "phases": [{"name": n, "duration_s": (e - s) / 1000} for n, s, e in PHASES], "expect": EXPECT}
    return b.write(scenario, _cluster()), b.answers

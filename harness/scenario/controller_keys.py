"""The controller-mode keys of `cluster:` (`mode`, `controllers`, `slaves`, `controller`): which values are allowed
and which combinations are refused, each in one line naming the key and the allowed values. Controller mode
(RocketMQ 5's RIP-44 automatic failover) needs a 5.x version; its controllers are the one embedded in the name server
(`enableControllerInNamesrv`) or a DLedger group of three (two would lose its majority with either one); the roles
change during a run, so the `master` / `slave` broker.conf sections have no node to go to."""
from __future__ import annotations

from typing import Any

from harness.scenario.schema import at

CONTROLLERS_ALLOWED = "embedded (in the name server), 3 (standalone controllers)"
CONTROLLER_BACKENDS = ("local", "ssh", "compose")
CONTROLLER_LEADER = "controller-leader"
"""The fault target naming the standalone controller that leads the DLedger group when the fault is applied."""


def controllers_value(v: Any) -> Any:
    """`embedded` or 3 (also written "3"); anything else refused with the allowed values."""
    if v == "embedded" or (v == 3 and not isinstance(v, bool)) or v == "3":
        return "embedded" if v == "embedded" else 3
    why = " (a group of 2 loses its majority when either dies)" if v in (2, "2") else ""
    raise ValueError(f"{v!r} is not allowed{why}; allowed: {CONTROLLERS_ALLOWED}")


def check_mode(cluster: Any) -> None:
    """Refuse what controller mode cannot run, and controller keys outside controller mode."""
    if cluster.mode == "master_slave":
        if cluster.slaves != 1:
            raise at(("slaves",), "mode master_slave has one slave; allowed: 1, or mode controller for 2")
        if cluster.controllers != "embedded":
            raise at(("controllers",), "applies to mode controller only; allowed: mode controller, or no controllers")
        if cluster.controller:
            raise at(("controller",), "applies to mode controller only; allowed: mode controller, or no controller")
        return
    if not cluster.version.startswith("5."):
        raise at(("mode",), f"controller mode needs RocketMQ 5.x but cluster.version is {cluster.version}; allowed: "
                            "master_slave, or mode controller with a version 5.0.x to 5.3.x")
    if cluster.backend not in CONTROLLER_BACKENDS:
        raise at(("mode",), f"controller mode runs on backend {', '.join(CONTROLLER_BACKENDS)} so far "
                            f"(cluster.backend is {cluster.backend}); allowed: master_slave, or backend "
                            f"{', '.join(CONTROLLER_BACKENDS)}")
    for section in ("master", "slave"):
        if getattr(cluster.broker, section):
            raise at(("broker", section), "in controller mode the controller gives the roles, so no node is the "
                                          f"{section} for good; allowed: broker.common")
    if cluster.ha_relay == "always":
        raise at(("ha_relay",), "the HA relay is not placed in controller mode; allowed: auto, never")


def check_controller_targets(scenario: Any, shift: int) -> None:
    """`controller-leader` needs standalone controllers (`mode: controller`, `controllers: 3`)."""
    c = scenario.cluster
    if c.mode == "controller" and c.controllers == 3:
        return
    for pi, phase in enumerate(scenario.phases):
        for fi, f in enumerate(phase.faults):
            if f.target == CONTROLLER_LEADER:
                now = f"mode {c.mode}" if c.mode != "controller" else f"controllers {c.controllers}"
                raise at(("phases", pi - shift, "faults", fi, "target"),
                         f"{CONTROLLER_LEADER} is one of three standalone controllers, but the cluster has {now}; "
                         "allowed: namesrv, master, slave, or mode controller with controllers: 3")

"""The role sampler of a controller-mode run (one per broker set): every `PERIOD_S` it asks the controller for the set's
SyncStateSet (master, master epoch, in-sync replicas) and the name server for the topic's route (the broker at
brokerId 0), and writes a `roles` event to `events.jsonl` each time the answer changes, with the moment each answer came
(`controller_ns`, `route_ns`: one look asks one after the other). The analysis reads the
failover figures from these events (`analysis.failover`): when the controller named another master, when the route
did."""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from harness import brokerclient
from harness.backends.controller_roles import ControllerRoles

PERIOD_S = 0.1


class RoleSampler:
    def __init__(self, roles: ControllerRoles, namesrv_addr: str, topic: str, emit: Callable[..., Any],
                 group: str | None = None) -> None:
        self.roles = roles
        self.group = group
        """With several broker sets: the set sampled, in every event (`group`); its route entry only."""
        self.namesrv_addr = namesrv_addr
        self.topic = topic
        self.emit = emit
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"role-sampler-{group or roles.broker_name}",
                                        daemon=True)
        self.samples = 0

    def sample(self) -> tuple[dict[str, Any], dict[str, int]]:
        """(what the controller and the name server said, when each answered: `controller_ns`, `route_ns`)."""
        info = self.roles.sync_state()
        controller_ns = time.time_ns()
        route = brokerclient.route(self.namesrv_addr, self.topic)
        route_ns = time.time_ns()
        route_master = next((b.broker_addrs.get(0) for b in (route.broker_datas if route else ())
                             if b.broker_addrs.get(0) and b.broker_name == self.roles.broker_name), None)
        said = {"master": self.roles.node_of(info.master_address) if info else None,
                "master_epoch": info.master_epoch if info else None,
                "sync_state_set": sorted(filter(None, (self.roles.node_of(r.broker_address)
                                                       for r in info.in_sync_replicas))) if info else None,
                "route_master": self.roles.node_of(route_master)}
        return said, {"controller_ns": controller_ns, "route_ns": route_ns}

    def _loop(self) -> None:
        last: dict[str, Any] | None = None
        while not self._stop.wait(PERIOD_S):
            try:
                now, when = self.sample()
            except Exception:  # noqa: BLE001 - a sampler never ends the run; the gap shows in the events
                continue
            self.samples += 1
            if now != last:
                self.emit("roles", **now, **when, **({"group": self.group} if self.group else {}))
                last = now

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

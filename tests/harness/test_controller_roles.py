"""Controller mode's role targets (issue 26): `master` / `slave` resolve, when a fault is applied, to the node that
holds the role then; a role no node holds is refused in one line before anything is done, and the fault's events
name both the role (target) and the node."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from harness.backends.controller_roles import ControllerRoles, RoleNotHeld
from harness.faultdriver import FaultDriver
from harness.scenario import FaultSpec
from remoting.controller_bodies import ReplicaIdentity, ReplicasInfo

ADDRS = {"broker-0": "127.0.0.1:1", "broker-1": "127.0.0.1:2"}


class FixedRoles(ControllerRoles):
    """The controller's answer given, not asked."""

    def __init__(self, master: str | None, alive: set[str]) -> None:
        super().__init__([], "broker-a", ADDRS, lambda n: n in alive, admin=None)  # type: ignore[arg-type]
        self.answer = ReplicasInfo(1, ADDRS.get(master or ""), 2, 2,
                                   [ReplicaIdentity("broker-a", 1, ADDRS[n]) for n in sorted(alive)])

    def sync_state(self) -> ReplicasInfo | None:
        return self.answer


def test_roles_resolve_to_the_holder_now() -> None:
    roles = FixedRoles("broker-1", {"broker-0", "broker-1"})
    assert roles.resolve("master") == "broker-1"
    assert roles.resolve("slave") == "broker-0"
    assert roles.resolve("namesrv") == "namesrv"


@pytest.mark.parametrize("master, alive, role", [
    ("broker-1", {"broker-1"}, "slave"),   # the old master is dead: nobody is a slave
    ("broker-0", {"broker-1"}, "master"),  # the controller's master is dead and not replaced yet
])
def test_a_role_nobody_holds_is_one_line_and_applies_nothing(master: str, alive: set[str], role: str) -> None:
    roles = FixedRoles(master, alive)
    applied: list[str] = []
    target = SimpleNamespace(control=SimpleNamespace(fault_runner=lambda spec, emit: applied.append(spec.id)))
    driver = FaultDriver({n: target for n in ADDRS}, None, lambda e: None, roles.resolve)
    with pytest.raises(RoleNotHeld) as err:
        driver.apply(FaultSpec(id="k", kind="kill", target=role))
    message = str(err.value)
    assert "\n" not in message and f"no node holds the {role} role" in message and "allowed:" in message
    assert applied == [] and driver.active == []


def test_the_fault_events_name_the_role_and_the_node() -> None:
    events: list[dict] = []

    class Fault:
        def __init__(self, emit) -> None:
            self.emit = emit

        def apply(self) -> dict:
            self.emit({"event": "fault", "target": "broker-1", "action": "apply", "status": "ok"})
            return {}

        def verify(self) -> dict:
            return {}

    targets = {n: SimpleNamespace(control=SimpleNamespace(fault_runner=lambda spec, emit: Fault(emit)))
               for n in ADDRS}
    driver = FaultDriver(targets, None, events.append, FixedRoles("broker-1", set(ADDRS)).resolve)
    driver.apply(FaultSpec(id="k", kind="kill", target="master"))
    assert events == [{"event": "fault", "target": "master", "node": "broker-1", "action": "apply", "status": "ok"}]

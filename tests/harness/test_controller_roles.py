"""Controller mode's role targets (issue 26): `master` / `slave` resolve, when a fault is applied, to the node that
holds the role then; a role no node holds is refused in one line before anything is done, and the fault's events
name both the role (target) and the node."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.backends.controller_roles import ControllerRoles, RoleNotHeld
from harness.faultdriver import FaultDriver
from harness.scenario import FaultSpec
from remoting.controller_bodies import ReplicaIdentity, ReplicasInfo

REPO_SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
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


class LeaderAnswers:
    """A controller admin whose controllers each name `leader` (an address) as their DLedger group's leader."""

    def __init__(self, leader: str | None, silent: set[str] = frozenset()) -> None:
        self.leader, self.silent, self.asked = leader, silent, []

    def get_controller_metadata(self, addr: str, timeout_ms: float) -> SimpleNamespace:
        self.asked.append(addr)
        if addr in self.silent:
            raise OSError("connection refused")
        return SimpleNamespace(leader_address=self.leader)


CONTROLLERS = {"127.0.0.1:7": "controller-0", "127.0.0.1:8": "controller-1", "127.0.0.1:9": "controller-2"}


def _leader_roles(answers: LeaderAnswers, alive: set[str]) -> ControllerRoles:
    return ControllerRoles(list(CONTROLLERS), "broker-a", ADDRS, lambda n: n in alive, CONTROLLERS,
                           admin=answers)  # type: ignore[arg-type]


def test_controller_leader_resolves_to_the_leader_a_live_controller_names() -> None:
    answers = LeaderAnswers("127.0.0.1:9", silent={"127.0.0.1:7"})
    roles = _leader_roles(answers, set(CONTROLLERS.values()))
    assert roles.resolve("controller-leader") == "controller-2"
    assert answers.asked == ["127.0.0.1:7", "127.0.0.1:8"]  # the first that answers is enough


@pytest.mark.parametrize("leader, alive", [
    (None, {"controller-1", "controller-2"}),            # no leader elected yet
    ("127.0.0.1:7", {"controller-1", "controller-2"}),   # the named leader is dead (a stale answer)
])
def test_no_controller_leader_is_one_line(leader: str | None, alive: set[str]) -> None:
    with pytest.raises(RoleNotHeld) as err:
        _leader_roles(LeaderAnswers(leader), alive).resolve("controller-leader")
    message = str(err.value)
    assert "\n" not in message and "no controller is the DLedger group's leader" in message
    assert "controller-1, controller-2" in message


def test_controller_leader_needs_three_standalone_controllers(tmp_path) -> None:
    from harness.scenario import load_scenarios
    from harness.scenario.reader import SourceError

    text = (REPO_SCENARIOS / "master-killed-controller.yaml").read_text()
    assert "controllers: embedded" in text and "target: master" in text
    path = tmp_path / "embedded.yaml"
    path.write_text(text.replace("target: master", "target: controller-leader"))
    with pytest.raises(SourceError) as err:
        load_scenarios(path)
    assert "controller-leader" in str(err.value) and "controllers embedded" in str(err.value)
    path.write_text(text.replace("target: master", "target: controller-leader")
                    .replace("controllers: embedded", "controllers: 3"))
    assert load_scenarios(path)[0].phases[2].faults[0].target == "controller-leader"


def test_a_phases_roles_are_resolved_before_its_first_fault() -> None:
    """Killing the controller leader first must not leave the master unresolvable for the phase's next fault."""
    answers = LeaderAnswers("127.0.0.1:8")
    alive = set(CONTROLLERS.values()) | set(ADDRS)

    class Roles(ControllerRoles):
        def master(self) -> str | None:
            return "broker-0" if "controller-1" in alive else None  # the leader dead: nobody to ask

    def kill(spec, emit) -> SimpleNamespace:  # every fault "kills" the leader: the master's answer goes with it
        return SimpleNamespace(apply=lambda: alive.discard("controller-1"), verify=dict)

    roles = Roles(list(CONTROLLERS), "broker-a", ADDRS, lambda n: n in alive, CONTROLLERS, admin=answers)
    targets = {n: SimpleNamespace(control=SimpleNamespace(fault_runner=kill))
               for n in (*CONTROLLERS.values(), *ADDRS)}
    driver = FaultDriver(targets, None, lambda e: None, roles.resolve)
    specs = [FaultSpec(id="a", kind="kill", target="controller-leader"),
             FaultSpec(id="b", kind="kill", target="master")]
    nodes = driver.nodes_of(specs)
    assert nodes == ["controller-1", "broker-0"]
    for spec, node in zip(specs, nodes, strict=True):
        driver.apply(spec, node)
    assert [a.spec.id for a in driver.active] == ["a", "b"] and "controller-1" not in alive


def test_the_consumers_ask_the_master_of_the_moment_first() -> None:
    """Consumer admin calls (listing, GET_CONSUME_STATS) go to the broker that holds the master role then."""
    from harness.backends.controller_mode import ControllerMode

    def role_addrs(master: str | None) -> list[str]:
        mode = ControllerMode(SimpleNamespace(topology=SimpleNamespace(controllers=()), broker_nodes=tuple(ADDRS),
                                              broker_addrs=ADDRS))
        mode.roles = {"broker-a": FixedRoles(master, set(ADDRS))}  # type: ignore[dict-item]
        return mode.role_addrs()

    assert role_addrs("broker-1") == [ADDRS["broker-1"], ADDRS["broker-0"]]
    assert role_addrs("broker-0") == [ADDRS["broker-0"], ADDRS["broker-1"]]
    assert role_addrs(None) == [ADDRS["broker-0"], ADDRS["broker-1"]]

"""Checks of a validated scenario against the rest of the system: the faults registry (kind, parameters, which
nodes a fault can target), the client profiles of `remoting`, the broker.conf lint of the chosen version, and
sizes that cannot work together (a store smaller than two commitlog files)."""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from harness.scenario.cluster import BROKER_NODES
from harness.scenario.consumers import is_consumer_target
from harness.scenario.lint import lint_scenario
from harness.scenario.model import Scenario
from harness.scenario.reader import Marks, SourceError
from harness.scenario.schema import first_error

STORE_FAULTS = ("readonly_fs", "disk_freeze", "disk_throttle")
"""Faults that act on a node's store: only brokers have one."""
RELAY_FAULTS = ("ha_link",)
STORE_HEADROOM = 16 * 1024 * 1024
DEFAULT_MAPPED_FILE_SIZE = 1024 * 1024 * 1024
PLACEHOLDER_NAMESRV = "127.0.0.1:9876"
"""The real address is known once the cluster is up; the check needs a well-formed one."""


def check_scenario(scenario: Scenario, marks: Marks) -> None:
    """Raise `SourceError` for the first thing in `scenario` the system cannot do."""
    _check_faults(scenario, marks)
    _check_clients(scenario, marks)
    _check_load(scenario, marks)
    _check_search(scenario, marks)
    lint_scenario(scenario, marks)
    _check_store(scenario, marks)
    _check_hosts(scenario, marks)


def fault_classes() -> dict[str, Any]:
    from faults.registry import FAULTS
    return dict(FAULTS)


def client_profiles() -> tuple[str, ...]:
    from remoting import profiles
    return tuple(profiles.PROFILES)


def _check_faults(scenario: Scenario, marks: Marks) -> None:
    classes = fault_classes()
    for pi, fault in scenario.faults:
        path: tuple[str | int, ...] = ("phases", scenario.source_phase(pi), "faults",
                                       scenario.phases[pi].faults.index(fault))
        if fault.kind not in classes:
            raise marks.error(path + ("kind",), f"unknown fault {fault.kind!r}; allowed: {', '.join(sorted(classes))}")
        cls = classes[fault.kind]
        params_model: type[BaseModel] | None = getattr(cls, "Params", None)
        if params_model is not None:
            try:
                params_model.model_validate(fault.params)
            except ValidationError as err:
                raise first_error(err, marks, path + ("params",)) from None
        roles = tuple(getattr(cls, "target_roles", ()) or (BROKER_NODES if fault.kind in STORE_FAULTS else ()))
        role = "consumer" if is_consumer_target(fault.target) else fault.role
        if roles and role not in roles:
            need = "a node with a store" if fault.kind in STORE_FAULTS else f"a {' or '.join(roles)} target"
            raise marks.error(path + ("target",), f"fault {fault.kind} cannot act on {fault.target!r} "
                                                  f"(it needs {need}); allowed: {', '.join(roles)}")
        if fault.kind in RELAY_FAULTS and scenario.cluster.mode == "controller":
            raise marks.error(path + ("kind",), "fault ha_link needs the HA relay, which is not placed in controller "
                                                "mode; allowed: the other faults, or cluster.mode master_slave")
        if fault.kind in RELAY_FAULTS and several_groups(scenario):
            raise marks.error(path + ("kind",), "fault ha_link's relay is placed with one broker group so far; "
                                                "allowed: the other faults, or cluster.groups 1")
        if fault.kind in RELAY_FAULTS and scenario.cluster.ha_relay == "never":
            raise marks.error(path + ("kind",), "fault ha_link needs the HA relay; cluster.ha_relay is 'never'; "
                                                "allowed: auto, always")


def several_groups(scenario: Scenario) -> bool:
    from harness.topology import group_names

    return len(group_names(scenario.cluster)) > 1


def _check_clients(scenario: Scenario, marks: Marks) -> None:
    profiles = client_profiles()
    for i, c in enumerate(scenario.load.clients):
        if c.profile not in profiles:
            raise marks.error(("load", "clients", i, "profile"),
                              f"unknown client profile {c.profile!r}; allowed: {', '.join(profiles)}")
    for pi, phase in enumerate(scenario.phases):
        if phase.rate is not None and not any(scenario.load.model_of(c) == "open" for c in scenario.load.clients):
            raise marks.error(("phases", scenario.source_phase(pi), "rate"),
                              "a phase rate applies to open-model clients and the load has none")


def _check_load(scenario: Scenario, marks: Marks) -> None:
    """The load section as the load generator will take it (`loads.spec.LoadSpec`)."""
    from harness.scenario.loadplan import load_spec
    from loads.spec import SpecError

    try:
        load_spec(scenario, PLACEHOLDER_NAMESRV)
    except SpecError as err:
        problem = str(err).split(": load: ", 1)[-1]
        raise marks.error(("load",), f"the load generator refuses it: {problem}") from None


def _check_search(scenario: Scenario, marks: Marks) -> None:
    """A search moves `load.rate`, the total of the open-model clients that take a share of it."""
    for i, phase in enumerate(scenario.phases):
        if phase.search is None:
            continue
        path: tuple[str | int, ...] = ("phases", scenario.source_phase(i), "search")
        if scenario.load.rate is None:
            raise marks.error(path, "a search moves load.rate, and the load has none; allowed: load.model open "
                                    "with load.rate (clients with a share of it, not their own rate)")
        own = [c.name for c in scenario.load.clients if c.rate is not None]
        if own:
            raise marks.error(path, f"client {own[0]!r} has its own rate, which a search cannot move; allowed: "
                                    "clients with a share of load.rate")
        if phase.search.bounds.lag_max is not None and not scenario.consumers.groups:
            raise marks.error(path + ("bounds", "lag_max"), "bounds a consumer lag and the scenario has no consumer "
                                                            "groups; allowed: consumers, or no lag_max")


def _check_hosts(scenario: Scenario, marks: Marks) -> None:
    """Backend ssh: the inventory reads, and every host the scenario places something on is in it."""
    if scenario.cluster.backend != "ssh" or scenario.cluster.hosts is None:
        return  # the inventory comes at run time (--hosts FILE), checked then
    from harness.hosts.inventory import inventory_of

    try:
        inventory = inventory_of(scenario.cluster.hosts)
    except SourceError as err:
        raise marks.error(("cluster", "hosts"), f"inventory {err.one_line()}") from None
    places = [(("cluster", "placement", n), w.partition(":")[0]) for n, w in scenario.cluster.placement.items()]
    places += [(("load", "hosts", i), h) for i, h in enumerate(scenario.load.hosts)]
    for path, host in places:
        if host not in inventory.hosts:
            raise marks.error(path, f"host {host!r} is not in the inventory ({inventory.source}); allowed: "
                                    f"{', '.join(sorted(inventory.hosts))}")


def _check_store(scenario: Scenario, marks: Marks) -> None:
    for node in BROKER_NODES:
        conf = scenario.cluster.broker.for_node(node)
        mapped = conf.get("mappedFileSizeCommitLog", DEFAULT_MAPPED_FILE_SIZE)
        if isinstance(mapped, int) and scenario.cluster.store_size < 2 * mapped + STORE_HEADROOM:
            need = (2 * mapped + STORE_HEADROOM + 1024 * 1024 - 1) // (1024 * 1024)
            raise marks.error(("cluster", "store_size"),
                              f"the {node}'s store holds fewer than two commitlog files of {mapped} bytes "
                              f"(mappedFileSizeCommitLog); allowed: at least {need}MiB")

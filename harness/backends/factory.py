"""The backend of a run, from `cluster.backend`: `local` (processes on this machine), `compose` (containers of
compose/rocketmq-*.yml) or `ssh` (processes on an inventory's hosts); one class each, for both modes. `with_backend` applies the command line's `--backend` / `--image` / `--program` to a scenario (checked
by the scenario schema again); `check` says, before anything is started, whether the backend can run here."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from harness.scenario import ClusterSpec, Scenario, problem_text


class BackendUnavailable(RuntimeError):
    """The chosen backend cannot run here, or the override does not fit the scenario (one line)."""


def with_backend(scenario: Scenario, backend: str | None, image: str | None, program: str | None = None,
                 hosts: str | None = None) -> Scenario:
    """The scenario with `cluster.backend` / `.image` / `.program` / `.hosts` (an inventory file) replaced (None keeps
    the file's)."""
    if hosts is not None:
        hosts = str(Path(hosts).resolve())
    changes: dict[str, Any] = {k: v for k, v in (("backend", backend), ("image", image), ("program", program),
                                                 ("hosts", hosts)) if v is not None}
    load_hosts = None
    if (backend or scenario.cluster.backend) == "ssh" and not (hosts or scenario.cluster.hosts):
        raise BackendUnavailable("backend ssh needs an inventory of hosts: give --hosts FILE (Ansible YAML) or "
                                 "cluster.hosts")
    if (backend or scenario.cluster.backend) == "ssh" and not scenario.cluster.placement:
        from harness.hosts.inventory import inventory_of, placement_from_groups
        from harness.scenario import SourceError
        from harness.topology import Topology

        try:
            placement, load_hosts = placement_from_groups(inventory_of(hosts or scenario.cluster.hosts),
                                                          Topology.of(scenario.cluster))
        except SourceError as err:
            raise BackendUnavailable(err.one_line()) from None
        changes["placement"] = placement
    if not changes:
        return scenario
    data = {**scenario.cluster.model_dump(mode="json", exclude_none=True), **changes}
    try:
        cluster = ClusterSpec.model_validate(data)
    except ValidationError as err:
        first = err.errors(include_url=False)[0]
        loc = [*first["loc"], *((first.get("ctx") or {}).get("path") or [])]
        key = ".".join(str(x) for x in loc)
        raise BackendUnavailable(f"cluster{'.' + key if key else ''}: {problem_text(first)}") from None
    update: dict[str, Any] = {"cluster": cluster}
    if load_hosts and not scenario.load.hosts:
        update["load"] = scenario.load.model_copy(update={"hosts": load_hosts})
    return scenario.model_copy(update=update)


def check(scenario: Scenario) -> None:
    """Raise `BackendUnavailable` when the scenario's backend cannot start here (nothing is started)."""
    if scenario.cluster.backend == "compose":
        from harness.backends.compose.image import ComposeSetupError, check_setup

        try:
            check_setup(scenario.cluster)
        except ComposeSetupError as err:
            raise BackendUnavailable(str(err)) from None
        return
    if scenario.cluster.backend == "ssh":
        from harness.backends.ssh.backend import check_hosts
        from harness.hosts.deploy import HostError
        from harness.hosts.ssh import SshError
        from harness.scenario import SourceError

        try:
            check_hosts(scenario)
        except SourceError as err:
            raise BackendUnavailable(err.one_line()) from None
        except (HostError, SshError) as err:
            raise BackendUnavailable(str(err)) from None
        return
    from harness.backends.programs import Program, ProgramError

    try:
        Program.choose(scenario.cluster.program, scenario.cluster.version)
    except ProgramError as err:
        raise BackendUnavailable(str(err)) from None


def make_backend(scenario: Scenario, rd: Any, journal: Any, state_dir: Path) -> Any:
    """A `LocalBackend`, `ComposeBackend` or `SshBackend` for the run, in either mode (its `mode` says what differs;
    nothing is started until its `up`)."""
    if scenario.cluster.backend == "compose":
        from harness.backends.compose.backend import ComposeBackend

        return ComposeBackend(scenario, rd, journal, state_dir)
    if scenario.cluster.backend == "ssh":
        from harness.backends.ssh.backend import SshBackend

        return SshBackend(scenario, rd, journal, state_dir)
    from harness.backends.local.backend import LocalBackend

    return LocalBackend(scenario, rd, journal, state_dir)

"""Undo operations on Docker objects, as data (see `faults.undo`): `docker_unpause`, `docker_update` (memory and swap
limits back), `compose_down` (a compose project's containers, networks and volumes), `netns_holder_remove` (the
container whose network namespace a compose run's containers share). Each is idempotent: a
container that is gone, or already in the wanted state, is fine. An engine that does not answer is an error, so the
journal entry stays open and a later `rmq-chaos cleanup` finishes the job."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from faults.docker import engine
from faults.errors import FaultUnavailable, ToolError

PROJECT_LABEL = "com.docker.compose.project"
DOWN_TIMEOUT_S = 10


def op_docker_unpause(op: dict, ctx: Any) -> str:
    ct = engine.container_or_none(op["container"])
    if ct is None:
        return "container gone"
    ct.reload()
    if ct.status != "paused":
        return f"not paused ({ct.status})"
    try:
        ct.unpause()
    except Exception as e:  # noqa: BLE001 - the SDK's APIError, as one line
        raise engine.api_error(f"unpause {op['container']}", e) from e
    return "unpaused"


def op_docker_update(op: dict, ctx: Any) -> str:
    ct = engine.container_or_none(op["container"])
    if ct is None:
        return "container gone"
    try:
        ct.update(mem_limit=int(op["mem_limit"]), memswap_limit=int(op["memswap_limit"]))
    except Exception as e:  # noqa: BLE001 - the SDK's APIError, as one line
        raise engine.api_error(f"update {op['container']}", e) from e
    return f"memory {op['mem_limit']}, memory+swap {op['memswap_limit']}"


def op_compose_down(op: dict, ctx: Any) -> str:
    """`docker compose -p <project> down -v --remove-orphans`, then whatever still carries the project's label
    (containers, networks, volumes) is removed through the SDK."""
    project = op["project"]
    notes = []
    try:
        engine.run_compose(["-p", project, "down", "-v", "--remove-orphans", "-t",
                            str(int(op.get("timeout_s", DOWN_TIMEOUT_S)))], env=op.get("env"))
        notes.append("compose down")
    except FaultUnavailable:
        notes.append("no compose binary")
    client = engine.client()
    label = {"label": f"{PROJECT_LABEL}={project}"}
    removed = 0
    for ct in client.containers.list(all=True, filters=label):
        _remove(lambda c=ct: c.remove(force=True, v=True), f"remove container {ct.name}")
        removed += 1
    for net in client.networks.list(filters=label):
        _remove(net.remove, f"remove network {net.name}")
        removed += 1
    for vol in client.volumes.list(filters=label):
        _remove(lambda v=vol: v.remove(force=True), f"remove volume {vol.name}")
        removed += 1
    return ", ".join(notes) + (f"; removed {removed} left-over object(s)" if removed else "; nothing left")


def op_netns_holder_remove(op: dict, ctx: Any) -> str:
    """Remove a compose run's network namespace holder (`harness/backends/compose/netns.py`), unless running
    containers still share its namespace: then this fails and the entry stays open for a later clean-up (their own
    run's `compose_down`, newer in the journal, normally removed them first)."""
    ct = engine.container_or_none(op["container"])
    if ct is None:
        return "container gone"
    modes = {f"container:{ct.id}", f"container:{ct.name}", f"container:{ct.id[:12]}"}
    users = [c.name for c in engine.client().containers.list(filters={"status": "running"})
             if (c.attrs.get("HostConfig") or {}).get("NetworkMode") in modes]
    if users:
        raise ToolError(f"network namespace holder {ct.name} is still used by running containers "
                        f"{', '.join(sorted(users))}")
    _remove(lambda: ct.remove(force=True), f"remove container {ct.name}")
    return f"removed {ct.name}"


def _remove(fn: Callable[[], Any], what: str) -> None:
    import docker

    try:
        fn()
    except docker.errors.NotFound:
        pass
    except Exception as e:  # noqa: BLE001 - the SDK's APIError, as one line
        raise engine.api_error(what, e) from e


DOCKER_OPS: dict[str, Callable[[dict, Any], str]] = {
    "docker_unpause": op_docker_unpause, "docker_update": op_docker_update, "compose_down": op_compose_down,
    "netns_holder_remove": op_netns_holder_remove,
}

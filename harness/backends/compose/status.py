"""What `rmq-chaos cluster status` shows of a compose node: its container's name, state and health, from the
Docker API (never raises: an engine that does not answer is shown as such)."""
from __future__ import annotations


def container_status(container_id: str | None) -> str:
    if not container_id:
        return "-"
    from faults.docker import engine
    from faults.errors import FaultError

    try:
        ct = engine.container(container_id)
    except FaultError as err:
        return f"? ({err})"
    health = ct.attrs["State"].get("Health", {}).get("Status")
    return f"{ct.name} {ct.status}" + (f" ({health})" if health else "")

"""The second compose file of a run with several broker groups. `compose/rocketmq-<major>.yml` stays the file a user
reads and runs by hand (one group: `namesrv`, `master`, `slave`); for several groups the harness renders
`<work>/compose.groups.yml` beside the run's conf files and passes it as a second `-f`. Each member of the topology
(`broker-a-master`, `broker-a-slave`, `broker-b-master`, ...) is a service of its own that `extends` the checked-in
file's `master` or `slave` (image, command, network mode, cgroup parent, environment, stop grace, health-check timing
all come from there) and says only what is its own: its store, logs and conf (`volumes: !override`), its memory
limits, its health check on its own port, and what it waits for (`depends_on: !override`: a master its name server, a
slave its own group's master; the checked-in slave's `master` is not inherited). `up` then names the name server and
these services, so the checked-in `master` and `slave` are never started (their variables still resolve: they get the
first group's ports).

The file is plain YAML written as text (JSON values; PyYAML cannot write compose's `!override` tag), so `docker compose
-p <project> -f compose/rocketmq-4.yml -f <work>/compose.groups.yml --env-file <work>/compose.env ps` works by hand."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.backends.compose.layout import CONTAINER_STORE, ComposeLayout
from harness.topology import Member, Topology

GROUPS_FILE = "compose.groups.yml"
OVERRIDE = ("volumes", "depends_on")
"""Keys that replace the extended service's instead of merging with it (compose's `!override`)."""


def member_service(layout: ComposeLayout, base_file: Path, member: Member, depends_on: str,
                   extends: str | None = None) -> dict[str, Any]:
    """The service of one member, as the data written under its name; it extends the checked-in service `extends`
    (default the member's role: `master` or `slave`)."""
    mem, swap = layout.limits(member.node)
    conf_target = f"/home/rocketmq/rocketmq-{layout.version}/conf/broker.conf"
    probe = f"exec 3<>/dev/tcp/127.0.0.1/{layout.broker_ports[member.node][0]}"
    return {
        "extends": {"file": str(base_file.resolve()), "service": extends or member.role},
        "mem_limit": mem, "memswap_limit": swap,
        "volumes": [bind_mount(layout.store_dir(member.node), CONTAINER_STORE),
                    bind_mount(layout.log_dir(member.node), "/home/rocketmq/logs"),
                    bind_mount(layout.conf_file(member.node), conf_target)],
        "depends_on": {depends_on: {"condition": "service_healthy"}},
        "healthcheck": {"test": ["CMD", "bash", "-c", probe]},
    }


def render(layout: ComposeLayout, topology: Topology, base_file: Path) -> str:
    """The text of the groups file: one service per broker of the topology (master_slave mode)."""
    header = [f"# rendered by rmq-chaos for project {layout.project}: {len(topology.groups)} broker groups, each member",
              f"# a service extending {base_file.name}'s master or slave (harness/backends/compose/groups.py)"]
    services = {}
    for group in topology.groups:
        master = group.members[0].node
        for m in group.members:
            services[m.node] = member_service(layout, base_file, m, "namesrv" if m.role == "master" else master)
    return text(header, services)


def text(header: list[str], services: dict[str, dict[str, Any]]) -> str:
    """A compose file of `services` (JSON values, `OVERRIDE` keys tagged `!override`) under the comment lines
    `header`."""
    lines = [*header, "services:"]
    for name, svc in services.items():
        lines.append(f"  {name}:")
        for key, value in svc.items():
            tag = " !override" if key in OVERRIDE else ""
            if isinstance(value, list):
                lines += [f"    {key}:{tag}", *(f"      - {json.dumps(item)}" for item in value)]
            else:
                lines.append(f"    {key}:{tag} {json.dumps(value)}")
    return "\n".join(lines) + "\n"


def write(layout: ComposeLayout, topology: Topology, base_file: Path) -> Path:
    path = layout.work / GROUPS_FILE
    path.write_text(render(layout, topology, base_file), encoding="utf-8")
    return path


def bind_mount(source: Path, target: Path | str) -> dict[str, str]:
    return {"type": "bind", "source": str(source), "target": str(target)}

"""What the cluster *is*, computed once from the scenario and the same on every backend: the name server, the
controllers (5.x controller mode), and one or more broker groups (`broker-a`, `broker-b`, ...: a broker name each),
each with its members (node name, role, broker id, the broker.conf section that applies). A backend only places and
runs these nodes (a process here, a container, a process on a host).

Node names: with one group they are today's (`master`, `slave`; `broker-0`, `broker-1` in controller mode), so every
run, event, log directory and read-back of one group is unchanged; with several groups each member's name is its
group's name and its role (`broker-b-master`, `broker-b-slave`; `broker-b-0` in controller mode).

Targets: `namesrv`, `controller-<i>`, and per group `<group>/master`, `<group>/slave` (`<group>/broker-<i>` in
controller mode). With one group the bare `master`, `slave` (`broker-<i>`) keep their meaning; with several a bare
role is refused in one line (`Topology.check_target`)."""
from __future__ import annotations

import string
from dataclasses import dataclass
from typing import Any

ROLES = ("master", "slave")


class TopologyError(ValueError):
    """A target or placement that names no node of the topology (one line, with the allowed values)."""


@dataclass(frozen=True)
class Member:
    """One broker of a group."""

    node: str
    group: str
    role: str
    """`master` / `slave` (master_slave mode: fixed), `broker` (controller mode: the controller decides)."""
    index: int
    """0 for the master, 1.. for slaves (master_slave); the member's position in its broker set (controller)."""

    @property
    def broker_id(self) -> int:
        """`brokerId` in broker.conf: 0 master, 1 slave; -1 in controller mode (the controller assigns it)."""
        return -1 if self.role == "broker" else self.index

    @property
    def conf_section(self) -> str:
        """The `cluster.broker` section on top of `common`: the role (master_slave), none in controller mode."""
        return self.role if self.role in ROLES else "common"

    @property
    def local_name(self) -> str:
        """The member's name within its group: `master`, `slave`, `broker-<i>`."""
        return self.role if self.role in ROLES else f"broker-{self.index}"


@dataclass(frozen=True)
class Group:
    name: str
    members: tuple[Member, ...]

    def member(self, local_name: str) -> Member | None:
        return next((m for m in self.members if m.local_name == local_name), None)


@dataclass(frozen=True)
class Topology:
    mode: str
    groups: tuple[Group, ...]
    controllers: tuple[str, ...] = ()
    namesrv: str = "namesrv"

    @classmethod
    def of(cls, cluster: Any) -> Topology:
        """The topology of a scenario's `cluster:` section (already validated)."""
        names = group_names(cluster)
        single = len(names) == 1
        groups = []
        for g in names:
            if cluster.mode == "controller":
                members = tuple(Member(f"broker-{i}" if single else f"{g}-{i}", g, "broker", i)
                                for i in range(1 + cluster.slaves))
            else:
                members = tuple(Member(role if single else f"{g}-{role}", g, role, i) for i, role in enumerate(ROLES))
            groups.append(Group(g, members))
        controllers = tuple(f"controller-{i}" for i in range(3)) if cluster.mode == "controller" \
            and cluster.controllers == 3 else ()
        return cls(cluster.mode, tuple(groups), controllers)

    @property
    def single(self) -> bool:
        return len(self.groups) == 1

    @property
    def members(self) -> tuple[Member, ...]:
        return tuple(m for g in self.groups for m in g.members)

    @property
    def broker_nodes(self) -> tuple[str, ...]:
        return tuple(m.node for m in self.members)

    @property
    def node_order(self) -> tuple[str, ...]:
        """Start order: the name server, the controllers, then each group's members (master first)."""
        return (self.namesrv, *self.controllers, *self.broker_nodes)

    def member(self, node: str) -> Member:
        return next(m for m in self.members if m.node == node)

    def group(self, name: str) -> Group:
        return next(g for g in self.groups if g.name == name)

    def master_of(self, node: str) -> str | None:
        """The first member of a broker's group (its master in master_slave mode, the broker started first in
        controller mode); None for a node that is no broker."""
        member = next((m for m in self.members if m.node == node), None)
        return self.group(member.group).members[0].node if member else None

    def targets(self) -> list[str]:
        """Every target a fault may name (roles resolved when applied in controller mode)."""
        out = [self.namesrv, *self.controllers]
        for g in self.groups:
            locals_ = [*ROLES, *(m.local_name for m in g.members if m.role == "broker")] \
                if self.mode == "controller" else [m.local_name for m in g.members]
            out += [f"{g.name}/{n}" for n in locals_]
            if self.single:
                out += locals_
        return out

    def check_target(self, target: str) -> None:
        """TopologyError (one line) for a broker target that names no member: a bare role with several groups, an
        unknown group or member. Targets that are not brokers' (`namesrv`, controllers, consumers) pass."""
        group, sep, local = target.partition("/")
        if not sep:
            if _bare_member(target):
                if not self.single:
                    raise TopologyError(f"{target!r} is ambiguous with {len(self.groups)} broker groups; allowed: "
                                        f"{', '.join(f'{g.name}/{target}' for g in self.groups)}")
            return
        names = [g.name for g in self.groups]
        if group not in names:
            raise TopologyError(f"{target!r} names no broker group; allowed: {', '.join(names)} (as <group>/<role>)")
        allowed = [t.partition("/")[2] for t in self.targets() if t.startswith(f"{group}/")]
        if local not in allowed:
            raise TopologyError(f"{target!r}: group {group} has no {local!r}; allowed: "
                                f"{', '.join(f'{group}/{a}' for a in allowed)}")

    def split(self, target: str) -> tuple[Group | None, str]:
        """(the group a broker target names, its member or role name); (None, target) for other targets. A bare
        role or member means the only group's."""
        group, sep, local = target.partition("/")
        if sep:
            return self.group(group), local
        if self.single and _bare_member(target):
            return self.groups[0], target
        return None, target

    def static_node(self, target: str) -> str:
        """The node a target names when roles never move (master_slave mode; members named directly)."""
        group, local = self.split(target)
        if group is None:
            return target
        member = group.member(local)
        if member is None:
            raise TopologyError(f"{target!r} names no member of {group.name}")
        return member.node


def _bare_member(target: str) -> bool:
    """A broker target without its group: a role (`master`, `slave`) or a member of a broker set (`broker-<i>`)."""
    return target in ROLES or (target.startswith("broker-") and target[7:].isdigit())


def group_names(cluster: Any) -> list[str]:
    """`cluster.groups` as names: a count n gives `cluster.broker_name` (n = 1) or `broker-a`.. (n > 1)."""
    groups = cluster.groups
    if isinstance(groups, list):
        return list(groups)
    if groups == 1:
        return [cluster.broker_name]
    return [f"broker-{string.ascii_lowercase[i]}" for i in range(groups)]

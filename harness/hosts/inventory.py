"""The hosts of an `ssh` cluster, from an inventory in Ansible's YAML format, so the inventory operators already keep
works as it is:

    all:
      vars: {ansible_user: root, ansible_ssh_private_key_file: keys/id_ed25519}
      hosts:
        n1: {ansible_host: 10.0.0.11}
      children:
        brokers:
          hosts:
            n2: {ansible_host: 10.0.0.12}
            n3: {ansible_host: 10.0.0.13, ansible_port: 2222}

Groups nest (`children`); a host's variables are its groups' `vars` from the outermost group in, then its own. The
variables read: `ansible_host` (address; default the host's name), `ansible_port` (22), `ansible_user` (root),
`ansible_ssh_private_key_file` (relative to the inventory's directory), `ansible_become` / `ansible_become_user`
(run the agent through sudo), `ansible_python_interpreter` (the Python 3.11 that runs the agent; default `python3`),
and ours: `rmq_chaos_workdir` (the agent's work and state directory on that host; default
`/var/lib/rmq-chaos-agent`), `rmq_chaos_venv` (where the harness is installed there; default `<workdir>/venv`;
hosts sharing a filesystem may share one), `rmq_chaos_rocketmq_home` (a distribution there, for `program:
apache`). Other variables are kept and ignored.

Groups named `namesrv`, `master`, `slave` and `load` place a scenario's nodes and load workers on their hosts when
the scenario itself does not (`placement_from_groups`): one inventory then runs any scenario with `--hosts FILE`.
With several broker groups the n-th group's master goes on the n-th host of `master` (the same for `slave`); a
group named after a node (`broker-b-master`) places that node. In controller mode a broker set's first broker goes
where its master would, the others where its slave would, and standalone controllers on the hosts of `controller`
(else the name server's).

Bad input: `SourceError`, one line naming the file, the key path where the value was written (a group's `vars` or
the host) and what is allowed. The values that reach a command line are refused unless plain: a host name, address
or user starting with a letter or digit (never `-oProxyCommand=...`), a port of ASCII digits, an interpreter that is
a command name or an absolute path, and paths (`rmq_chaos_workdir`, `rmq_chaos_venv`, `rmq_chaos_rocketmq_home`)
that are absolute, of letters, digits and `/ . _ - + @`, without empty, `.` or `..` parts. The work directory and
the venv, which the harness makes and owns on the host, must moreover not be `/`, a system directory, a home
directory or under a kernel file system (`harness.agent.checks.path_problem`, which the host applies again to the
path as it resolves there), nor equal to or inside any host's venv (an install empties a venv of its own). The file
itself is read with bounded work (`load_marked`: size, depth, alias expansion).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.agent.checks import PATH_ALLOWED, PATH_MAX, path_form_problem, path_problem
from harness.scenario.reader import Marks, SourceError, load_marked, shorten

HOST_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}\Z")
ADDRESS_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,252}\Z")
PORT_RE = re.compile(r"[0-9]{1,5}\Z")
PYTHON_RE = re.compile(rf"(?:[A-Za-z0-9][A-Za-z0-9._+-]{{0,63}}|/[A-Za-z0-9/._+@-]{{0,{PATH_MAX}}})\Z")
NAME_ALLOWED = "a user name of letters, digits, '_', '.', '-', starting with a letter or digit"
ADDRESS_ALLOWED = "a host name or IP address of letters, digits, '.', ':', '_', '-', starting with a letter or digit"
PYTHON_ALLOWED = ("a command name such as python3.11, or an absolute path, of letters, digits and / . _ - + @ "
                  "(no '..' part)")
HOME_ALLOWED = "an absolute path of letters, digits and / . _ - + @ (no empty, '.' or '..' part)"
DEFAULT_WORKDIR = "/var/lib/rmq-chaos-agent"
DEFAULT_PYTHON = "python3"
GROUP_KEYS = ("hosts", "vars", "children")
MAX_DEPTH = 16


@dataclass(frozen=True)
class Host:
    """One host of the inventory, its variables resolved."""

    name: str
    address: str
    port: int = 22
    user: str = "root"
    key_file: str | None = None
    become: bool = False
    become_user: str = "root"
    python: str = DEFAULT_PYTHON
    workdir: str = DEFAULT_WORKDIR
    venv: str | None = None
    rocketmq_home: str | None = None
    groups: tuple[str, ...] = ()
    vars: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)

    @property
    def target(self) -> str:
        return f"{self.user}@{self.address}"

    @property
    def venv_dir(self) -> str:
        return self.venv or f"{self.workdir}/venv"


@dataclass(frozen=True)
class Inventory:
    source: str
    hosts: dict[str, Host]
    groups: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Each group's own hosts, in the order the inventory lists them."""

    def host(self, name: str, where: str) -> Host:
        """The host named `name` (a placement refers to it at `where`); one line when there is no such host."""
        if name not in self.hosts:
            raise SourceError(self.source, None, (), f"{where}: host {name!r} is not in the inventory; allowed: "
                                                     f"{', '.join(sorted(self.hosts)) or 'none (the inventory is empty)'}")
        return self.hosts[name]


def placement_from_groups(inventory: Inventory, topology: Any = None) -> tuple[dict[str, str], list[str]]:
    """(placement, load hosts) from the inventory's groups: a group named after a node (`broker-b-master`) places it
    on its first host; otherwise the role's group (`namesrv`, `master`, `slave`) does, the n-th broker group's
    member on its n-th host (wrapping round: two hosts in `master` and `slave` listed crosswise give the usual
    two-group cross deployment); `load` lists the load hosts. `topology`: the scenario's (`harness.topology`;
    None: one group of namesrv, master, slave)."""
    hosts_in = inventory.groups
    wanted = [("namesrv", "namesrv", 0)]
    if topology is None:
        wanted += [("master", "master", 0), ("slave", "slave", 0)]
    else:
        wanted += [(n, "controller", i) for i, n in enumerate(topology.controllers)]
        wanted += [(m.node, m.role if m.role != "broker" else ("master" if m.index == 0 else "slave"), i)
                   for i, g in enumerate(topology.groups) for m in g.members]
    placement = {}
    for node, role, i in wanted:
        members = hosts_in.get(node) or hosts_in.get(role) or (hosts_in.get("namesrv") if role == "controller"
                                                                else None) or []
        if members:
            placement[node] = members[0] if node in hosts_in else members[i % len(members)]
    return placement, list(hosts_in.get("load", ()))


def inventory_of(hosts: str | dict[str, Any] | None) -> Inventory:
    """The inventory a scenario's `cluster.hosts` names: a file, or the inventory itself (an inline mapping)."""
    if isinstance(hosts, dict):
        return parse_inventory(hosts, Marks("cluster.hosts"), "cluster.hosts", Path.cwd())
    if not hosts:
        raise SourceError("cluster.hosts", None, (), "no inventory: give cluster.hosts or --hosts FILE")
    return load_inventory(hosts)


def load_inventory(path: str | Path) -> Inventory:
    """Read and check an inventory file (Ansible YAML)."""
    data, marks = load_marked(path)
    return parse_inventory(data, marks, str(path), Path(path).resolve().parent)


def parse_inventory(data: Any, marks: Marks, source: str, base: Path) -> Inventory:
    """Hosts of an already-read inventory mapping (`base`: where relative key files are)."""
    if not isinstance(data, dict):
        raise marks.error((), "an inventory is a mapping of groups (Ansible's YAML format, e.g. all: {hosts: ...})")
    found: dict[str, _Seen] = {}
    listed: dict[str, list[str]] = {}
    for group, body in data.items():
        _walk(str(group), body, (), (group,), marks, found, 0, listed)
    if not found:
        raise marks.error((), "no host in the inventory; allowed: groups with hosts (all: {hosts: {n1: {...}}})")
    hosts = {name: _host(name, seen.vars(), seen.origins(), seen.groups, seen.path, marks, base)
             for name, seen in found.items()}
    _refuse_venv_overlaps(hosts, {name: seen.origins() for name, seen in found.items()},
                          {name: seen.path for name, seen in found.items()}, marks)
    return Inventory(source, hosts, {g: tuple(names) for g, names in listed.items()})


@dataclass
class _Seen:
    """A host as the walk finds it: where it was first listed, its groups, its groups' variables (each with the depth
    of the group that set it: a child group's value beats its parents' whatever the order they are listed in) and
    its own variables (which beat every group's), each with the key path where it was written."""

    path: tuple
    groups: list[str] = field(default_factory=list)
    group_vars: dict[str, tuple[int, Any, tuple]] = field(default_factory=dict)
    own: dict[str, tuple[Any, tuple]] = field(default_factory=dict)

    def vars(self) -> dict[str, Any]:
        return {**{k: v[1] for k, v in self.group_vars.items()}, **{k: v[0] for k, v in self.own.items()}}

    def origins(self) -> dict[str, tuple]:
        return {**{k: v[2] for k, v in self.group_vars.items()}, **{k: v[1] for k, v in self.own.items()}}


def _refuse_venv_overlaps(hosts: dict[str, Host], origins: dict[str, dict[str, tuple]], paths: dict[str, tuple],
                          marks: Marks) -> None:
    """A work directory or venv equal to or inside a venv (of any host: hosts may share a filesystem) other than a
    venv shared as it is: an install empties a venv of its own, which would take them with it."""
    for h in hosts.values():
        for key, mine in (("rmq_chaos_workdir", h.workdir), ("rmq_chaos_venv", h.venv_dir)):
            for other in hosts.values():
                venv = other.venv_dir
                if (key == "rmq_chaos_venv" and mine == venv) or not (mine == venv or mine.startswith(venv + "/")):
                    continue
                at = origins[h.name].get(key) or origins[h.name].get("rmq_chaos_workdir") or (*paths[h.name], key)
                raise marks.error(at, f"{mine!r} ({key} of host {h.name}) is {'' if mine == venv else 'inside '}the "
                                      f"venv of host {other.name} ({venv}), which an install empties; allowed: a "
                                      "directory outside every host's venv (rmq_chaos_venv, default <workdir>/venv)")


def _walk(group: str, body: Any, chain: tuple[tuple[int, dict[str, Any], tuple], ...], path: tuple, marks: Marks,
          found: dict[str, _Seen], depth: int, listed: dict[str, list[str]]) -> None:
    """Record the hosts of `group` and its children in `found` (and each group's hosts in the order listed in
    `listed`); `chain`: (depth, vars, where) of its parents."""
    if depth > MAX_DEPTH:
        raise marks.error(path, f"groups nested deeper than {MAX_DEPTH}")
    if body is None:
        return
    if not isinstance(body, dict):
        raise marks.error(path, f"a group is a mapping with keys {', '.join(GROUP_KEYS)}")
    unknown = [k for k in body if k not in GROUP_KEYS]
    if unknown:
        raise marks.error((*path, unknown[0]), f"unknown key; allowed: {', '.join(GROUP_KEYS)}")
    gvars = body.get("vars") or {}
    if not isinstance(gvars, dict):
        raise marks.error((*path, "vars"), "vars is a mapping of variable names to values")
    chain = (*chain, (depth, gvars, (*path, "vars")))
    hosts = body.get("hosts") or {}
    if not isinstance(hosts, dict):
        raise marks.error((*path, "hosts"), "hosts is a mapping of host names to their variables")
    for name, hvars in hosts.items():
        hpath = (*path, "hosts", name)
        if not isinstance(name, str) or not HOST_NAME_RE.match(name):
            raise marks.error(hpath, f"{name!r} is not a host name; allowed: letters, digits, '_', '.', '-'")
        if hvars is not None and not isinstance(hvars, dict):
            raise marks.error(hpath, "a host's value is a mapping of its variables (or empty)")
        seen = found.setdefault(name, _Seen(hpath))
        seen.groups.append(group)
        listed.setdefault(group, []).append(name)
        for gdepth, gv, gpath in chain:
            for k, value in gv.items():
                if k not in seen.group_vars or seen.group_vars[k][0] <= gdepth:
                    seen.group_vars[k] = (gdepth, value, (*gpath, k))
        seen.own.update({k: (value, (*hpath, k)) for k, value in (hvars or {}).items()})
    children = body.get("children") or {}
    if not isinstance(children, dict):
        raise marks.error((*path, "children"), "children is a mapping of group names to groups")
    for child, cbody in children.items():
        _walk(str(child), cbody, chain, (*path, "children", child), marks, found, depth + 1, listed)


def _host(name: str, v: dict[str, Any], origin: dict[str, tuple], groups: list[str], path: tuple, marks: Marks,
          base: Path) -> Host:
    def refuse(key: str, value: Any, why: str, allowed: str) -> SourceError:
        return marks.error(origin.get(key, (*path, key)), f"{shorten(repr(value))} {why}; allowed: {allowed}")

    def text(key: str, default: str | None, pattern: re.Pattern | None = None,
             allowed: str = "a plain name or path") -> str | None:
        value = v.get(key, default)
        if value is None:
            return None
        if not isinstance(value, str | int) or isinstance(value, bool) or (pattern and not pattern.match(str(value))):
            raise refuse(key, value, "is not allowed here", allowed)
        return str(value)

    def a_path(key: str, default: str | None, owned: bool = True) -> str | None:
        value = text(key, default, allowed=PATH_ALLOWED if owned else HOME_ALLOWED)
        if value is None:
            return None
        why = path_problem(value) if owned else path_form_problem(value)
        if why:
            raise refuse(key, value, why, PATH_ALLOWED if owned else HOME_ALLOWED)
        return value.rstrip("/") or "/"

    port = v.get("ansible_port", 22)
    if isinstance(port, bool) or not isinstance(port, int | str) or not PORT_RE.match(str(port)) \
            or not 0 < int(port) < 65536:
        raise refuse("ansible_port", port, "is not a port", "1-65535")
    become = v.get("ansible_become", False)
    if isinstance(become, str):
        become = become.lower() in ("true", "yes", "1")
    key = text("ansible_ssh_private_key_file", None)
    if key is not None:
        key = str((base / Path(key).expanduser()).resolve())
    python = text("ansible_python_interpreter", DEFAULT_PYTHON, PYTHON_RE, PYTHON_ALLOWED) or DEFAULT_PYTHON
    if python.startswith("/") and path_form_problem(python):
        raise refuse("ansible_python_interpreter", python, path_form_problem(python), PYTHON_ALLOWED)
    return Host(name=name, address=text("ansible_host", name, ADDRESS_RE, ADDRESS_ALLOWED) or name, port=int(port),
                user=text("ansible_user", "root", HOST_NAME_RE, NAME_ALLOWED) or "root", key_file=key,
                become=bool(become), become_user=text("ansible_become_user", "root", HOST_NAME_RE, NAME_ALLOWED) or "root",
                python=python, workdir=a_path("rmq_chaos_workdir", DEFAULT_WORKDIR) or DEFAULT_WORKDIR,
                venv=a_path("rmq_chaos_venv", None), rocketmq_home=a_path("rmq_chaos_rocketmq_home", None, owned=False),
                groups=tuple(groups), vars=dict(v))

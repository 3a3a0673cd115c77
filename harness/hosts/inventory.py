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
the scenario itself does not (`placement_from_groups`): one inventory then runs any scenario with `--hosts FILE`. Bad input: `SourceError`, one line naming the file, the key and what is allowed.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.scenario.reader import Marks, SourceError, load_marked

HOST_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")
ADDRESS_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,252}$")
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

    def host(self, name: str, where: str) -> Host:
        """The host named `name` (a placement refers to it at `where`); one line when there is no such host."""
        if name not in self.hosts:
            raise SourceError(self.source, None, (), f"{where}: host {name!r} is not in the inventory; allowed: "
                                                     f"{', '.join(sorted(self.hosts)) or 'none (the inventory is empty)'}")
        return self.hosts[name]


def placement_from_groups(inventory: Inventory) -> tuple[dict[str, str], list[str]]:
    """(placement, load hosts) from the groups `namesrv`, `master`, `slave` (the first host of each) and `load`."""
    placement = {}
    for node in ("namesrv", "master", "slave"):
        members = [h.name for h in inventory.hosts.values() if node in h.groups]
        if members:
            placement[node] = members[0]
    return placement, [h.name for h in inventory.hosts.values() if "load" in h.groups]


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
    found: dict[str, tuple[dict[str, Any], list[str], tuple]] = {}
    for group, body in data.items():
        _walk(str(group), body, {}, (group,), marks, found, 0)
    if not found:
        raise marks.error((), "no host in the inventory; allowed: groups with hosts (all: {hosts: {n1: {...}}})")
    hosts = {name: _host(name, hvars, groups, path, marks, base) for name, (hvars, groups, path) in found.items()}
    return Inventory(source, hosts)


def _walk(group: str, body: Any, inherited: dict[str, Any], path: tuple, marks: Marks,
          found: dict[str, tuple[dict[str, Any], list[str], tuple]], depth: int) -> None:
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
    merged = {**inherited, **gvars}
    hosts = body.get("hosts") or {}
    if not isinstance(hosts, dict):
        raise marks.error((*path, "hosts"), "hosts is a mapping of host names to their variables")
    for name, hvars in hosts.items():
        hpath = (*path, "hosts", name)
        if not isinstance(name, str) or not HOST_NAME_RE.match(name):
            raise marks.error(hpath, f"{name!r} is not a host name; allowed: letters, digits, '_', '.', '-'")
        if hvars is not None and not isinstance(hvars, dict):
            raise marks.error(hpath, "a host's value is a mapping of its variables (or empty)")
        before = found.get(name)
        own = {**(before[0] if before else {}), **merged, **(hvars or {})}
        found[name] = (own, [*(before[1] if before else []), group], before[2] if before else hpath)
    children = body.get("children") or {}
    if not isinstance(children, dict):
        raise marks.error((*path, "children"), "children is a mapping of group names to groups")
    for child, cbody in children.items():
        _walk(str(child), cbody, merged, (*path, "children", child), marks, found, depth + 1)


def _host(name: str, v: dict[str, Any], groups: list[str], path: tuple, marks: Marks, base: Path) -> Host:
    def text(key: str, default: str | None, pattern: re.Pattern | None = None) -> str | None:
        value = v.get(key, default)
        if value is None:
            return None
        if not isinstance(value, str | int) or isinstance(value, bool) or (pattern and not pattern.match(str(value))):
            raise marks.error((*path, key), f"{key}: {value!r} is not allowed here; allowed: a plain name or path")
        return str(value)

    port = v.get("ansible_port", 22)
    if isinstance(port, bool) or not isinstance(port, int | str) or not str(port).isdigit() \
            or not 0 < int(port) < 65536:
        raise marks.error((*path, "ansible_port"), f"ansible_port: {port!r} is not a port; allowed: 1-65535")
    become = v.get("ansible_become", False)
    if isinstance(become, str):
        become = become.lower() in ("true", "yes", "1")
    key = text("ansible_ssh_private_key_file", None)
    if key is not None:
        key = str((base / Path(key).expanduser()).resolve())
    return Host(name=name, address=text("ansible_host", name, ADDRESS_RE) or name, port=int(port),
                user=text("ansible_user", "root", HOST_NAME_RE) or "root", key_file=key, become=bool(become),
                become_user=text("ansible_become_user", "root", HOST_NAME_RE) or "root",
                python=text("ansible_python_interpreter", DEFAULT_PYTHON) or DEFAULT_PYTHON,
                workdir=text("rmq_chaos_workdir", DEFAULT_WORKDIR) or DEFAULT_WORKDIR,
                venv=text("rmq_chaos_venv", None), rocketmq_home=text("rmq_chaos_rocketmq_home", None),
                groups=tuple(groups), vars=dict(v))

"""Fixtures of the multi-host tests: four hosts (network namespaces under a parent namespace of the session's own,
each with a real OpenSSH sshd), a known_hosts file with their keys, and an inventory in Ansible's format whose
groups place the nodes (namesrv n1, master n2, slave n3, load n4). The hosts share this machine's filesystem, so
each has its own work directory, and they share one venv (`rmq_chaos_venv`): the harness is installed once per
session. Everything is ended at the session's end by name."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from netns_hosts import TestHosts

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "harness"))  # runsupport: reading a run directory back
NAMES = ("n1", "n2", "n3", "n4")
GROUPS = {"namesrv": "n1", "master": "n2", "slave": "n3", "load": "n4"}


class Cluster:
    """The session's hosts and how the control node reaches them."""

    def __init__(self, hosts: TestHosts, base: Path) -> None:
        self.hosts = hosts
        self.base = base
        self.known_hosts = hosts.known_hosts_for(base / "known_hosts")
        self.inventory = base / "inventory.yaml"
        self.inventory.write_text(inventory_text(hosts, base), encoding="utf-8")

    def workdir(self, name: str) -> Path:
        return self.base / f"work-{name}"

    def rmq_chaos(self, args: list[str], state: Path, known_hosts: Path | None = None,
                  env_extra: dict[str, str] | None = None, **kw) -> subprocess.Popen:
        """`rmq-chaos ARGS` on the control node (the parent namespace), with this session's known_hosts."""
        env = {**os.environ, "RMQ_CHAOS_STATE": str(state), "PYTHONPATH": str(REPO),
               "RMQ_CHAOS_KNOWN_HOSTS": str(known_hosts or self.known_hosts), **(env_extra or {})}
        env.pop("RMQ_CHAOS_TAG", None)
        argv = self.hosts.parent_argv([sys.executable, "-m", "harness.cli", *args])
        return subprocess.Popen(argv, cwd=REPO, env=env, **kw)


def inventory_text(hosts: TestHosts, base: Path, groups: dict[str, tuple[str, ...]] | None = None,
                   **overrides: str) -> str:
    lines = ["all:", f"  vars: {{ansible_user: root, ansible_ssh_private_key_file: {hosts.user_key}, "
             f"rmq_chaos_venv: {base / 'venv'}}}", "  hosts:"]
    for n in hosts.names:
        extra = overrides.get(n, "")
        lines.append(f"    {n}: {{ansible_host: {hosts.addr(n)}, rmq_chaos_workdir: {base / f'work-{n}'}{extra}}}")
    lines.append("  children:")
    for group, names in (groups or {g: (n,) for g, n in GROUPS.items()}).items():
        lines += [f"    {group}:", "      hosts: {" + ", ".join(f"{n}: {{}}" for n in names) + "}"]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="session")
def cluster(tmp_path_factory) -> Iterator[Cluster]:
    if os.geteuid() != 0:
        pytest.skip("the multi-host tests need root (network namespaces, loop mounts, cgroups)")
    if shutil.which("/usr/sbin/sshd") is None:
        pytest.skip("no /usr/sbin/sshd (Debian's openssh-server; setup.sh installs it)")
    base = tmp_path_factory.mktemp("hosts")
    with TestHosts(list(NAMES), base, sshd=True) as hosts:
        yield Cluster(hosts, base)

"""Before anything starts anywhere: every host of a run is reached and checked (in parallel), then gets the harness.

`preflight(hosts)`: for each host, SSH works (reachable, key accepted, host key known), its Python is the control
node's version on the same machine architecture, its work directory and venv are the harness's own or do not exist
yet (an existing directory without the harness's marker is refused, never changed), and it has what its nodes need
(`harness.agent.checks`, run with the host's own Python before anything is put there). Every problem of every host
is one line naming the host; the first is raised as `HostError` and nothing has been changed on any host.

`install(ssh, bundle)`: the work directory (`rmq_chaos_workdir`, mode 700) and the venv (`rmq_chaos_venv`, default
`<workdir>/venv`) made where missing, each with its marker written first (`harness.agent.checks.make_owned`; only
missing parents are made, an existing one is never touched), or found to be the harness's (checked again: `HostError`
otherwise); when the venv does not hold this bundle (`harness.hosts.bundle`), everything in it but its marker is
removed, the venv made with the host's Python and the bundle extracted into its site-packages. Returns the venv's
Python.
"""
from __future__ import annotations

import json
import shlex
import socket
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from harness.hosts.bundle import Bundle
from harness.hosts.ssh import SshError, SshHost

CHECKS = Path(__file__).resolve().parents[1] / "agent" / "checks.py"


class HostError(RuntimeError):
    """A host cannot run what the scenario places on it (one line naming the host)."""


@dataclass(frozen=True)
class HostNeeds:
    """What a host must have: `rocketmq_home` and `version` when it runs an Apache broker."""

    rocketmq_home: str | None = None
    version: str | None = None


def preflight(hosts: dict[str, SshHost], needs: dict[str, HostNeeds]) -> dict[str, dict]:
    """Check every host in parallel; `HostError` with the first problem (hosts in name order)."""
    with ThreadPoolExecutor(max_workers=max(1, len(hosts))) as pool:
        futures = {name: pool.submit(_check, ssh, needs.get(name, HostNeeds())) for name, ssh in hosts.items()}
    problems, facts = [], {}
    for name in sorted(futures):
        try:
            facts[name] = futures[name].result()
        except (HostError, SshError) as err:
            problems.append(str(err))
    if problems:
        raise HostError(problems[0] + (f" (and {len(problems) - 1} more host problem(s))" if len(problems) > 1 else ""))
    return facts


def _check(ssh: SshHost, needs: HostNeeds) -> dict:
    host = ssh.host
    ssh.run(["true"], timeout=30)
    proc = ssh.run([host.python, "-", "check", needs.rocketmq_home or "-", needs.version or "-", host.workdir,
                    host.venv_dir], input=CHECKS.read_text(encoding="utf-8"), timeout=60, check=False)
    if proc.returncode == 127 or "not found" in proc.stderr:
        raise HostError(f"host {host.name}: no Python at {host.python!r} (ansible_python_interpreter); allowed: "
                        f"a Python {sys.version_info[0]}.{sys.version_info[1]}, as the control node's")
    if proc.returncode != 0:
        raise HostError(f"host {host.name}: checking the host failed: {proc.stderr.strip().splitlines()[-1:]}")
    facts = json.loads(proc.stdout)
    mine = f"{sys.version_info[0]}.{sys.version_info[1]}"
    if facts["python"] != mine:
        raise HostError(f"host {host.name}: {host.python} is Python {facts['python']}; allowed: Python {mine} (the "
                        "control node's: the harness's compiled packages are put on the host as they are)")
    import platform

    if facts["machine"] != platform.machine():
        raise HostError(f"host {host.name}: machine {facts['machine']}, the control node's is {platform.machine()}")
    if facts["problems"]:
        raise HostError(f"host {host.name}: {facts['problems'][0]}")
    return facts


def install(ssh: SshHost, bundle: Bundle) -> str:
    """The harness in the host's venv (`rmq_chaos_venv`, default `<workdir>/venv`; only sent when the one there is
    not this bundle), the work directory made; its Python. `HostError` (one line) when either is not the harness's."""
    host = ssh.host
    venv = host.venv_dir
    made_by = f"rmq-chaos (bundle {bundle.digest}) from {socket.gethostname()}"
    proc = ssh.run([host.python, "-", "prepare", host.workdir, venv, bundle.digest, host.name, made_by],
                   input=CHECKS.read_text(encoding="utf-8"), timeout=300, check=False)
    try:
        facts = json.loads(proc.stdout)
    except ValueError:
        raise HostError(f"host {host.name}: preparing {host.workdir} and {venv} failed: "
                        f"{(proc.stderr.strip().splitlines() or ['no message'])[-1]}") from None
    if "problem" in facts:
        raise HostError(f"host {host.name}: {facts['problem']}")
    if not facts["current"]:
        site = f"{venv}/lib/python{bundle.python}/site-packages"
        script = (f"{shlex.quote(host.python)} -m venv --without-pip {shlex.quote(venv)} && "
                  f"tar -xf - -C {shlex.quote(site)}")
        with open(bundle.path, "rb") as f:
            ssh.run(["sh", "-c", script], input=f.read(), timeout=600)
    return f"{venv}/bin/python"

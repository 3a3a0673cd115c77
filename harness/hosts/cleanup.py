"""`rmq-chaos cleanup --hosts FILE`: on every host of an inventory, end the agents a dead control node left (they
revert their own faults when their lease runs out; this does not wait for that) and run the journal cleanup of the
host's state directory with the harness installed there, so whatever a dead run left on any host (faults, node
processes, stores and loop devices, cgroups, swap files, firewall chains, qdiscs) is undone. A host without a
journal (`<workdir>/state`) has nothing to undo, even when the control node died while installing the harness there
(its work directory or venv missing or half made). A journal is replayed only when the work directory and the venv
carry the harness's marker (`harness.agent.checks.cleanup_facts`, with the host's Python): a directory the harness
did not make is never touched. Hosts in parallel; a host that cannot be reached, whose directories are not the
harness's, or whose journal the harness there cannot replay (not installed completely), is one line and a failed
cleanup."""
from __future__ import annotations

import json
import re
import shlex
import shutil
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from harness.hosts.deploy import CHECKS
from harness.hosts.inventory import Host, Inventory
from harness.hosts.ssh import SshError, SshHost, make_control_dir


def clean_host(ssh: SshHost) -> dict[str, Any]:
    """{"host", "ok", "agents_ended", "report" | "error"} for one host."""
    host: Host = ssh.host
    work, venv = shlex.quote(host.workdir), shlex.quote(host.venv_dir)
    agents = re.sub(r"([.+])", r"[\1]", host.workdir)  # the path as an extended regex (its characters are plain)
    try:
        ended = ssh.run(["sh", "-c", f"pids=$(pgrep -f -- '[-]m harness[.]agent --work {agents}( |$)'); "
                                     f"[ -n \"$pids\" ] && kill -KILL $pids; echo $pids"], check=False).stdout.split()
        # the facts from the host's Python only where there is a journal (a host with none needs no Python)
        probe = ssh.run(["sh", "-c", f"if [ -d {work}/state ]; then exec {shlex.quote(host.python)} - cleanup {work} "
                                     f"{venv}; else echo '{{\"state\": false}}'; fi"],
                        input=CHECKS.read_text(encoding="utf-8"), check=False)
        try:
            facts = json.loads(probe.stdout)
        except ValueError:
            return {"host": host.name, "ok": False, "error": f"examining {host.workdir} with {host.python} failed "
                    f"(exit {probe.returncode}): {(probe.stderr.strip().splitlines() or ['no message'])[-1]}"}
        if not facts["state"]:
            # no journal: nothing was ever made there (a control node killed before or while installing the harness)
            return {"host": host.name, "ok": True, "agents_ended": len(ended), "report": None}
        incomplete = f"the harness in {host.venv_dir} is missing or was not installed completely"
        if facts["workdir"] or facts["venv"]:
            return {"host": host.name, "ok": False, "error": f"the journal in {host.workdir}/state is not replayed: "
                    f"{facts['workdir'] or facts['venv']}" + ("" if facts["harness"] else f"; {incomplete}")}
        if not facts["harness"]:
            return {"host": host.name, "ok": False, "error": f"{incomplete}, so the journal in {host.workdir}/state "
                    "cannot be replayed; run any scenario on this host (it installs the harness) or install it, then "
                    "cleanup --hosts again"}
        python = shlex.quote(f"{host.venv_dir}/bin/python")
        proc = ssh.run(["sh", "-c", f"cd {work} && RMQ_CHAOS_STATE={work}/state {python} -m harness.cli "
                                    f"cleanup --state-dir {work}/state --json"], check=False, timeout=600)
    except SshError as err:
        return {"host": host.name, "ok": False, "error": str(err)}
    try:
        report = json.loads(proc.stdout[proc.stdout.index("{"):])
    except ValueError:
        return {"host": host.name, "ok": False, "error": f"cleanup exited {proc.returncode}: "
                                                         f"{(proc.stderr or proc.stdout).strip()[-300:]}"}
    return {"host": host.name, "ok": proc.returncode == 0, "agents_ended": len(ended), "report": report}


def clean_hosts(inventory: Inventory) -> list[dict]:
    control = make_control_dir()
    hosts = [SshHost(h, control) for h in inventory.hosts.values()]
    try:
        with ThreadPoolExecutor(max_workers=max(1, len(hosts))) as pool:
            return list(pool.map(clean_host, hosts))
    finally:
        for ssh in hosts:
            ssh.close()
        shutil.rmtree(control, ignore_errors=True)

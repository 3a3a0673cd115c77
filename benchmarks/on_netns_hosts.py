"""Run one scenario through `--backend ssh` on four hosts made on this machine, the way docs/fidelity.md's ssh
figures were made: network namespaces under a parent namespace of their own, each with a real OpenSSH sshd
(tests/hosts/netns_hosts.py; name server n1, master n2, slave n3, load n4, the inventory groups of
tests/hosts/conftest.py), then `rmq-chaos cleanup --hosts`; the namespaces, sshds and work directories are gone at
the end, the run directory is kept and printed.

    sudo .venv/bin/python benchmarks/on_netns_hosts.py scenarios/master-slave-partition.yaml
    sudo ROCKETMQ_HOME=/opt/rocketmq-4.9.1 .venv/bin/python benchmarks/on_netns_hosts.py X.yaml --program apache
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from support import REPO, not_root

sys.path.insert(0, str(REPO / "tests" / "hosts"))

from conftest import inventory_text  # noqa: E402 (tests/hosts/conftest.py)
from netns_hosts import TestHosts  # noqa: E402

NODE_HOSTS = ("n1", "n2", "n3")


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        raise SystemExit(__doc__)
    if not_root("on_netns_hosts", "network namespaces, sshd, loop mounts"):
        raise SystemExit(2)
    scenario, extra = Path(sys.argv[1]).resolve(), sys.argv[2:]
    home = os.environ.get("ROCKETMQ_HOME")
    base = Path(tempfile.mkdtemp(prefix="rmq-netns-run-"))
    out = Path(tempfile.mkdtemp(prefix="rmq-netns-runs-"))
    try:
        with TestHosts(["n1", "n2", "n3", "n4"], base, sshd=True) as hosts:
            known = hosts.known_hosts_for(base / "known_hosts")
            dist = {n: f", rmq_chaos_rocketmq_home: {home}" for n in NODE_HOSTS} if home else {}
            inventory = base / "inventory.yaml"
            inventory.write_text(inventory_text(hosts, base, **dist))
            env = {**os.environ, "RMQ_CHAOS_STATE": str(base / "state"), "PYTHONPATH": str(REPO),
                   "RMQ_CHAOS_KNOWN_HOSTS": str(known)}
            cli = [sys.executable, "-m", "harness.cli"]
            started = time.monotonic()
            run = subprocess.run(hosts.parent_argv([*cli, "run", str(scenario), "--out", str(out), "--backend", "ssh",
                                                    "--hosts", str(inventory), *extra]), env=env, cwd=REPO)
            print(f"on_netns_hosts: exit {run.returncode} after {time.monotonic() - started:.0f} s")
            cleanup = subprocess.run(hosts.parent_argv([*cli, "cleanup", "--hosts", str(inventory)]), env=env,
                                     cwd=REPO)
            print(f"on_netns_hosts: cleanup --hosts exit {cleanup.returncode}")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(f"on_netns_hosts: run directory {', '.join(str(d) for d in out.iterdir()) or '(none)'}")


if __name__ == "__main__":
    main()

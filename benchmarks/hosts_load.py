"""The load's sends/s with Locust workers on one load host beside two (`load.hosts`, Locust's distributed mode: the
master on the control node, `workers` workers per load host), closed model, the same users, no fault, through
`--backend ssh` on network namespace hosts with real sshds (tests/hosts/netns_hosts.py: name server n1, master n2,
slave n3, load hosts n4, n5). Sends/s: the rows of the measured phase over its duration, from the run's requests/.
All hosts share this machine's cores, so a second load host adds Locust processes, not CPU: the figure says what
the distributed mode costs or gains here, not on separate machines. No assertions.

    sudo .venv/bin/python benchmarks/hosts_load.py [--users 16] [--duration-s 20] [--workers 1]
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.dataset as ds
from support import REPO, not_root

sys.path.insert(0, str(REPO / "tests" / "hosts"))

from conftest import Cluster  # noqa: E402
from netns_hosts import TestHosts  # noqa: E402


def scenario_text(load_hosts: list[str], users: int, duration_s: int, workers: int) -> str:
    return f"""\
name: load-hosts-{len(load_hosts)}
cluster:
  backend: ssh
  version: "4.9.1"
  store_size: 256MiB
  broker: {{common: {{mappedFileSizeCommitLog: 16777216}}}}
load:
  model: closed
  hosts: [{", ".join(load_hosts)}]
  workers: {workers}
  clients: [{{name: flood, users: {users}, timeout: 3s, message_size: 1KiB}}]
warmup: 3s
phases:
  - name: measured
    duration: {duration_s}s
readback: {{enabled: false}}
"""


def sends_per_s(run_dir: Path, duration_s: int) -> tuple[float, float]:
    table = ds.dataset(run_dir / "requests", format="parquet").to_table(columns=["phase", "outcome"])
    mine = table.filter(pc.equal(table["phase"], "measured"))
    ok = mine.filter(pc.equal(mine["outcome"], "SEND_OK"))
    return mine.num_rows / duration_s, ok.num_rows / max(mine.num_rows, 1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=16)
    parser.add_argument("--duration-s", type=int, default=20)
    parser.add_argument("--workers", type=int, default=1, help="Locust workers per load host")
    args = parser.parse_args()
    if not_root("hosts_load", "network namespaces, sshd, loop mounts, cgroups"):
        return 1
    base = Path(tempfile.mkdtemp(prefix="rmq-bench-load-"))
    found = {}
    with TestHosts(["n1", "n2", "n3", "n4", "n5"], base, sshd=True) as hosts:
        cluster = Cluster(hosts, base)
        for load_hosts in (["n4"], ["n4", "n5"]):
            key = len(load_hosts)
            scenario = base / f"load-{key}.yaml"
            scenario.write_text(scenario_text(load_hosts, args.users, args.duration_s, args.workers),
                                encoding="utf-8")
            out, state = base / f"runs-{key}", base / f"state-{key}"
            proc = cluster.rmq_chaos(["run", str(scenario), "--out", str(out), "--no-report", "--hosts",
                                      str(cluster.inventory)], state, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True)
            _, err = proc.communicate()
            if proc.returncode not in (0, 1):
                print(f"  {key} load host(s): run exited {proc.returncode}: {err.strip()[-600:]}", file=sys.stderr)
                continue
            found[key] = sends_per_s(next(out.iterdir()), args.duration_s)
            cluster.rmq_chaos(["cleanup", "--hosts", str(cluster.inventory)], state, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL).wait()
    print(f"closed model, {args.users} users, {args.workers} worker(s) per load host, {args.duration_s} s measured "
          "(emulator)")
    for key, (rate, ok) in found.items():
        print(f"{key} load host(s): {rate:.0f} sends/s, SEND_OK share {ok:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A fault's apply to verified across SSH beside the local backend's: one scenario of `--faults` one-second phases,
each with one fault (freeze and disk_throttle in turn, on the master and the slave in turn), run through
`--backend ssh` on four network namespace hosts with real sshds (tests/hosts/netns_hosts.py) and through
`--backend local` on this machine. From each run's events.jsonl: the time from a fault's `apply started` to its
`verify ok` (on the ssh backend the agent's events, put on this machine's clock by the host's measured offset).
Prints median and p99 per backend and per kind; no assertions.

    sudo .venv/bin/python benchmarks/hosts_fault_latency.py [--faults 50] [--program emulator]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from support import REPO, not_root, pct

sys.path.insert(0, str(REPO / "tests" / "hosts"))

from conftest import Cluster  # noqa: E402
from netns_hosts import TestHosts  # noqa: E402

KINDS = (("freeze", "{}"), ("disk_throttle", "{write_bps: 8388608}"))


def scenario_text(faults: int) -> str:
    lines = ["name: fault-latency", "cluster:", "  backend: ssh", '  version: "4.9.1"', "  store_size: 64MiB",
             "  broker: {common: {mappedFileSizeCommitLog: 4194304}}",
             "load:", "  clients: [{name: flood, users: 2, timeout: 3s}]", "warmup: 1s", "phases:"]
    for i in range(faults):
        kind, params = KINDS[i % len(KINDS)]
        target = ("master", "slave")[(i // len(KINDS)) % 2]
        lines += [f"  - name: p{i}", "    duration: 1s",
                  f"    faults: [{{id: f{i}, kind: {kind}, target: {target}, params: {params}}}]"]
    lines.append("readback: {enabled: false}")
    return "\n".join(lines) + "\n"


def latencies(run_dir: Path) -> dict[str, list[float]]:
    starts, found = {}, {}
    for line in (run_dir / "events.jsonl").read_text(encoding="utf-8").splitlines():
        e = json.loads(line)
        if e.get("event") != "fault":
            continue
        if e["action"] == "apply" and e["status"] == "started":
            starts[e["fault_id"]] = e["wall_ns"]
        elif e["action"] == "verify" and e["status"] == "ok" and e["fault_id"] in starts:
            found.setdefault(e["kind"], []).append((e["wall_ns"] - starts[e["fault_id"]]) / 1e6)
    return found


def run(argv: list[str], env: dict[str, str]) -> int:
    proc = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True)
    if proc.returncode not in (0, 1):
        print(f"  run exited {proc.returncode}: {proc.stderr.strip()[-600:]}", file=sys.stderr)
    return proc.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--faults", type=int, default=50)
    parser.add_argument("--program", choices=("emulator", "apache"), default="emulator")
    args = parser.parse_args()
    if not_root("hosts_fault_latency", "network namespaces, sshd, loop mounts, cgroups"):
        return 1
    base = Path(tempfile.mkdtemp(prefix="rmq-bench-faults-"))
    scenario = base / "fault-latency.yaml"
    scenario.write_text(scenario_text(args.faults), encoding="utf-8")
    common = ["run", str(scenario), "--no-report", "--program", args.program]
    results = {}
    with TestHosts(["n1", "n2", "n3", "n4"], base, sshd=True) as hosts:
        cluster = Cluster(hosts, base)
        proc = cluster.rmq_chaos([*common, "--out", str(base / "ssh"), "--backend", "ssh", "--hosts",
                                  str(cluster.inventory)], base / "state-ssh", stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, text=True)
        _, err = proc.communicate()
        if proc.returncode not in (0, 1):
            print(f"  ssh run exited {proc.returncode}: {err.strip()[-600:]}", file=sys.stderr)
        results["ssh"] = latencies(next((base / "ssh").iterdir()))
        subprocess.run(hosts.parent_argv([sys.executable, "-m", "harness.cli", "cleanup", "--hosts",
                                          str(cluster.inventory)]), cwd=REPO, capture_output=True,
                       env={**os.environ, "PYTHONPATH": str(REPO), "RMQ_CHAOS_STATE": str(base / "state-ssh"),
                            "RMQ_CHAOS_KNOWN_HOSTS": str(cluster.known_hosts)})
    env = {**os.environ, "PYTHONPATH": str(REPO), "RMQ_CHAOS_STATE": str(base / "state-local")}
    env.pop("RMQ_CHAOS_TAG", None)
    run([sys.executable, "-m", "harness.cli", *common, "--out", str(base / "local"), "--backend", "local"], env)
    results["local"] = latencies(next((base / "local").iterdir()))
    print(f"fault apply -> verified, {args.faults} faults per backend ({args.program}), ms")
    print(f"{'backend':8} {'kind':14} {'n':>4} {'median':>8} {'p99':>8} {'max':>8}")
    for backend, by_kind in results.items():
        for kind, ms in [*sorted(by_kind.items()), ("all", [v for vs in by_kind.values() for v in vs])]:
            if ms:
                print(f"{backend:8} {kind:14} {len(ms):>4} {statistics.median(ms):>8.0f} {pct(ms, 0.99):>8.0f} "
                      f"{max(ms):>8.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""SIGKILL of the control node's `rmq-chaos run` at random moments of a multi-host run (`cluster.backend: ssh` on four
network namespace hosts with real sshds, tests/hosts/netns_hosts.py: name server n1, master n2, slave n3, load n4),
then `rmq-chaos cleanup --hosts FILE`. The run freezes the master and partitions the slave from it; in even rounds
the kill falls at a random moment in [1, --max-kill-s] s after the start (anywhere from the hosts' checks to the
faults' phase, as the machine's load decides), in odd rounds 0-5 s after both faults are verified (so the lease is
measured in at least half the rounds). A SIGKILLed control node's SSH clients close the agents' channels, so the
agents revert on the channel's EOF; with `--hang` the control node is SIGSTOPped instead (as a hung or cut-off
control node: the channels stay open and silent) and only the lease ends the faults.

Per round it prints: the moment of the kill (seconds after the start) and which faults were verified by then; when
they were, the lease bound measured: the time from the kill to the agents having reverted both faults by themselves
(the master runs again, no chain of ours on the slave's host); cleanup's exit code; and what was left on any host
after cleanup: the journal's leftovers (`faults.leftovers`: mounts, loop devices, cgroups, swap files, iptables
chains, qdiscs, processes of the journal), any process whose command line names a host's work directory, any RMQ-
chain or htb qdisc in a host's network namespace. No assertions: figures.

    sudo .venv/bin/python benchmarks/hosts_kill.py [--rounds 10] [--seed 1] [--max-kill-s 90] [--hang]
"""
from __future__ import annotations

import argparse
import json
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from support import REPO, not_root

sys.path.insert(0, str(REPO / "tests" / "hosts"))

from conftest import Cluster  # noqa: E402
from netns_hosts import TestHosts  # noqa: E402
from test_ssh_kill import SCENARIO  # noqa: E402

from harness.backends.ssh.backend import LEASE_S  # noqa: E402

HOSTS = ("n1", "n2", "n3", "n4")
LEASE_WAIT_S = 120
VERIFIED_TIMEOUT_S = 400


def events_of(out: Path) -> list[dict]:
    runs = list(out.iterdir()) if out.exists() else []
    f = runs[0] / "events.jsonl" if runs else None
    if not f or not f.exists():
        return []
    found = []
    for line in f.read_text(encoding="utf-8").splitlines():
        try:
            found.append(json.loads(line))
        except ValueError:
            pass
    return found


def verified(ev: list[dict]) -> set[str]:
    return {e["fault_id"] for e in ev if e.get("event") == "fault" and e["action"] == "verify" and e["status"] == "ok"}


def leftovers(cluster: Cluster, name: str) -> list:
    work = cluster.workdir(name)
    code = ("import json; from faults.leftovers import scan_leftovers; "
            f"print(json.dumps(scan_leftovers({str(work / 'state')!r}, [{str(work)!r}])))")
    proc = cluster.hosts.run(name, [sys.executable, "-c", code], text=True, cwd=REPO, check=False,
                             env={"PYTHONPATH": str(REPO), "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"})
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return [f"scan failed: {proc.stderr.strip()[-200:]}"]


def net_left(cluster: Cluster, name: str) -> list[str]:
    found = []
    if "RMQ-" in cluster.hosts.run(name, ["iptables-save"], text=True, check=False).stdout:
        found.append("iptables chain RMQ-*")
    if " htb " in cluster.hosts.run(name, ["tc", "qdisc", "show", "dev", "eth0"], text=True, check=False).stdout:
        found.append("htb qdisc on eth0")
    return found


def procs_left(cluster: Cluster, name: str) -> list[str]:
    out = subprocess.run(["pgrep", "-af", str(cluster.workdir(name))], text=True, capture_output=True).stdout
    return [ln.split(None, 2)[1].rsplit("/", 1)[-1] for ln in out.splitlines() if ln.strip()]


def master_frozen(out: Path) -> bool:
    try:
        info = json.loads((next(out.iterdir()) / "cluster.json").read_text())
        pid = next(n["pid"] for n in info["nodes"] if n["name"] == "master")
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T"
    except (OSError, StopIteration, ValueError, KeyError):
        return False


def one_round(cluster: Cluster, base: Path, i: int, kill_at: float, after_verified: bool, hang: bool) -> dict:
    d = base / f"round-{i}"
    d.mkdir()
    scenario, state, out = d / "killed.yaml", d / "state", d / "runs"
    scenario.write_text(SCENARIO, encoding="utf-8")
    proc = cluster.rmq_chaos(["run", str(scenario), "--out", str(out), "--hosts", str(cluster.inventory),
                              "--no-report"], state, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    start = time.monotonic()
    if after_verified:  # the kill falls `kill_at` s after both faults are verified (or at the timeout)
        while verified(events_of(out)) != {"stopped", "cut"} and proc.poll() is None \
                and time.monotonic() - start < VERIFIED_TIMEOUT_S:
            time.sleep(0.2)
        kill_at += time.monotonic() - start
    while time.monotonic() - start < kill_at and proc.poll() is None:
        time.sleep(0.1)
    proc.send_signal(signal.SIGSTOP if hang else signal.SIGKILL)  # SIGSTOP: its ssh channels stay open, silent
    killed = time.monotonic()
    if not hang:
        proc.wait()
    faults = verified(events_of(out))
    row = {"round": i, "kill_s": round(killed - start, 1), "verified": sorted(faults), "lease_s": None}
    if faults == {"stopped", "cut"}:
        while master_frozen(out) or net_left(cluster, "n3"):
            if time.monotonic() - killed > LEASE_WAIT_S:
                row["lease_s"] = f">{LEASE_WAIT_S}"
                break
            time.sleep(0.1)
        else:
            row["lease_s"] = round(time.monotonic() - killed, 1)
    if hang:
        proc.kill()
        proc.wait()
    clean = cluster.rmq_chaos(["cleanup", "--hosts", str(cluster.inventory)], state, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    text, _ = clean.communicate(timeout=600)
    row["cleanup_exit"] = clean.returncode
    row["cleanup_out"] = " | ".join(ln for ln in text.strip().splitlines()[-4:])
    row["left"] = {h: leftovers(cluster, h) + net_left(cluster, h) + procs_left(cluster, h) for h in HOSTS}
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--max-kill-s", type=float, default=90.0, help="the kill falls in [1, this] s after start")
    parser.add_argument("--hang", action="store_true",
                        help="SIGSTOP instead of SIGKILL: the control node hangs with its SSH channels open, so the "
                             "agents hear no EOF and only the lease (no renewal within it) ends their faults")
    args = parser.parse_args()
    if not_root("hosts_kill", "network namespaces, sshd, loop mounts, cgroups"):
        return 1
    rnd = random.Random(args.seed)
    base = Path(tempfile.mkdtemp(prefix="rmq-bench-kill-"))
    rows = []
    with TestHosts(list(HOSTS), base, sshd=True) as hosts:
        cluster = Cluster(hosts, base)
        for i in range(args.rounds):
            after = i % 2 == 1  # every other round: a random moment after the faults are verified (the lease)
            row = one_round(cluster, base, i, rnd.uniform(0.0, 5.0) if after else rnd.uniform(1.0, args.max_kill_s),
                            after, args.hang)
            rows.append(row)
            left = {h: v for h, v in row["left"].items() if v}
            print(f"round {i}: killed at {row['kill_s']} s, verified {row['verified'] or '-'}, "
                  f"lease revert {row['lease_s'] if row['lease_s'] is not None else '-'} s, "
                  f"cleanup exit {row['cleanup_exit']}, left: {left or 'nothing'}", flush=True)
            if row["cleanup_exit"] != 0:
                print(f"  cleanup said: {row['cleanup_out']}", flush=True)
    print_summary(rows)
    return 0


def print_summary(rows: list[dict]) -> None:
    leases = [r["lease_s"] for r in rows if isinstance(r["lease_s"], float)]
    print(f"rounds {len(rows)}; cleanup exit 0 in {sum(r['cleanup_exit'] == 0 for r in rows)}; "
          f"something left in {sum(any(r['left'].values()) for r in rows)}")
    if leases:
        print(f"faults reverted after the kill (lease {LEASE_S:g} s): n={len(leases)} median "
              f"{statistics.median(leases):.1f} s, max {max(leases):.1f} s")


if __name__ == "__main__":
    sys.exit(main())

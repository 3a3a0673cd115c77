"""Ctrl-C at random moments of `scenarios/master-slave-partition.yaml` across four network namespace hosts with real
sshds (tests/hosts/netns_hosts.py: name server n1, master n2, slave n3, load n4), as a terminal sends it: SIGINT to
the whole process group of `rmq-chaos run`. Each round then checks, without `rmq-chaos cleanup`: the exit status
(2, as an interrupted run on the local backend), no Python traceback on stderr, every row the load fired recorded in
the run directory (the load host's rows fetched home: `load_stop`'s fired count against the rows in requests/), and
nothing left on any host or on the control node: the journal's leftovers on each host (`faults.leftovers`: mounts,
loop devices, cgroups, swap files, iptables chains, qdiscs, processes), any process naming a host's work directory,
any RMQ- chain or htb qdisc in a host's namespace, and the control node's open journal entries. Figures, no
assertions. `--signal TERM` sends SIGTERM to the group instead (what `timeout` does).

    sudo .venv/bin/python benchmarks/hosts_ctrl_c.py [--rounds 10] [--seed 1] [--max-s 120] [--signal INT]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq
from hosts_kill import events_of, leftovers, net_left, procs_left
from support import REPO, not_root

sys.path.insert(0, str(REPO / "tests" / "hosts"))

from conftest import Cluster  # noqa: E402
from netns_hosts import TestHosts  # noqa: E402

from faults.journal import Journal  # noqa: E402

HOSTS = ("n1", "n2", "n3", "n4")
SCENARIO = REPO / "scenarios" / "master-slave-partition.yaml"
EXIT_TIMEOUT_S = 600


def rows_recorded(out: Path) -> int:
    runs = list(out.iterdir()) if out.exists() else []
    parts = sorted((runs[0] / "requests").glob("*.parquet")) if runs else []
    return sum(pq.ParquetFile(p).metadata.num_rows for p in parts)


def fired(ev: list[dict]) -> int | None:
    stops = [e for e in ev if e.get("event") == "load_stop"]
    return ((stops[-1].get("totals") or {}).get("result") or {}).get("fired") if stops else None


def moment(ev: list[dict]) -> str:
    """Where the run was when the signal came: its last phase, fault or stage event before `run_interrupted`."""
    cut = next((e for e in ev if e.get("event") == "run_interrupted"), None)
    if cut is None:
        return "-"
    before = [e for e in ev if e.get("wall_ns", 0) <= cut.get("wall_ns", 0) and e.get("event") in
              ("phase_start", "load_start", "readback_start", "fault")]
    last = before[-1] if before else {}
    what = last.get("phase") or (f"{last.get('fault_id')} {last.get('action')} {last.get('status')}"
                                 if last.get("event") == "fault" else last.get("event") or "cluster up")
    return f"{cut.get('phase') or '-'} at {cut.get('at_s')} s ({what})"


def one_round(cluster: Cluster, base: Path, i: int, at_s: float, signum: int) -> dict:
    d = base / f"round-{i}"
    d.mkdir()
    state, out = d / "state", d / "runs"
    proc = cluster.rmq_chaos(["run", str(SCENARIO), "--out", str(out), "--hosts", str(cluster.inventory),
                              "--no-report"], state, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)
    start = time.monotonic()
    while time.monotonic() - start < at_s and proc.poll() is None:
        time.sleep(0.1)
    sent = proc.poll() is None
    if sent:
        os.killpg(proc.pid, signum)  # the terminal's Ctrl-C: the whole foreground group
    _, err = proc.communicate(timeout=EXIT_TIMEOUT_S)
    ev = events_of(out)
    n_fired, n_rows = fired(ev), rows_recorded(out)
    local = [f"{e.kind} {e.target}" for e in Journal(state).open_entries()] if state.exists() else []
    return {"round": i, "signal_s": round(at_s, 1), "sent": sent, "exit": proc.returncode, "where": moment(ev),
            "traceback": "Traceback" in err, "fired": n_fired, "rows": n_rows,
            "left": {**{h: leftovers(cluster, h) + net_left(cluster, h) + procs_left(cluster, h) for h in HOSTS},
                     "control": local},
            "last_lines": [ln for ln in err.strip().splitlines()[-3:]]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--max-s", type=float, default=120.0, help="the signal falls in [3, this] s after start")
    parser.add_argument("--signal", choices=("INT", "TERM"), default="INT")
    args = parser.parse_args()
    if not_root("hosts_ctrl_c", "network namespaces, sshd, loop mounts, cgroups"):
        return 1
    rnd = random.Random(args.seed)
    signum = signal.Signals[f"SIG{args.signal}"]
    base = Path(tempfile.mkdtemp(prefix="rmq-bench-ctrlc-"))
    rows = []
    with TestHosts(list(HOSTS), base, sshd=True) as hosts:
        cluster = Cluster(hosts, base)
        for i in range(args.rounds):
            row = one_round(cluster, base, i, rnd.uniform(3.0, args.max_s), signum)
            rows.append(row)
            left = {h: v for h, v in row["left"].items() if v}
            print(f"round {i}: SIG{args.signal} at {row['signal_s']} s ({row['where']}), exit {row['exit']}, "
                  f"traceback {'YES' if row['traceback'] else 'no'}, rows {row['rows']} of {row['fired']} fired, "
                  f"left: {left or 'nothing'}", flush=True)
            if row["traceback"] or left:
                print("  " + " | ".join(row["last_lines"]), flush=True)
    whole = sum(r["fired"] is None or r["rows"] == r["fired"] for r in rows)
    print(f"rounds {len(rows)}; exit 2 in {sum(r['exit'] == 2 for r in rows)}; traceback in "
          f"{sum(r['traceback'] for r in rows)}; all rows recorded in {whole}; something left in "
          f"{sum(any(r['left'].values()) for r in rows)}")
    print(json.dumps(rows, default=str), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Sends/s per load-generator core: closed-model users (no think time) send as fast as a scripted broker that acks
at once allows; the figure is completed sends divided by the CPU seconds the load's processes used (user + system,
measured with psutil over a steady window after a warm-up). Goal: >= 30k sends per core-second.

    .venv/bin/python benchmarks/loads_throughput.py [--users 64] [--seconds 10] [--workers 0] \
        [--serialize-type JSON|ROCKETMQ]

Every send still makes its request row, and Locust's statistics count it (the last line: outcomes, rows written and
Locust's counts, fed from the rows). With `--workers N` the figure counts the N workers' CPU (the master's is
printed apart).

The broker runs in its own process (`tests/loads/scripted_broker.py --no-record`) so it does not share the
generator's core accounting.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table
from support import cpu_seconds, scripted_broker

from loads.process import LoadProcess
from loads.spec import LoadSpec

WARMUP_S = 2.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--workers", type=int, default=0, help="0: one process runs the users")
    parser.add_argument("--message-size", type=int, default=128)
    parser.add_argument("--serialize-type", choices=("JSON", "ROCKETMQ"), default="JSON")
    args = parser.parse_args()
    console = Console()
    with scripted_broker() as (addr, broker):
        spec = LoadSpec.model_validate({"topic": "BenchTopic", "namesrv": addr, "model": "closed", "users": args.users,
                                        "clients": [{"name": "flood", "message_size": args.message_size,
                                                     "serialize_type": args.serialize_type}]})
        with tempfile.TemporaryDirectory(prefix="loads-bench-") as tmp:
            load = LoadProcess(spec, Path(tmp) / "run", "bench", workers=args.workers, progress=True)
            load.start()
            try:
                time.sleep(WARMUP_S)
                pids = load.pids if not args.workers else load.pids[1:]  # a master runs no users
                c0, b0, s0, t0 = cpu_seconds(pids), cpu_seconds([broker.pid]), load.stats(), time.monotonic()
                time.sleep(args.seconds)
                c1, b1, s1, t1 = cpu_seconds(pids), cpu_seconds([broker.pid]), load.stats(), time.monotonic()
                master_cpu = cpu_seconds(load.pids[:1]) if args.workers else 0.0
            finally:
                result = load.stop()
    sends = s1["completed"] - s0["completed"]
    cpu = c1 - c0
    table = Table(title=f"load generator throughput ({args.users} closed users, {args.workers} workers, "
                        f"{args.message_size} B bodies, {args.serialize_type} header; load average "
                        f"{__import__('os').getloadavg()[0]:.1f})")
    for col in ("sends", "wall s", "sends/s", "generator CPU s", "sends per core-second", "broker CPU s"):
        table.add_column(col, justify="right")
    table.add_row(f"{sends:,}", f"{t1 - t0:.1f}", f"{sends / (t1 - t0):,.0f}", f"{cpu:.2f}", f"{sends / cpu:,.0f}",
                  f"{b1 - b0:.2f}")
    console.print(table)
    if args.workers:
        console.print(f"master process CPU over the whole run: {master_cpu:.2f} s (not counted above)")
    locust = result["result"].get("locust", {})
    console.print(f"outcomes: {result['stats']['outcomes']}; rows written {result['result']['rows']:,}; "
                  f"Locust's statistics: {locust.get('requests', 0):,} requests, {locust.get('failures', 0):,} "
                  f"failures")
    return 0


if __name__ == "__main__":
    sys.exit(main())

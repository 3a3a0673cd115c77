"""How closely the open model keeps its schedule: p50/p99/p99.9/max of (actual start - intended start) of every send
at a fixed rate (default 5000 sends/s, 64 users) against a scripted broker that acks at once, read from the request
rows the run wrote. Goal: p99 < 1 ms at 5k sends/s. Also prints the achieved rate and the resident memory of the
load's processes after the warm-up and at the end (flat: rows go to disk every second).

    .venv/bin/python benchmarks/loads_schedule_lag.py [--rate 5000] [--users 64] [--seconds 10] [--workers 0]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import psutil
import pyarrow.dataset as ds
from rich.console import Console
from rich.table import Table
from support import scripted_broker

from loads.process import LoadProcess
from loads.spec import LoadSpec

WARMUP_S = 1.0
NS_PER_MS = 1e6


def rss_mib(pids: list[int]) -> float:
    return sum(psutil.Process(pid).memory_info().rss for pid in pids) / 2**20


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=5000.0)
    parser.add_argument("--users", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--workers", type=int, default=0)
    args = parser.parse_args()
    console = Console()
    with scripted_broker() as (addr, _broker):
        spec = LoadSpec.model_validate({"topic": "BenchTopic", "namesrv": addr, "model": "open", "rate": args.rate,
                                        "clients": [{"name": "flood", "users": args.users}]})
        with tempfile.TemporaryDirectory(prefix="loads-bench-") as tmp:
            run = Path(tmp) / "run"
            load = LoadProcess(spec, run, "bench", workers=args.workers, progress=True)
            load.start()
            try:
                time.sleep(WARMUP_S)
                rss_start = rss_mib(load.pids)
                time.sleep(args.seconds)
                rss_end = rss_mib(load.pids)
            finally:
                load.stop()
            table = ds.dataset(run / "requests", format="parquet").to_table(
                columns=["intended_ns", "start_ns", "end_ns"])
    intended = table.column("intended_ns").to_numpy()
    start = table.column("start_ns").to_numpy()
    t0 = intended.min()
    steady = intended >= t0 + WARMUP_S * 1e9
    out = Table(title=f"open model at {args.rate:,.0f} sends/s, {args.users} users, {args.workers} workers: "
                      "actual start - intended start")
    for col in ("window", "sends", "achieved/s", "p50 ms", "p99 ms", "p99.9 ms", "max ms"):
        out.add_column(col, justify="right")
    for label, mask in (("whole run", np.ones_like(steady)), (f"after {WARMUP_S:g} s warm-up", steady)):
        lag = (start[mask] - intended[mask]) / NS_PER_MS
        span_s = (intended[mask].max() - intended[mask].min()) / 1e9
        q50, q99, q999 = np.quantile(lag, [0.5, 0.99, 0.999])
        out.add_row(label, f"{mask.sum():,}", f"{mask.sum() / span_s:,.0f}", f"{q50:.3f}", f"{q99:.3f}",
                    f"{q999:.3f}", f"{lag.max():.3f}")
    console.print(out)
    console.print(f"resident memory of the load processes: {rss_start:.0f} MiB after warm-up, {rss_end:.0f} MiB "
                  f"{args.seconds:g} s later")
    return 0


if __name__ == "__main__":
    sys.exit(main())

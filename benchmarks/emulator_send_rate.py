"""SEND_OK sends/s of the embedded cluster on this machine: 1 master (SYNC_MASTER, SYNC_FLUSH) + 1 slave, each store
on its own loop-mounted ext4, 1 KiB messages sent by N threads sharing one `remoting.Producer` (java-4.9.1) for a
fixed time. Needs root (loop mounts). Prints the rate and latency percentiles; the load runs on the same 2 cores.

    sudo .venv/bin/python benchmarks/emulator_send_rate.py [--threads 32] [--seconds 20] [--version 4.9.1]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.progress import Progress

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "emulator"))

from emu_cluster import EmuCluster  # noqa: E402
from emu_load import Flood  # noqa: E402

TOPIC = "BenchTopic"
BODY_SIZE = 1024
WARMUP_S = 3.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--version", default="4.9.1")
    parser.add_argument("--file-size", type=int, default=64 << 20, help="mappedFileSizeCommitLog")
    args = parser.parse_args()
    console = Console()
    with tempfile.TemporaryDirectory(prefix="emu-bench-") as tmp:
        cluster = EmuCluster(Path(tmp), version=args.version,
                             master_conf={"mappedFileSizeCommitLog": str(args.file_size)},
                             slave_conf={"mappedFileSizeCommitLog": str(args.file_size)})
        try:
            console.print("starting name server, master, slave ...")
            cluster.start()
            cluster.create_topic(TOPIC, 8)
            with Flood(cluster.producer(), TOPIC, args.threads, BODY_SIZE) as flood:
                time.sleep(WARMUP_S)
                begin = time.monotonic()
                with Progress(console=console, transient=True) as progress:
                    task = progress.add_task("sending", total=args.seconds)
                    while (elapsed := time.monotonic() - begin) < args.seconds:
                        ok = flood.count(begin, "SEND_OK")
                        progress.update(task, completed=elapsed, description=f"SEND_OK {ok / max(elapsed, 1e-9):,.0f}/s")
                        time.sleep(0.25)
                end = time.monotonic()
            window = [o for o in flood.since(begin) if o.end <= end]
            ok = [o for o in window if o.outcome == "SEND_OK"]
            other = len(window) - len(ok)
            lat = sorted(o.latency_ms for o in ok)
            rate = len(ok) / (end - begin)
            console.print(f"RocketMQ profile {args.version}, SYNC_MASTER + SYNC_FLUSH, {BODY_SIZE} B bodies, "
                          f"{args.threads} sender threads, {end - begin:.1f} s")
            console.print(f"SEND_OK: {len(ok)} ({rate:,.0f}/s), other outcomes: {other}")
            if lat:
                console.print(f"latency ms: p50 {statistics.median(lat):.1f}  p99 {lat[int(len(lat) * 0.99) - 1]:.1f}"
                              f"  max {lat[-1]:.1f}")
        finally:
            cluster.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

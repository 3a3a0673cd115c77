"""The master's HA connection count in the read-only slave loop (4.9.1): once the slave's store is read-only and
replication has stopped at a file boundary, the slave's HA client closes its connection and connects again at once,
every `haSendHeartbeatInterval`; on the master the old connection is counted out and the new one counted in. Sends
that meet the count at zero get SLAVE_NOT_AVAILABLE (the real 4.9.1 gave 0-4 per run of the read-only scenario, 62
in one; docs/fidelity.md).

Prints, for a flood of N threads sharing one producer: reconnects seen, how long the master's count stayed at zero
each time (`haConnectionZeroLastMicros` read after every reconnect, `haConnectionZeroMaxMicros`), and the
SLAVE_NOT_AVAILABLE answers. Needs root (loop mounts, the read-only fault).

    sudo .venv/bin/python benchmarks/emulator_ha_reconnect.py [--threads 64] [--seconds 60] [--heartbeat-ms 5000]
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

from emu_cluster import EmuCluster, poll  # noqa: E402
from emu_load import Flood  # noqa: E402

from faults.readonly_fs import ReadonlyFs  # noqa: E402

TOPIC = "ReconnectTopic"
BODY_SIZE = 4000
FILE_SIZE = 2 << 20
STALL_TIMEOUT_S = 90.0
POLL_S = 0.05


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=60.0, help="measured time once replication has stopped")
    parser.add_argument("--heartbeat-ms", type=int, default=5000, help="haSendHeartbeatInterval (reconnect period)")
    parser.add_argument("--version", default="4.9.1")
    args = parser.parse_args()
    console = Console()
    files = {"mappedFileSizeCommitLog": str(FILE_SIZE), "haSendHeartbeatInterval": str(args.heartbeat_ms)}
    with tempfile.TemporaryDirectory(prefix="emu-ha-") as tmp:
        cluster = EmuCluster(Path(tmp), version=args.version, master_conf=files, slave_conf=files)
        try:
            console.print("starting name server, master, slave ...")
            cluster.start()
            cluster.create_topic(TOPIC, 4)
            with Flood(cluster.producer(), TOPIC, args.threads, BODY_SIZE) as flood:
                poll(lambda: flood.count(0, "SEND_OK") >= 100, 30, "SEND_OK before the fault")
                fault = ReadonlyFs(cluster.target("slave"), journal=cluster.journal)
                fault.apply()
                fault.verify()
                console.print("slave store read-only; waiting for replication to stop at the file boundary ...")
                poll(lambda: "transfer messsage to slave timeout" in cluster.master.log("store.log"),
                     STALL_TIMEOUT_S, "the group-transfer timeout line")
                gaps, stats = _measure(cluster, args.seconds, console)
                begin = stats["begin"]
                sna = flood.matching(begin, "SLAVE_NOT_AVAILABLE")
                words = flood.words(begin)
        finally:
            cluster.close()
    console.print(f"RocketMQ profile {args.version}, {args.threads} sender threads, {args.seconds:.0f} s in the "
                  f"read-only loop, haSendHeartbeatInterval {args.heartbeat_ms} ms")
    console.print(f"reconnects counted by the master: {stats['reconnects']}")
    if gaps:
        console.print(f"count at zero per reconnect (us): median {statistics.median(gaps):.0f}  max {max(gaps)}  "
                      f"all {sorted(gaps)}")
    console.print(f"haConnectionZeroMaxMicros over the run: {stats['max_us']}")
    console.print(f"SLAVE_NOT_AVAILABLE: {len(sna)}   outcomes: {words}")
    return 0


def _measure(cluster: EmuCluster, seconds: float, console: Console) -> tuple[list[int], dict]:
    """Poll the master's runtime info; after every new zero period record its length."""
    begin = time.monotonic()
    first = cluster.runtime("master")
    seen = int(first["haConnectionZeroTimes"])
    start_seen = seen
    gaps: list[int] = []
    info = first
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("measuring", total=seconds)
        while (elapsed := time.monotonic() - begin) < seconds:
            info = cluster.runtime("master")
            times = int(info["haConnectionZeroTimes"])
            if times > seen:
                if times == seen + 1:  # one reconnect since the last poll: its gap is the last one
                    gaps.append(int(info["haConnectionZeroLastMicros"]))
                seen = times
            progress.update(task, completed=elapsed, description=f"reconnects {seen - start_seen}")
            time.sleep(POLL_S)
    return gaps, {"begin": begin, "reconnects": seen - start_seen, "max_us": int(info["haConnectionZeroMaxMicros"])}


if __name__ == "__main__":
    sys.exit(main())

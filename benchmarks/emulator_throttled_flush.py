"""Flow control on a master whose store device is write-throttled (cgroup v1 blkio) while its page cache is bounded
by a memory cgroup limit, as in a container. Each trial starts a cluster, floods the master, bounds its page cache
(`--page-cache` bytes above its anonymous memory, the limit written to its own memory cgroup), applies and verifies
`disk_throttle` (`--bps`) and records for `--seconds`: when the first flow-control answer (MQBrokerException code 2)
came, how many came by remark, the longest put inside the put-message lock (`[NOTIFYME]` lines), memory cgroup OOM
kills, and where the master's threads waited while in D state (kernel stacks sampled every 50 ms): a put thread in
`folio_wait_writeback < shrink_folio_list < ... try_to_free_mem_cgroup_pages` is memcg reclaim waiting for a page
the throttled flush has under writeback. Needs root.

    sudo .venv/bin/python benchmarks/emulator_throttled_flush.py [--flush ASYNC_FLUSH] [--bps 262144]
        [--page-cache 16MiB] [--seconds 40] [--trials 3] [--threads 32] [--body 4000]
"""
from __future__ import annotations

import argparse
import collections
import os
import re
import sys
import tempfile
import threading
import time
from pathlib import Path

from rich.console import Console
from rich.progress import Progress

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "emulator"))

from emu_cluster import EmuCluster, poll  # noqa: E402
from emu_load import Flood  # noqa: E402

from faults.disk_throttle import DiskThrottle  # noqa: E402
from faults.system import cgroupfs  # noqa: E402

TOPIC = "ThrottleTopic"
FILE_SIZE = 64 << 20
STORE_SIZE = 4 << 30
SAMPLE_S = 0.05
STACK_FRAMES = 7
NOTIFYME = re.compile(r"\[NOTIFYME\]putMessage in lock cost time\(ms\)=(\d+)")
UNITS = {"": 1, "KIB": 1 << 10, "MIB": 1 << 20, "GIB": 1 << 30}


def size(text: str) -> int:
    m = re.fullmatch(r"(\d+)\s*([KMG]iB)?", text.strip(), re.IGNORECASE)
    if not m:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size; allowed: <N>, <N>KiB, <N>MiB, <N>GiB")
    return int(m.group(1)) * UNITS[(m.group(2) or "").upper()]


class StackSampler(threading.Thread):
    """Counts the kernel stacks of the process's threads that are in D state."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.stacks: collections.Counter[str] = collections.Counter()
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(SAMPLE_S):
            try:
                tids = os.listdir(f"/proc/{self.pid}/task")
            except OSError:
                return
            for tid in tids:
                try:
                    with open(f"/proc/{self.pid}/task/{tid}/stat") as f:
                        if f.read().rsplit(")", 1)[1].split()[0] != "D":
                            continue
                    with open(f"/proc/{self.pid}/task/{tid}/stack") as f:
                        frames = [line.split()[-1].split("+")[0] for line in f if line.strip()]
                except OSError:
                    continue
                self.stacks[" < ".join(frames[:STACK_FRAMES])] += 1


def oom_kills(memory_cgroup: str) -> int:
    try:
        for line in cgroupfs.read(memory_cgroup, "memory.oom_control").splitlines():
            if line.startswith("oom_kill "):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def trial(args: argparse.Namespace, console: Console) -> dict:
    conf = {"mappedFileSizeCommitLog": str(FILE_SIZE), "flushDiskType": args.flush}
    with tempfile.TemporaryDirectory(prefix="emu-throttle-") as tmp:
        cluster = EmuCluster(Path(tmp), master_conf=conf, slave_conf={"mappedFileSizeCommitLog": str(FILE_SIZE)},
                             cgroups=True, store_size=STORE_SIZE)
        try:
            cluster.start()
            cluster.create_topic(TOPIC, 8)
            master = cluster.master
            memory = master.cgroups.paths["memory"]
            sampler = StackSampler(master.proc.pid)
            with Flood(cluster.producer(), TOPIC, args.threads, args.body) as flood:
                poll(lambda: flood.count(0, "SEND_OK") >= 1000, 30, "SEND_OK before the fault")
                anon = cgroupfs.memory_stat(memory)["rss"]
                master.cgroups.set_memory_limit(anon + args.page_cache)
                fault = DiskThrottle(cluster.target("master"), {"write_bps": args.bps}, journal=cluster.journal)
                fault_at = time.monotonic()
                fault.apply()
                verified = fault.verify()["write_bps"]
                sampler.start()
                with Progress(console=console, transient=True) as progress:
                    task = progress.add_task("throttled", total=args.seconds)
                    while (elapsed := time.monotonic() - fault_at) < args.seconds:
                        busy = flood.count(fault_at, "MQBrokerException", 2)
                        progress.update(task, completed=elapsed, description=f"code 2 answers {busy}")
                        time.sleep(0.25)
                sampler.stop.set()
                fault.revert()
                master.cgroups.set_memory_limit(None)
                busy = flood.matching(fault_at, "MQBrokerException", 2)
                words = flood.words(fault_at)
            puts = [int(m) for m in NOTIFYME.findall(master.log("store.log"))]
            return {"limit": anon + args.page_cache, "anon": anon, "verified": verified,
                    "first_busy_s": round(min(o.end for o in busy) - fault_at, 1) if busy else None,
                    "busy": collections.Counter(o.remark.split("]")[0] + "]" for o in busy), "words": words,
                    "longest_put_ms": max(puts, default=0), "puts_over_500ms": len(puts),
                    "oom_kills": oom_kills(memory), "stacks": sampler.stacks.most_common(4)}
        finally:
            cluster.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flush", choices=("ASYNC_FLUSH", "SYNC_FLUSH"), default="ASYNC_FLUSH")
    parser.add_argument("--bps", type=size, default=256 << 10, help="write_bps of disk_throttle")
    parser.add_argument("--page-cache", type=size, default=16 << 20,
                        help="memory limit = the master's anonymous memory + this")
    parser.add_argument("--seconds", type=float, default=40.0)
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--threads", type=int, default=32)
    parser.add_argument("--body", type=int, default=4000)
    args = parser.parse_args()
    console = Console()
    results = []
    for i in range(args.trials):
        console.print(f"trial {i + 1}/{args.trials}: {args.flush}, write_bps {args.bps}, page cache "
                      f"{args.page_cache >> 20} MiB above the anonymous memory, {args.threads} threads x {args.body} B")
        r = trial(args, console)
        results.append(r)
        v = r["verified"]
        console.print(f"  limit {r['limit'] >> 20} MiB (anon {r['anon'] >> 20} MiB); throttle verified: cgroup "
                      f"{v['measured']} B/s = {v['ratio']} x limit, probe share {v['probe_share']}")
        console.print(f"  first code-2 answer after {r['first_busy_s']} s; {dict(r['busy'])}; longest put in lock "
                      f"{r['longest_put_ms']} ms ({r['puts_over_500ms']} over 500 ms); OOM kills {r['oom_kills']}")
        console.print(f"  outcomes: {r['words']}")
        for stack, n in r["stacks"]:
            console.print(f"    {n * SAMPLE_S:6.1f} s in D: {stack}")
    hits = [r for r in results if r["first_busy_s"] is not None]
    console.print(f"flow control in {len(hits)} of {len(results)} trials within {args.seconds:.0f} s"
                  + (f", first answers after {sorted(r['first_busy_s'] for r in hits)} s" if hits else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What a blkio write limit (cgroup v1 `blkio.throttle.write_bps_device`, as `disk_throttle` sets it) does to each
way a broker writes: direct I/O, buffered writes left to the kernel flusher, buffered writes with fsync, and a
memory-mapped file with msync (how RocketMQ's commitlog is written). Each writer runs inside the throttled cgroup, on
a loop-mounted ext4 store of its own; the figures are the achieved rates against the limit.

    sudo .venv/bin/python benchmarks/faults_throttle_modes.py [--limit-mib 8] [--mib 32]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

from rich.console import Console
from rich.table import Table
from support import not_root

from faults.cleanup import cleanup
from faults.journal import Journal
from faults.system import cgroupfs, mounts
from harness.resources import LoopStore, NodeCgroups

ROOT = Path("/tmp/rmq-chaos-bench")
WRITER = r"""
import mmap, os, sys, time, json
mode, path, total = sys.argv[1], sys.argv[2], int(sys.argv[3])
chunk = 1 << 20
buf = mmap.mmap(-1, chunk, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS); buf.write(b"\x5a" * chunk)
t0 = time.monotonic()
if mode == "mmap+msync":
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600); os.ftruncate(fd, total)
    m = mmap.mmap(fd, total)
    for off in range(0, total, chunk):
        m[off:off + chunk] = bytes(buf); m.flush(off, chunk)
    m.close(); os.close(fd)
else:
    flags = os.O_WRONLY | os.O_CREAT | (os.O_DIRECT if mode == "direct" else 0)
    fd = os.open(path, flags, 0o600)
    for off in range(0, total, chunk):
        os.write(fd, buf)
        if mode == "buffered+fsync":
            os.fsync(fd)
    os.close(fd)
print(json.dumps({"seconds": time.monotonic() - t0}))
"""
MODES = ("direct", "buffered", "buffered+fsync", "mmap+msync")


def run_writer(mode: str, path: str, total: int, cgroup: str) -> float:
    argv = cgroupfs.join_argv([cgroup], [sys.executable, "-c", WRITER, mode, path, str(total)])
    out = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=600)
    seconds = json.loads(out.stdout)["seconds"]
    os.unlink(path)
    return total / seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit-mib", type=float, default=8.0, help="write limit, MiB/s")
    parser.add_argument("--mib", type=int, default=32, help="bytes each writer writes, MiB")
    args = parser.parse_args()
    if not_root("faults_throttle_modes"):
        return 2
    console = Console()
    base = ROOT / uuid.uuid4().hex[:8]
    state = base / "state"
    state.mkdir(parents=True)
    journal = Journal(state)
    limit = int(args.limit_mib * (1 << 20))
    total = args.mib << 20
    rows = []
    try:
        cg = NodeCgroups.create(journal, "bench", "writer", controllers=("blkio",))
        store = LoopStore.create(journal, str(base / "store.img"), str(base / "store"), total * 3, run_id="bench")
        blkio = cg.paths["blkio"]
        for mode in MODES:
            free = run_writer(mode, os.path.join(store.mount, "w"), total, blkio)
            cgroupfs.write(blkio, "blkio.throttle.write_bps_device", f"{mounts.device_number(store.device)} {limit}")
            limited = run_writer(mode, os.path.join(store.mount, "w"), total, blkio)
            cgroupfs.write(blkio, "blkio.throttle.write_bps_device", f"{mounts.device_number(store.device)} 0")
            rows.append((mode, free, limited))
        store.destroy()
        cg.destroy()
    finally:
        cleanup(state, all_owners=True)
        shutil.rmtree(base, ignore_errors=True)
    table = Table(title=f"{args.mib} MiB written per mode; limit {args.limit_mib:g} MiB/s (blkio v1, loop device)")
    for col in ("writer", "no limit MiB/s", "limited MiB/s", "limited / limit"):
        table.add_column(col)
    for mode, free, limited in rows:
        table.add_row(mode, f"{free / (1 << 20):.1f}", f"{limited / (1 << 20):.1f}", f"{limited / limit:.2f}")
    console.print(table)
    console.print("buffered writes without fsync land in the page cache; the kernel flusher writes them back outside "
                  "the cgroup's context, so cgroup v1 does not throttle them (until dirty-page limits block the "
                  "writer).")
    return 0


if __name__ == "__main__":
    sys.exit(main())

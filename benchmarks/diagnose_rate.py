"""Benchmark of `rmq-chaos diagnose`'s reading: a generated log directory (default 1 GiB: broker.log, store.log
with `[PAGECACHERT]` lines and a stalled slave's transfer timeouts, a client log with flow-control lines, as 8
files) plus a gzip file, diagnosed in this process (`harness.diagnose.scan` + `rank`, the command's work without the
printing). Prints MB/s (wall and CPU) and the load average; asserts nothing about speed (goal: 1 GiB under 60 s).

    .venv/bin/python benchmarks/diagnose_rate.py                       # 1 GiB plain + 64 MiB gzip
    .venv/bin/python benchmarks/diagnose_rate.py --size-mib 256 --keep --workdir /tmp/diag-bench
"""
from __future__ import annotations

import argparse
import gzip
import os
import shutil
import tempfile
import time
from pathlib import Path

from harness.diagnose import rank, scan

FILES = 8
NOISE = ("{t} INFO SendMessageThread_{n} - {n} the message put, topic ChaosTopic queueId {q} offset {o} and some "
         "more ordinary text of a busy broker log line\n")
RARE = (
    "{t} WARN GroupTransferService - transfer messsage to slave timeout, {o}\n",
    "{t} INFO StoreStatsService - [PAGECACHERT] TotalPut 15177, PutMessageDistributeTime [<=0ms]:0 [0~10ms]:10054 "
    "[10~50ms]:4645 [50~100ms]:340 [100~200ms]:65 [200~500ms]:65 [500ms~1s]:0 [1~2s]:1 [2~3s]:0 [3~4s]:0 [4~5s]:1 "
    "[5~10s]:1 [10s~]:5\n",
    "{t},451 WARNING RocketmqClient - the cached message count exceeds the threshold 1000, so do flow control, "
    "minOffset=1890, maxOffset=3090, count=1001, size=0 MiB, pullRequest=PullRequest [consumerGroup=stuck, "
    "messageQueue=MessageQueue [topic=ChaosTopic, brokerName=broker-a, queueId=1], nextOffset=3091]\n",
)
RARE_EVERY = 2000


def block(seed: int, lines: int = 20000) -> bytes:
    out = []
    for i in range(lines):
        t = f"2026-11-26 12:{(seed + i // 600) % 60:02d}:{(i // 10) % 60:02d}"
        if i % RARE_EVERY == 0:
            out.append(RARE[(seed + i // RARE_EVERY) % len(RARE)].format(t=t, o=seed * lines + i))
        else:
            out.append(NOISE.format(t=t, n=i % 64, q=i % 4, o=seed * lines + i))
    return "".join(out).encode()


def generate(root: Path, size: int, gz_size: int) -> None:
    root.mkdir(parents=True, exist_ok=True)
    blocks = [block(s) for s in range(8)]
    per_file = size // FILES
    for f in range(FILES):
        with open(root / f"node{f}.log", "wb") as out:
            written = 0
            while written < per_file:
                data = blocks[(f + written) % len(blocks)]
                out.write(data[: per_file - written])
                written += len(data)
    (root / "gz").mkdir()
    with gzip.open(root / "gz" / "client.log.gz", "wb", 1) as out:
        written = 0
        while written < gz_size:
            out.write(blocks[written % len(blocks)])
            written += len(blocks[0])


def measure(paths: list[str]) -> tuple[float, float, int, list[str]]:
    wall, cpu = time.perf_counter(), time.process_time()
    evidence, skipped = scan(paths)
    findings = rank(evidence)
    assert not skipped, skipped
    return (time.perf_counter() - wall, time.process_time() - cpu, evidence.bytes_read,
            [f"{f.mechanism.id} ({f.explained})" for f in findings])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mib", type=int, default=1024)
    ap.add_argument("--gz-mib", type=int, default=64, help="uncompressed size of the gzip file")
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    root = Path(args.workdir or tempfile.mkdtemp(prefix="diag-bench-"))
    try:
        if not (root / "node0.log").exists():
            t0 = time.perf_counter()
            generate(root, args.size_mib << 20, args.gz_mib << 20)
            print(f"generated {args.size_mib} MiB plain + {args.gz_mib} MiB in gzip in {root} "
                  f"({time.perf_counter() - t0:.1f} s)")
        print(f"load average before: {os.getloadavg()[0]:.2f}")
        for label, paths in (("plain", [str(p) for p in sorted(root.glob("node*.log"))]), ("gzip", [str(root / "gz")])):
            wall, cpu, size, found = measure(paths)
            print(f"{label}: {size / 1e6:.0f} MB in {wall:.1f} s wall ({size / 1e6 / wall:.0f} MB/s), "
                  f"{cpu:.1f} s CPU ({size / 1e6 / cpu:.0f} MB/s per core); findings: {', '.join(found)}")
        print(f"load average after: {os.getloadavg()[0]:.2f}")
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()

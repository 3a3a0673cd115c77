"""SEND_OK sends/s of the embedded cluster on this machine: 1 master (SYNC_MASTER, SYNC_FLUSH) + 1 slave, each store
on its own loop-mounted ext4, 1 KiB messages sent by N threads sharing one `remoting.Producer` (java-4.9.1) for a
fixed time. Needs root (loop mounts). Prints the rate, latency percentiles and the CPU time (user + system) the master
and the slave process spent per 1000 SEND_OK in the window, a figure that depends far less than the rate on what
else shares the 2 cores (the load runs on them too).

    sudo .venv/bin/python benchmarks/emulator_send_rate.py [--threads 32] [--seconds 20] [--version 4.9.1]
        [--body-size 1024]      # the seed scenario's flood: --threads 64 --body-size 4000 --file-size 4194304
        [--strace 5]            # also: system calls per SEND_OK of master and slave (strace -c -f) for 5 s

The system-call counts (strace slows the brokers while it is attached, the counts per send stay meaningful) do not
depend on what else runs on the machine the way rates do: `futex` counts the interpreter-lock and lock hand-offs
between threads, `sendto`/`sendmsg` the socket writes (responses, HA transfers).
"""
from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
from rich.console import Console
from rich.progress import Progress

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "emulator"))

from emu_cluster import EmuCluster  # noqa: E402
from emu_load import Flood  # noqa: E402

TOPIC = "BenchTopic"
WARMUP_S = 3.0


def ctx_switches(pid: int) -> int:
    """Voluntary + involuntary context switches of every thread of `pid` (threads that ended are not counted)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            for line in (task / "status").read_text().splitlines():
                if line.endswith("ctxt_switches:") or "ctxt_switches:" in line:
                    total += int(line.split()[1])
        except OSError:
            pass
    return total


def strace_counts(text: str) -> dict[str, int]:
    """{syscall: calls} of an `strace -c` table."""
    counts = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 5 and parts[0][0].isdigit() and parts[-1] != "total":
            counts[parts[-1]] = int(parts[3])
    return counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--version", default="4.9.1")
    parser.add_argument("--file-size", type=int, default=64 << 20, help="mappedFileSizeCommitLog")
    parser.add_argument("--body-size", type=int, default=1024)
    parser.add_argument("--strace", type=float, default=0.0, metavar="SECONDS",
                        help="attach strace -c -f to master and slave for this long, mid-window")
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
            procs = {role: psutil.Process(cluster.nodes[role].proc.pid) for role in ("master", "slave")}
            with Flood(cluster.producer(), TOPIC, args.threads, args.body_size) as flood:
                time.sleep(WARMUP_S)
                cpu0 = {role: p.cpu_times() for role, p in procs.items()}
                ctx0 = {role: ctx_switches(p.pid) for role, p in procs.items()}
                begin = time.monotonic()
                with Progress(console=console, transient=True) as progress:
                    task = progress.add_task("sending", total=args.seconds)
                    tracing: dict[str, tuple[subprocess.Popen, Path]] = {}
                    trace_span = [0.0, 0.0]
                    while (elapsed := time.monotonic() - begin) < args.seconds:
                        if args.strace and not tracing and elapsed >= (args.seconds - args.strace) / 2:
                            trace_span[0] = time.monotonic()
                            for role, p in procs.items():
                                out = Path(tmp) / f"strace-{role}.txt"
                                tracing[role] = (subprocess.Popen(["strace", "-c", "-f", "-o", str(out), "-p",
                                                                   str(p.pid)], stderr=subprocess.DEVNULL), out)
                        if tracing and not trace_span[1] and time.monotonic() - trace_span[0] >= args.strace:
                            trace_span[1] = time.monotonic()
                            for tracer, _ in tracing.values():
                                tracer.send_signal(signal.SIGINT)
                                tracer.wait(30)
                        ok = flood.count(begin, "SEND_OK")
                        progress.update(task, completed=elapsed, description=f"SEND_OK {ok / max(elapsed, 1e-9):,.0f}/s")
                        time.sleep(0.25)
                end = time.monotonic()
                times = {role: p.cpu_times() for role, p in procs.items()}
                ctx = {role: ctx_switches(p.pid) - ctx0[role] for role, p in procs.items()}
            cpu = {role: t.user + t.system - cpu0[role].user - cpu0[role].system for role, t in times.items()}
            sys_share = {role: (t.system - cpu0[role].system) / max(cpu[role], 1e-9) for role, t in times.items()}
            window = [o for o in flood.since(begin) if o.end <= end]
            ok = [o for o in window if o.outcome == "SEND_OK"]
            other = len(window) - len(ok)
            lat = sorted(o.latency_ms for o in ok)
            rate = len(ok) / (end - begin)
            console.print(f"RocketMQ profile {args.version}, SYNC_MASTER + SYNC_FLUSH, {args.body_size} B bodies, "
                          f"{args.threads} sender threads, {end - begin:.1f} s")
            console.print(f"SEND_OK: {len(ok)} ({rate:,.0f}/s), other outcomes: {other}")
            per_k = {role: c * 1000 / max(len(ok), 1) for role, c in cpu.items()}
            console.print(f"CPU s per 1000 SEND_OK: master {per_k['master']:.3f}, slave {per_k['slave']:.3f} "
                          f"(master {cpu['master'] / (end - begin):.0%} of a core, slave "
                          f"{cpu['slave'] / (end - begin):.0%}; system time {sys_share['master']:.0%} and "
                          f"{sys_share['slave']:.0%}); context switches per SEND_OK: master "
                          f"{ctx['master'] / max(len(ok), 1):.1f}, slave {ctx['slave'] / max(len(ok), 1):.1f}; "
                          f"load average {os.getloadavg()[0]:.2f}")
            if args.strace and trace_span[1]:
                traced_ok = sum(1 for o in ok if trace_span[0] <= o.end <= trace_span[1])
                console.print(f"system calls per SEND_OK while traced ({traced_ok} SEND_OK in "
                              f"{trace_span[1] - trace_span[0]:.1f} s):")
                for role, (_, out) in tracing.items():
                    counts = strace_counts(out.read_text())
                    top = sorted(counts.items(), key=lambda kv: -kv[1])[:8]
                    console.print(f"  {role}: total {sum(counts.values()) / max(traced_ok, 1):.1f}; "
                                  + ", ".join(f"{name} {n / max(traced_ok, 1):.2f}" for name, n in top))
            if lat:
                console.print(f"latency ms: p50 {statistics.median(lat):.1f}  p99 {lat[int(len(lat) * 0.99) - 1]:.1f}"
                              f"  max {lat[-1]:.1f}")
        finally:
            cluster.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

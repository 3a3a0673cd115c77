"""Measurements that prove a fault's effect: a write that fails with EROFS, a write that blocks (frozen
filesystem), and a direct-I/O bandwidth/IOPS probe run inside the node's blkio cgroup. The blocking and the direct-I/O
probes run as child processes (`python -m faults.probe ...`) tagged as ours, so the harness itself never hangs.

The direct-I/O probe also samples the cgroup's own I/O counters for the device while it runs (v1
`blkio.throttle.io_service_bytes_recursive` / `io_serviced_recursive`, v2 `io.stat`): a throttle limits the cgroup,
so the cgroup's total (probe plus whatever the node writes meanwhile) is what a limit is measured against, and the
probe's share of it is reported beside it."""
from __future__ import annotations

import argparse
import errno
import json
import mmap
import os
import subprocess
import sys
import threading
import time

from faults.errors import FaultError
from faults.system import mounts
from faults.system.procs import TAG_ENV, ProcId, wchan

PROBE_PREFIX = ".rmq-chaos-probe."
"""Probe files on a node's store are named `<store>/.rmq-chaos-probe.<name>`; removed when the fault is reverted."""
WARMUP_S = 0.15
"""Direct-I/O completions before this are left out of the rate: blk-throttle lets a first slice through unthrottled."""
BLOCKED_AFTER_S = 0.25
"""A probe write still unfinished (in D state) after this long counts as blocked."""
FREEZE_WAITS = ("percpu_rwsem_wait", "percpu_down_read", "__percpu_down_read", "__sb_start_write")
"""Where a writer waits on a frozen filesystem (its superblock's write lock, a percpu rw semaphore; on 6.x
`percpu_rwsem_wait`). A write in D state elsewhere (dirty-page throttling `balance_dirty_pages`, the ext4 journal
`wait_transaction_locked`, a slow device) is a busy store, not a frozen one."""
RUNNABLE_GRACE = 8
RUNNABLE_POLL_S = 0.01
PROBE_START_TIMEOUT_S = 10.0
STAT_EVERY_S = 0.01
"""The probe samples the cgroup's I/O counters this often while it runs."""
BURSTS = 5
"""With cgroup counters, the probe runs on (up to `--max-seconds`) until the counted amount after the warm-up is at
least this many times the largest single jump of the counter."""
V1_STAT_FILES = ("blkio.throttle.io_service_bytes_recursive", "blkio.throttle.io_serviced_recursive")
V1_DIRECTION = {"write": "Write", "read": "Read"}
V2_KEYS = {"write": ("wbytes", "wios"), "read": ("rbytes", "rios")}


def probe_path(mount: str, name: str) -> str:
    return os.path.join(mount, PROBE_PREFIX + name)


def erofs_probe(mount: str, name: str) -> dict:
    """Try to create and write a file on `mount`; evidence with the errno name (EROFS when read-only)."""
    path = probe_path(mount, name)
    err = mounts.write_probe(path)
    if err == 0:
        os.unlink(path)
    return {"probe": path, "errno": errno.errorcode.get(err, str(err)) if err else None}


def _env(tag: str) -> dict:
    return {**os.environ, TAG_ENV: tag, "PYTHONDONTWRITEBYTECODE": "1"}


def blocked_write_probe(path: str, tag: str, blocked_after_s: float = BLOCKED_AFTER_S) -> dict:
    """Write 4 KiB to a file from a child process; `blocked` when the child is still in D state after
    `blocked_after_s`, waiting where a frozen filesystem holds writers (`FREEZE_WAITS`; any D state where the kernel
    hides wchan). A child still runnable then (not scheduled yet on a loaded machine: it has not reached its write)
    is given up to `RUNNABLE_GRACE` times as long. A blocked child is sent SIGKILL (it dies once the filesystem is
    thawed)."""
    child = subprocess.Popen([sys.executable, "-m", "faults.probe", "write", path], env=_env(tag),
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    t0 = time.monotonic()
    ready = child.stdout.readline()  # "start" once the interpreter is up: time the write, not Python's start-up
    t1 = time.monotonic()
    try:
        child.wait(timeout=blocked_after_s)
        out = child.stdout.read()
        return {"blocked": False, "exit": child.returncode, "output": out.strip(), "waited_s": round(
            time.monotonic() - t1, 4)}
    except subprocess.TimeoutExpired:
        pid = ProcId.of(child.pid)
        state = pid.state() if pid else None
        while state == "R" and time.monotonic() - t1 < blocked_after_s * RUNNABLE_GRACE:
            time.sleep(RUNNABLE_POLL_S)
            state = pid.state()
        where = wchan(child.pid)
        if state is None or state == "Z":
            child.wait()
            return {"blocked": False, "exit": child.returncode, "output": child.stdout.read().strip(),
                    "waited_s": round(time.monotonic() - t1, 4)}
        evidence = {"blocked": state == "D" and (where in FREEZE_WAITS or where in ("", "0")), "pid": child.pid,
                    "state": state, "wchan": where, "waited_s": round(time.monotonic() - t1, 4),
                    "started": ready.strip() == "start", "startup_s": round(t1 - t0, 4)}
        child.kill()
        return evidence


def cgroup_io(cgroup: str, majmin: str, mode: str) -> tuple[int, int]:
    """(bytes, operations) the cgroup (with its descendants) has done on device `majmin` in direction `mode`
    (`write`/`read`): v1 blkio throttle counters, or v2 `io.stat`. (0, 0) before its first I/O there."""
    v1 = os.path.join(cgroup, V1_STAT_FILES[0])
    if os.path.exists(v1):
        out = []
        for name in V1_STAT_FILES:
            value = 0
            with open(os.path.join(cgroup, name), encoding="ascii") as f:
                for line in f:
                    parts = line.split()
                    if len(parts) == 3 and parts[0] == majmin and parts[1] == V1_DIRECTION[mode]:
                        value = int(parts[2])
            out.append(value)
        return out[0], out[1]
    with open(os.path.join(cgroup, "io.stat"), encoding="ascii") as f:
        for line in f:
            parts = line.split()
            if parts and parts[0] == majmin:
                fields = dict(p.split("=", 1) for p in parts[1:] if "=" in p)
                nbytes, nops = V2_KEYS[mode]
                return int(fields.get(nbytes, 0)), int(fields.get(nops, 0))
    return 0, 0


def dio_probe(path: str, tag: str, cgroups: list[str], *, mode: str, chunk: int, seconds: float,
              max_bytes: int, stat_cgroup: str | None = None, stat_device: str | None = None,
              stat_figure: str = "bytes", max_seconds: float | None = None) -> dict:
    """Run `python -m faults.probe dio` in `cgroups` and return its measurement (rate after the warm-up). With
    `stat_cgroup` and `stat_device` (`MAJ:MIN`) the result also has `cgroup`: that cgroup's byte and operation
    rates on the device over the same window (probe plus everything else in the cgroup), and the probe runs past
    `seconds` (up to `max_seconds`) until that window holds `BURSTS` times the largest jump of `stat_figure`
    (`bytes` or `ops`): `cgroup.settled` says whether it did."""
    longest = max(seconds, max_seconds or seconds)
    argv = [sys.executable, "-m", "faults.probe", "dio", path, "--mode", mode, "--chunk", str(chunk),
            "--seconds", str(seconds), "--max-seconds", str(longest), "--max-bytes", str(max_bytes)]
    for cg in cgroups:
        argv += ["--cgroup", cg]
    if stat_cgroup and stat_device:
        argv += ["--stat-cgroup", stat_cgroup, "--stat-device", stat_device, "--stat-figure", stat_figure]
    proc = subprocess.run(argv, env=_env(tag), capture_output=True, text=True, timeout=longest + 60)
    if proc.returncode != 0:
        raise FaultError(f"direct-I/O probe on {path} failed: {(proc.stderr.strip() or 'no output').splitlines()[-1]}")
    return json.loads(proc.stdout)


def rate_of(points: list[tuple[float, int]], warmup_s: float = WARMUP_S) -> float:
    """Least-squares slope (units/s) of cumulative amount over completion time, after the warm-up."""
    pts = [p for p in points if p[0] >= warmup_s]
    if len(pts) < 4:
        pts = points
    if len(pts) < 2:
        return float(points[-1][1]) / max(points[-1][0], 1e-9) if points else 0.0
    n = len(pts)
    mt = sum(t for t, _ in pts) / n
    mb = sum(b for _, b in pts) / n
    var = sum((t - mt) ** 2 for t, _ in pts)
    if var <= 0:
        return 0.0
    return sum((t - mt) * (b - mb) for t, b in pts) / var


class _CounterSampler(threading.Thread):
    """Samples the cgroup's counters every `STAT_EVERY_S` while the probe's I/O runs (its own completions can be
    seconds apart when the node's writes fill the throttle queue ahead of them)."""

    def __init__(self, cgroup: str, device: str, mode: str, t0: float) -> None:
        super().__init__(daemon=True)
        self.cgroup, self.device, self.mode, self.t0 = cgroup, device, mode, t0
        self.samples: list[tuple[float, int, int]] = [(0.0, *cgroup_io(cgroup, device, mode))]
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(STAT_EVERY_S):
            self.sample()

    def sample(self) -> None:
        self.samples.append((time.monotonic() - self.t0, *cgroup_io(self.cgroup, self.device, self.mode)))

    def settled(self, figure: int) -> bool:
        """True when the counted amount after the warm-up is at least `BURSTS` times the largest single jump of the
        counter (a throttle dispatches a node's large bios whole), so one burst moves the rate by <= 1/BURSTS."""
        pts = [(p[0], p[figure]) for p in self.samples if p[0] >= WARMUP_S]
        if len(pts) < 2:
            return False
        jumps = [b - a for (_, a), (_, b) in zip(pts, pts[1:], strict=False)]
        return pts[-1][1] - pts[0][1] >= BURSTS * max(max(jumps), 1)


def _dio(args: argparse.Namespace) -> dict:
    for cg in args.cgroup:
        with open(os.path.join(cg, "cgroup.procs"), "w", encoding="ascii") as f:
            f.write(str(os.getpid()))
    buf = mmap.mmap(-1, args.chunk, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    buf.write(b"\xa5" * args.chunk)
    if args.mode == "write":
        fd = os.open(args.path, os.O_WRONLY | os.O_CREAT | os.O_DIRECT, 0o600)
    else:
        fd = os.open(args.path, os.O_RDONLY | os.O_DIRECT)
        size = os.fstat(fd).st_size
    points: list[tuple[float, int]] = []
    done, ops, offset = 0, 0, 0
    t0 = time.monotonic()
    sampler = _CounterSampler(args.stat_cgroup, args.stat_device, args.mode, t0) if args.stat_cgroup else None
    figure = 1 if args.stat_figure == "bytes" else 2

    longest = max(args.seconds, args.max_seconds or 0.0)

    def more() -> bool:
        elapsed = time.monotonic() - t0
        if sampler is None or elapsed >= longest:
            return elapsed < args.seconds
        return elapsed < args.seconds or not sampler.settled(figure)

    if sampler is not None:
        sampler.start()
    try:
        while done < args.max_bytes and more():
            if args.mode == "write":
                n = os.pwrite(fd, buf, offset)
            else:
                if offset + args.chunk > size:
                    offset = 0
                n = os.preadv(fd, [buf], offset)
            offset += n
            done += n
            ops += 1
            points.append((time.monotonic() - t0, done))
    finally:
        os.close(fd)
        if sampler is not None:
            sampler.stop.set()
            sampler.join()
    elapsed = time.monotonic() - t0
    op_points = [(t, i + 1) for i, (t, _) in enumerate(points)]
    result = {"mode": args.mode, "bytes": done, "ops": ops, "chunk": args.chunk, "elapsed_s": round(elapsed, 4),
              "rate_bps": round(rate_of(points)), "iops": round(rate_of(op_points), 1),
              "mean_bps": round(done / elapsed) if elapsed > 0 else 0}
    if sampler is not None:
        sampler.sample()
        result["cgroup"] = _cgroup_rates(sampler.samples)
        result["cgroup"]["settled"] = sampler.settled(figure)
    return result


def _cgroup_rates(stats: list[tuple[float, int, int]]) -> dict:
    """The cgroup's rates over the probe's window (least-squares slopes after the warm-up, as the probe's own)."""
    t0, b0, o0 = stats[0]
    bytes_points = [(t, b - b0) for t, b, _ in stats]
    op_points = [(t, o - o0) for t, _, o in stats]
    return {"rate_bps": round(rate_of(bytes_points)), "iops": round(rate_of(op_points), 1),
            "bytes": stats[-1][1] - b0, "ops": stats[-1][2] - o0, "samples": len(stats)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m faults.probe", description=__doc__)
    sub = parser.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("write", help="write 4 KiB to a file (blocks on a frozen filesystem)")
    w.add_argument("path")
    d = sub.add_parser("dio", help="direct-I/O bandwidth probe")
    d.add_argument("path")
    d.add_argument("--mode", choices=("write", "read"), default="write")
    d.add_argument("--chunk", type=int, default=262144)
    d.add_argument("--seconds", type=float, default=0.6)
    d.add_argument("--max-bytes", type=int, default=64 << 20)
    d.add_argument("--cgroup", action="append", default=[])
    d.add_argument("--stat-cgroup", help="also sample this cgroup's I/O counters for --stat-device")
    d.add_argument("--stat-device", help="MAJ:MIN of the device whose counters are sampled")
    d.add_argument("--stat-figure", choices=("bytes", "ops"), default="bytes",
                   help="the counter whose largest jump decides how long the probe runs")
    d.add_argument("--max-seconds", type=float, default=None, help="longest run with --stat-cgroup")
    args = parser.parse_args(argv)
    if args.cmd == "write":
        print("start", flush=True)
        fd = os.open(args.path, os.O_WRONLY | os.O_CREAT, 0o600)
        os.write(fd, b"\0" * 4096)
        os.close(fd)
        print("written", flush=True)
        return 0
    print(json.dumps(_dio(args)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

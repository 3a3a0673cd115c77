"""Probes between hosts, for the network faults' verify: TCP connects (connected, refused, or cut: a timeout or a
local EPERM), connect round trips, and a transfer rate measured by a sink on the peer's host.

The sink (`python -m faults.net_probe sink --listen ADDR:PORT`, one JSON ready line `{"listen", "pid"}`) is started
on a peer's host by whoever manages that host (the host agent; a test) and named in the target's `extras["sinks"]`.
It reads and discards what each connection sends and writes back, at most every `REPORT_EVERY_S`, a line
`<seconds since the first byte> <bytes so far>`: the rate is measured where the bytes arrive, after the shaping, and
the sender's socket buffer does not count. `connect ADDR:PORT...` and `rate ADDR:PORT` print the same probes as
JSON, for tests and operators."""
from __future__ import annotations

import argparse
import json
import os
import socket
import struct
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from faults.probe import WARMUP_S, rate_of
from faults.relay_client import connect_result

SO_MAX_PACING_RATE = getattr(socket, "SO_MAX_PACING_RATE", 47)
REPORT_EVERY_S = 0.02
CHUNK = 65536
MIN_SPAN_S = 0.2
"""A transfer whose bytes reached the sink within less than this has no rate (`rate_bps` None): a queue ahead of
it (a busy shaped link) can hold it back and hand it over in one burst at the end of the window."""
CUT = ("timeout", "PermissionError")
"""Connect results that mean no packet came back: our DROP on the way out (EPERM) or in (no answer)."""
REACHED = ("connected", "ConnectionRefusedError")
"""Connect results that mean the path works (a refusal is the peer's RST)."""


def split_addr(spec: str) -> tuple[str, int]:
    host, _, port = spec.rpartition(":")
    return host, int(port)


def connect_all(targets: list[tuple[str, int]], timeout_s: float) -> list[str]:
    """`connect_result` of every (host, port), in parallel."""
    if not targets:
        return []
    with ThreadPoolExecutor(max_workers=min(16, len(targets))) as pool:
        return list(pool.map(lambda t: connect_result(t[0], t[1], timeout_s), targets))


def connect_rtt_ms(host: str, port: int, samples: int = 3, timeout_s: float = 5.0) -> list[float]:
    """Time of TCP connects (a refusal counts: it is one round trip too)."""
    out = []
    for _ in range(samples):
        t0 = time.monotonic()
        result = connect_result(host, port, timeout_s)
        if result not in REACHED:
            raise OSError(f"connect {host}:{port}: {result}")
        out.append((time.monotonic() - t0) * 1000)
    return out


def transfer_rate(host: str, port: int, seconds: float, timeout_s: float = 3.0, pace_bps: int | None = None,
                  longer: Callable[[], bool] | None = None, max_seconds: float | None = None) -> dict:
    """Send to the sink at host:port for `seconds`; the rate of what it received (least squares after the warm-up).
    `pace_bps` caps the sender's own pace (SO_MAX_PACING_RATE): TCP then sends small bursts instead of 64 KiB GSO
    packets, which a slow shaper passes a few times a second only (too coarse for a short probe). With `longer`, the
    transfer runs on past `seconds`, up to `max_seconds`, while `longer()` is true (e.g. a counter not settled yet)."""
    points: list[tuple[float, int]] = []
    stop = threading.Event()
    with socket.create_connection((host, port), timeout=timeout_s) as s:
        s.settimeout(0.2)
        if pace_bps:
            s.setsockopt(socket.SOL_SOCKET, SO_MAX_PACING_RATE, pace_bps)

        def send() -> None:
            block = bytes(CHUNK)
            while not stop.is_set():
                try:
                    s.send(block)
                except TimeoutError:
                    continue
                except OSError:
                    return

        sender = threading.Thread(target=send, daemon=True)
        sender.start()
        start = time.monotonic()
        pending, deadline = b"", start + seconds
        last = start + max(seconds, max_seconds or 0.0)

        def more() -> bool:
            now = time.monotonic()
            return now < deadline or (longer is not None and now < last and longer())

        try:
            while more():
                try:
                    data = s.recv(4096)
                except TimeoutError:
                    continue
                if not data:
                    break
                *lines, pending = (pending + data).split(b"\n")
                points += [(float(t), int(n)) for t, n in (line.split() for line in lines)]
        finally:
            stop.set()
            sender.join(timeout=1)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # reset: drop what is queued
    span = points[-1][0] - points[0][0] if points else 0.0
    rate = round(rate_of(points, WARMUP_S)) if span >= MIN_SPAN_S else None
    return {"rate_bps": rate, "samples": len(points),
            "bytes": points[-1][1] if points else 0, "seconds": round(points[-1][0], 3) if points else 0.0}


def _drain(conn: socket.socket) -> None:
    total, first, last = 0, 0.0, 0.0
    with conn:
        try:
            while data := conn.recv(CHUNK):
                now = time.monotonic()
                first = first or now
                total += len(data)
                if now - last >= REPORT_EVERY_S:
                    conn.sendall(f"{now - first:.6f} {total}\n".encode())
                    last = now
        except OSError:
            pass


def serve(listen: str) -> None:
    host, port = split_addr(listen)
    server = socket.create_server((host, port), backlog=64)
    print(json.dumps({"listen": f"{host}:{server.getsockname()[1]}", "pid": os.getpid()}), flush=True)
    while True:
        conn, _ = server.accept()
        threading.Thread(target=_drain, args=(conn,), daemon=True).start()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m faults.net_probe")
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("sink").add_argument("--listen", required=True, help="ADDR:PORT (port 0: any)")
    connect = sub.add_parser("connect")
    connect.add_argument("targets", nargs="+", help="ADDR:PORT")
    connect.add_argument("--timeout", type=float, default=1.0)
    rate = sub.add_parser("rate")
    rate.add_argument("target", help="ADDR:PORT of a sink")
    rate.add_argument("--seconds", type=float, default=1.0)
    args = parser.parse_args(argv)
    if args.cmd == "sink":
        serve(args.listen)
    elif args.cmd == "connect":
        results = connect_all([split_addr(t) for t in args.targets], args.timeout)
        print(json.dumps(dict(zip(args.targets, results, strict=True))))
    else:
        print(json.dumps(transfer_rate(*split_addr(args.target), args.seconds)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

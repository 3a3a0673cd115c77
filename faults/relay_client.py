"""Talking to an HA relay (`faults.relay`): its control socket, and measurements through its probe port (round-trip
time and echo throughput with our own bytes) and of its listening port (connection refused when cut)."""
from __future__ import annotations

import json
import socket
import threading
import time

from faults.errors import FaultError
from faults.probe import rate_of

CONTROL_TIMEOUT_S = 5.0


class RelayClient:
    def __init__(self, control: str) -> None:
        self.control = control

    def request(self, req: dict) -> dict:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(CONTROL_TIMEOUT_S)
            s.connect(self.control)
            s.sendall((json.dumps(req) + "\n").encode())
            buf = b""
            while not buf.endswith(b"\n"):
                chunk = s.recv(65536)
                if not chunk:
                    break
                buf += chunk
        answer = json.loads(buf)
        if not answer.get("ok"):
            raise FaultError(f"relay {self.control}: {answer.get('error')}")
        return answer

    def set_mode(self, mode: str, **kw) -> dict:
        return self.request({"cmd": "set", "mode": mode, **kw})

    def status(self) -> dict:
        return self.request({"cmd": "status"})


def connect_result(host: str, port: int, timeout_s: float = 1.0) -> str:
    """"connected" or the error name ("ConnectionRefusedError", "timeout", ...)."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return "connected"
    except TimeoutError:
        return "timeout"
    except OSError as e:
        return type(e).__name__


def probe_rtt_ms(port: int, samples: int = 2, timeout_s: float = 10.0) -> list[float]:
    """Round trips of one small message through the relay's probe port to its echo server."""
    out = []
    with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for i in range(samples):
            msg = f"rmq-chaos-probe-{i}\n".encode()
            t0 = time.monotonic()
            s.sendall(msg)
            got = b""
            while len(got) < len(msg):
                chunk = s.recv(len(msg) - len(got))
                if not chunk:
                    raise FaultError("relay probe: connection closed")
                got += chunk
            out.append((time.monotonic() - t0) * 1000)
    return out


def probe_throughput_bps(port: int, seconds: float, timeout_s: float = 10.0) -> dict:
    """Push bytes through the probe port for `seconds` and measure what comes back per second (after a warm-up)."""
    points: list[tuple[float, int]] = []
    stop = threading.Event()
    with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as s:
        def send() -> None:
            block = b"\x5a" * 16384
            try:
                while not stop.is_set():
                    s.sendall(block)
            except OSError:
                pass

        sender = threading.Thread(target=send, daemon=True)
        t0 = time.monotonic()
        sender.start()
        got = 0
        s.settimeout(0.5)
        while time.monotonic() - t0 < seconds:
            try:
                chunk = s.recv(65536)
            except TimeoutError:
                continue
            if not chunk:
                break
            got += len(chunk)
            points.append((time.monotonic() - t0, got))
        stop.set()
        s.shutdown(socket.SHUT_RDWR)
    sender.join(timeout=2)
    return {"bytes": got, "seconds": round(time.monotonic() - t0, 3), "rate_bps": round(rate_of(points, 0.1))}

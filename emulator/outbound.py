"""The broker's own outgoing calls (register with the name server, a slave fetching its master's topic configs):
one connection per address, one request at a time, a timeout per call."""
from __future__ import annotations

import socket
import threading

from remoting.codec import FrameReader, encode
from remoting.command import RemotingCommand

RECV_SIZE = 64 * 1024


class OutboundClient:
    def __init__(self, version: int) -> None:
        self.version = version
        self._socks: dict[str, socket.socket] = {}
        self._lock = threading.Lock()

    def invoke(self, addr: str, request: RemotingCommand, timeout_s: float) -> RemotingCommand:
        """Send `request` to `addr` and wait for its response; OSError/TimeoutError on failure (connection dropped)."""
        request.version = self.version
        with self._lock:
            sock = self._socks.get(addr)
            try:
                if sock is None:
                    host, port = addr.rsplit(":", 1)
                    sock = socket.create_connection((host, int(port)), timeout=timeout_s)
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    self._socks[addr] = sock
                sock.settimeout(timeout_s)
                sock.sendall(encode(request))
                reader = FrameReader()
                while True:
                    data = sock.recv(RECV_SIZE)
                    if not data:
                        raise ConnectionError(f"connection to {addr} closed")
                    for cmd in reader.feed(data):
                        if cmd.is_response and cmd.opaque == request.opaque:
                            return cmd
            except Exception:
                self._drop(addr)
                raise

    def _drop(self, addr: str) -> None:
        sock = self._socks.pop(addr, None)
        if sock is not None:
            sock.close()

    def close(self) -> None:
        with self._lock:
            for addr in list(self._socks):
                self._drop(addr)

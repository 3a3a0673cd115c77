"""Message ids. The client id (`UNIQ_KEY`) is made like `MessageClientIDSetter`: hex of IP + pid (2 bytes) + a
per-process random int (Java: the class loader's hash) + milliseconds since the start of the month (4 bytes) + a
counter (2 bytes). The offset id (`msgId` of a send response, `MessageExt.msgId`) is hex of the store host's
IP + port + commitlog offset (`MessageDecoder.createMessageId`)."""
from __future__ import annotations

import ipaddress
import itertools
import os
import random
import socket
import struct
import threading
import time

SIOCGIFADDR = 0x8915
_PRIVATE_V4 = (ipaddress.ip_network("10.0.0.0/8"), ipaddress.ip_network("172.16.0.0/12"),
               ipaddress.ip_network("192.168.0.0/16"))


def _interface_ipv4(name: str) -> bytes | None:
    try:
        import fcntl

        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            res = fcntl.ioctl(s.fileno(), SIOCGIFADDR, struct.pack("256s", name.encode()[:15]))
        return res[20:24]
    except (OSError, ImportError):
        return None


def local_ip() -> bytes:
    """`UtilAll.getIP()`: the first IPv4 address of the interfaces (in index order) that is not private, else the
    first private one; loopback counts as not private, so on Linux this is normally 127.0.0.1, as recorded."""
    private: bytes | None = None
    try:
        interfaces = socket.if_nameindex()
    except OSError:
        interfaces = []
    for _, name in interfaces:
        ip = _interface_ipv4(name)
        if ip is None or ip == b"\0\0\0\0":
            continue
        if any(ipaddress.IPv4Address(ip) in net for net in _PRIVATE_V4):
            private = private or ip
        else:
            return ip
    if private is not None:
        return private
    return struct.pack(">Q", int(time.time() * 1000))[4:]  # createFakeIP


def local_ip_string() -> str:
    return socket.inet_ntoa(local_ip())


def _month_start_ms(now_ms: int) -> tuple[int, int]:
    t = time.localtime(now_ms / 1000)
    start = time.mktime((t.tm_year, t.tm_mon, 1, 0, 0, 0, 0, 0, -1))
    year, month = (t.tm_year + 1, 1) if t.tm_mon == 12 else (t.tm_year, t.tm_mon + 1)
    nxt = time.mktime((year, month, 1, 0, 0, 0, 0, 0, -1))
    return int(start * 1000), int(nxt * 1000)


class UniqIdGenerator:
    """`MessageClientIDSetter.createUniqID()`. One per process is what Java has (`create_uniq_id`)."""

    def __init__(self, ip: bytes | None = None, pid: int | None = None, loader_hash: int | None = None) -> None:
        ip = local_ip() if ip is None else ip
        pid = os.getpid() if pid is None else pid
        loader_hash = random.getrandbits(31) if loader_hash is None else loader_hash
        self.fix_string = (ip + struct.pack(">HI", pid & 0xFFFF, loader_hash & 0xFFFFFFFF)).hex().upper()
        self._counter = itertools.count()
        self._lock = threading.Lock()
        self._start, self._next_start = _month_start_ms(int(time.time() * 1000))
        self._prefix = (-1, "")

    def create(self) -> str:
        now = time.time_ns() // 1_000_000
        at, prefix = self._prefix  # one attribute, so threads never pair a prefix with another millisecond
        if now != at:  # the prefix changes once a millisecond: a send in the same one reuses it
            if now >= self._next_start:
                with self._lock:
                    if now >= self._next_start:
                        self._start, self._next_start = _month_start_ms(now)
            prefix = f"{self.fix_string}{(now - self._start) & 0xFFFFFFFF:08X}"
            self._prefix = (now, prefix)
        return f"{prefix}{next(self._counter) & 0xFFFF:04X}"  # struct ">IH", in hex


_generator: UniqIdGenerator | None = None


def create_uniq_id() -> str:
    """A fresh UNIQ_KEY from the process-wide generator."""
    global _generator
    if _generator is None:
        _generator = UniqIdGenerator()
    return _generator.create()


def split_host(host: str | tuple[str, int]) -> tuple[str, int]:
    """`"ip:port"` (IPv6 as `[ip]:port` or bare `ip:port` with the last colon as separator) or a tuple."""
    if isinstance(host, tuple):
        return host[0], int(host[1])
    ip, _, port = host.rpartition(":")
    return ip.strip("[]"), int(port)


def host_bytes(host: str | tuple[str, int]) -> bytes:
    """The address and port as the stored format and ids carry them: 4 or 16 address bytes + int32 port."""
    ip, port = split_host(host)
    return ipaddress.ip_address(ip).packed + struct.pack(">i", port)


def format_host(ip_bytes: bytes, port: int) -> str:
    addr = ipaddress.ip_address(ip_bytes)
    return f"{addr}:{port}" if addr.version == 4 else f"[{addr}]:{port}"


def create_offset_msg_id(store_host: str | tuple[str, int], commitlog_offset: int) -> str:
    """`MessageDecoder.createMessageId`: upper-case hex of store IP, port and the commitlog offset."""
    return (host_bytes(store_host) + struct.pack(">q", commitlog_offset)).hex().upper()


def decode_offset_msg_id(msg_id: str) -> tuple[str, int]:
    """`MessageDecoder.decodeMessageId`: (store host `ip:port`, commitlog offset)."""
    raw = bytes.fromhex(msg_id)
    if len(raw) not in (16, 28):
        raise ValueError(f"offset msg id {msg_id!r} has {len(raw)} bytes, expected 16 (IPv4) or 28 (IPv6)")
    ip_len = 4 if len(raw) == 16 else 16
    (port,) = struct.unpack_from(">i", raw, ip_len)
    (offset,) = struct.unpack_from(">q", raw, ip_len + 4)
    return format_host(raw[:ip_len], port), offset

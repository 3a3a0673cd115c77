"""A stand-in broker for fault tests: keeps a commitlog-like file open for writing on its store and appends a record
to it every few ms (fsync'ed, so the writes are the node's own I/O on its store device, as a SYNC_FLUSH broker's;
write errors such as EROFS are counted and ignored, like the 4.9.1 slave), holds private
anonymous "heap" memory that it touches every second (so memory pressure swaps it), and answers `status` on a TCP
port (ready signal)."""
from __future__ import annotations

import argparse
import json
import mmap
import os
import selectors
import signal
import socket
import sys
import time

PAGE = mmap.PAGESIZE
LOG_WRAP = 8 << 20


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--store", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--heap", type=int, default=32 << 20)
    parser.add_argument("--interval-ms", type=float, default=20.0)
    parser.add_argument("--record-bytes", type=int, default=4096, help="bytes appended (and fsync'ed) per record")
    args = parser.parse_args(argv)
    record = b"r" * args.record_bytes
    heap = mmap.mmap(-1, args.heap, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    for off in range(0, args.heap, PAGE):
        heap[off] = 1
    os.makedirs(os.path.join(args.store, "commitlog"), exist_ok=True)
    log = open(os.path.join(args.store, "commitlog", "00000000000000000000"), "wb", buffering=0)  # noqa: SIM115
    stats = {"writes": 0, "errors": 0, "last_error": None, "pid": os.getpid()}
    stop = [False]
    signal.signal(signal.SIGTERM, lambda *_: stop.__setitem__(0, True))
    server = socket.create_server(("127.0.0.1", args.port), reuse_port=False)
    server.setblocking(False)
    sel = selectors.DefaultSelector()
    sel.register(server, selectors.EVENT_READ)
    next_touch = time.monotonic() + 1.0
    while not stop[0]:
        for key, _ in sel.select(timeout=args.interval_ms / 1000.0):
            try:
                conn, _ = key.fileobj.accept()
            except BlockingIOError:
                continue
            with conn:
                conn.sendall((json.dumps(stats) + "\n").encode())
        try:
            if log.tell() >= LOG_WRAP:
                log.seek(0)
            log.write(record)
            os.fsync(log.fileno())
            stats["writes"] += 1
        except OSError as e:
            stats["errors"] += 1
            stats["last_error"] = e.strerror
        if time.monotonic() >= next_touch:
            for off in range(0, args.heap, PAGE):
                heap[off] = (heap[off] + 1) & 0xFF
            next_touch = time.monotonic() + 1.0
    try:
        log.close()
    except OSError:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Run by test_remoting_gevent in a fresh interpreter: patch like Locust does, then use the Producer from many
greenlets against the scripted servers named on the command line; print what happened as JSON."""
from __future__ import annotations

from gevent import monkey

monkey.patch_all()

import gevent  # noqa: E402

import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

from remoting.errors import RemotingError  # noqa: E402
from remoting.message import Message  # noqa: E402
from remoting.outcome import outcome_of  # noqa: E402
from remoting.producer import Producer  # noqa: E402


class CountingSocket:
    """The connection's socket as its writers see it, counting `sendall` calls and the frames they carry."""

    def __init__(self, sock) -> None:
        self.sock, self.writes, self.frames = sock, 0, 0

    def sendall(self, data: bytes) -> None:
        self.writes += 1
        pos = 0
        while pos < len(data):  # each frame: int32 length, then that many bytes
            pos += 4 + int.from_bytes(data[pos:pos + 4], "big")
            self.frames += 1
        self.sock.sendall(data)

    def __getattr__(self, name):
        return getattr(self.sock, name)


def main() -> None:
    namesrv = sys.argv[1]
    report: dict = {}
    ticks = [0]
    running = [True]

    def ticker():
        while running[0]:
            ticks[0] += 1
            gevent.sleep(0.005)

    tick = gevent.spawn(ticker)
    with Producer(namesrv, "gevent_group", heartbeat=False) as producer:
        outcomes: list[str] = []
        producer.send(Message("Fast", b"warm-up"))  # makes the connection, whose writes are then counted
        conn = producer.client.connection(producer.routes.master_addr("broker-a"))
        counting = conn.sock = CountingSocket(conn.sock)

        def user():
            for _ in range(10):
                outcomes.append(outcome_of(producer.send(Message("Fast", b"m")))[0])

        gevent.joinall([gevent.spawn(user) for _ in range(200)], timeout=60)
        report["fast"] = outcomes.count("SEND_OK")
        report["connections"] = sum(1 for c in producer.client._table.values() if c.active)
        report["fast_writes"], report["fast_frames_written"] = counting.writes, counting.frames

        box: dict = {}

        def slow():
            box["slow"] = producer.send(Message("Flaky", b"slow"), 20000)

        def fast():
            try:
                producer.send(Message("Flaky", b"fast"), 150)
            except RemotingError as e:
                box["fast"] = outcome_of(e)[0]

        slow_g = gevent.spawn(slow)
        gevent.sleep(0.1)
        t0 = time.monotonic()
        fast_g = gevent.spawn(fast)
        gevent.joinall([slow_g, fast_g], timeout=30)
        report["slow_status"] = box["slow"].status
        report["slow_first_error"] = box["slow"].attempts[0].error
        report["fast_outcome"] = box.get("fast")
        report["ticks_during_timeouts"] = ticks[0]
        report["elapsed"] = time.monotonic() - t0
    running[0] = False
    tick.join()
    print(json.dumps(report))


if __name__ == "__main__":
    main()

"""The HA relay: a TCP relay of ours that the local backend puts on the slave's path to the master's HA port, shaping
the replication bytes on command: `pass`, `delay` (hold every chunk N ms), `throttle` (B bytes/s), `cut` (close the
listening socket, so new connections are refused, and drop the existing ones).

    python -m faults.relay --listen 127.0.0.1:PORT --upstream 127.0.0.1:HAPORT --control /path/relay.sock

Control: a unix socket, one JSON request per line, one JSON answer per line:
    {"cmd": "set", "mode": "delay", "delay_ms": 200, "direction": "both"}   direction: both | up | down
    {"cmd": "set", "mode": "throttle", "rate_bps": 1048576}
    {"cmd": "status"}      mode, links, bytes and measured rate per direction, measured hold time of recent chunks
"up" is client -> upstream (slave -> master), "down" is upstream -> client (master -> slave).
A second listener, the probe port, relays through the same shaping to an echo server inside the relay, so a fault can
measure the shaping with its own bytes without touching the HA connection."""
from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import signal
import sys
import time

CHUNK = 65536
QUEUE_BYTES = 4 << 20
WINDOW_S = 1.0
DIRECTIONS = ("up", "down")
MODES = ("pass", "delay", "throttle", "cut")


class Bucket:
    """Token bucket: `rate` bytes/s, burst of 20 ms (at least 4 KiB)."""

    def __init__(self) -> None:
        self.rate = 0
        self.tokens = 0.0
        self.last = time.monotonic()

    def reset(self, rate: int) -> None:
        self.rate, self.tokens, self.last = rate, 0.0, time.monotonic()

    @property
    def burst(self) -> int:
        return max(4096, int(self.rate * 0.02))

    async def take(self, n: int) -> None:
        while True:
            now = time.monotonic()
            self.tokens = min(self.burst, self.tokens + (now - self.last) * self.rate)
            self.last = now
            if self.tokens >= n:
                self.tokens -= n
                return
            await asyncio.sleep((n - self.tokens) / self.rate)


class Stats:
    def __init__(self) -> None:
        self.total = 0
        self.recent: collections.deque[tuple[float, int, float]] = collections.deque()

    def add(self, n: int, held_s: float) -> None:
        now = time.monotonic()
        self.total += n
        self.recent.append((now, n, held_s))
        while self.recent and self.recent[0][0] < now - 2 * WINDOW_S:
            self.recent.popleft()

    def snapshot(self) -> dict:
        now = time.monotonic()
        window = [r for r in self.recent if r[0] >= now - WINDOW_S]
        held = [r[2] * 1000 for r in window]
        return {"bytes": self.total, "rate_bps_1s": sum(r[1] for r in window) / WINDOW_S,
                "held_ms": {"n": len(held), "mean": round(sum(held) / len(held), 2) if held else None,
                            "max": round(max(held), 2) if held else None}}


class Shaping:
    def __init__(self) -> None:
        self.mode, self.delay_s, self.rate, self.directions = "pass", 0.0, 0, set(DIRECTIONS)

    def applies(self, direction: str) -> bool:
        return direction in self.directions


class Relay:
    def __init__(self, listen: tuple[str, int], upstream: tuple[str, int], control: str, probe_port: int) -> None:
        self.listen, self.upstream, self.control, self.probe_port = listen, upstream, control, probe_port
        self.shaping = Shaping()
        self.buckets = {d: Bucket() for d in DIRECTIONS}
        self.stats = {d: Stats() for d in DIRECTIONS}
        self.links: set[asyncio.Task] = set()
        self.server: asyncio.base_events.Server | None = None
        self.echo_port = 0
        self.stopped = asyncio.Event()

    async def start(self) -> None:
        echo = await asyncio.start_server(self._echo, "127.0.0.1", 0)
        self.echo_port = echo.sockets[0].getsockname()[1]
        probe = await asyncio.start_server(self._probe_link, "127.0.0.1", self.probe_port)
        self.probe_port = probe.sockets[0].getsockname()[1]
        await self._listen()
        if os.path.exists(self.control):
            os.unlink(self.control)
        await asyncio.start_unix_server(self._control, self.control)

    async def _listen(self) -> None:
        self.server = await asyncio.start_server(self._link, self.listen[0], self.listen[1], reuse_address=True)
        self.listen = (self.listen[0], self.server.sockets[0].getsockname()[1])

    async def _echo(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(CHUNK):
                writer.write(data)
                await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()

    async def _link(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await self._relay(reader, writer, self.upstream, self.buckets, self.stats, track=True)

    async def _probe_link(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        buckets = {d: Bucket() for d in DIRECTIONS}
        stats = {d: Stats() for d in DIRECTIONS}
        await self._relay(reader, writer, ("127.0.0.1", self.echo_port), buckets, stats, track=False)

    async def _relay(self, reader, writer, upstream, buckets, stats, track: bool) -> None:
        task = asyncio.current_task()
        if track:
            self.links.add(task)
        try:
            up_reader, up_writer = await asyncio.open_connection(*upstream)
        except OSError:
            writer.close()
            self.links.discard(task)
            return
        try:
            await asyncio.gather(self._pipe("up", reader, up_writer, buckets, stats),
                                 self._pipe("down", up_reader, writer, buckets, stats))
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            for w in (writer, up_writer):
                w.transport.abort()
            self.links.discard(task)

    async def _pipe(self, direction, reader, writer, buckets, stats) -> None:
        queue: asyncio.Queue = asyncio.Queue()
        room = asyncio.Condition()
        queued = [0]

        async def pump_in() -> None:
            while data := await reader.read(CHUNK):
                async with room:
                    await room.wait_for(lambda: queued[0] < QUEUE_BYTES)
                    queued[0] += len(data)
                await queue.put((time.monotonic(), data))
            await queue.put(None)

        async def pump_out() -> None:
            while (item := await queue.get()) is not None:
                t_recv, data = item
                sh = self.shaping
                if sh.mode == "delay" and sh.applies(direction):
                    wait = t_recv + sh.delay_s - time.monotonic()
                    if wait > 0:
                        await asyncio.sleep(wait)
                if self.shaping.mode == "throttle" and self.shaping.applies(direction):
                    bucket = buckets[direction]
                    if bucket.rate != self.shaping.rate:
                        bucket.reset(self.shaping.rate)
                    for i in range(0, len(data), bucket.burst):
                        piece = data[i:i + bucket.burst]
                        await bucket.take(len(piece))
                        writer.write(piece)
                        await writer.drain()
                else:
                    writer.write(data)
                    await writer.drain()
                stats[direction].add(len(data), time.monotonic() - t_recv)
                async with room:
                    queued[0] -= len(data)
                    room.notify_all()
            if writer.can_write_eof():
                writer.write_eof()

        await asyncio.gather(pump_in(), pump_out())

    async def set_mode(self, req: dict) -> None:
        mode = req.get("mode", "pass")
        if mode not in MODES:
            raise ValueError(f"mode {mode!r} not in {MODES}")
        direction = req.get("direction", "both")
        if direction not in ("both", *DIRECTIONS):
            raise ValueError(f"direction {direction!r} not in both, up, down")
        sh = self.shaping
        if mode == "delay" and float(req.get("delay_ms", 0)) <= 0:
            raise ValueError("delay needs delay_ms > 0")
        if mode == "throttle" and int(req.get("rate_bps", 0)) <= 0:
            raise ValueError("throttle needs rate_bps > 0")
        sh.mode = mode
        sh.delay_s = float(req.get("delay_ms", 0)) / 1000.0
        sh.rate = int(req.get("rate_bps", 0))
        sh.directions = set(DIRECTIONS) if direction == "both" else {direction}
        if mode == "cut":
            if self.server is not None:
                self.server.close()
                self.server = None
            for t in list(self.links):
                t.cancel()
        elif self.server is None:
            await self._listen()

    def status(self) -> dict:
        sh = self.shaping
        return {"mode": sh.mode, "delay_ms": sh.delay_s * 1000, "rate_bps": sh.rate,
                "direction": "both" if sh.directions == set(DIRECTIONS) else next(iter(sh.directions)),
                "listening": self.server is not None, "listen": f"{self.listen[0]}:{self.listen[1]}",
                "upstream": f"{self.upstream[0]}:{self.upstream[1]}", "probe_port": self.probe_port,
                "links": len(self.links), "pid": os.getpid(),
                "traffic": {d: self.stats[d].snapshot() for d in DIRECTIONS}}

    async def _control(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while line := await reader.readline():
                try:
                    req = json.loads(line)
                    if req.get("cmd") == "set":
                        await self.set_mode(req)
                    elif req.get("cmd") == "stop":
                        self.stopped.set()
                    elif req.get("cmd") != "status":
                        raise ValueError(f"cmd {req.get('cmd')!r} not in set, status, stop")
                    answer = {"ok": True, **self.status()}
                except (ValueError, TypeError) as e:
                    answer = {"ok": False, "error": str(e)}
                writer.write((json.dumps(answer) + "\n").encode())
                await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()


def _addr(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return host or "127.0.0.1", int(port)


async def _main(args: argparse.Namespace) -> None:
    relay = Relay(_addr(args.listen), _addr(args.upstream), args.control, args.probe_port)
    await relay.start()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, relay.stopped.set)
    print(json.dumps({"ready": True, **relay.status()}), flush=True)
    await relay.stopped.wait()
    if os.path.exists(args.control):
        os.unlink(args.control)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m faults.relay", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--listen", required=True, help="HOST:PORT the slave connects to (PORT 0: any free port)")
    parser.add_argument("--upstream", required=True, help="HOST:PORT of the master's HA port")
    parser.add_argument("--control", required=True, help="path of the unix control socket")
    parser.add_argument("--probe-port", type=int, default=0, help="port of the probe listener (0: any free port)")
    asyncio.run(_main(parser.parse_args(argv)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

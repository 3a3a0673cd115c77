"""Does the consumer side keep up with the load it consumes? Consumer processes (`loads.consumers.ConsumerFleet`,
processing 0) on a running cluster's topic: first a backlog of `--backlog` messages drained from the first offset
(deliveries/s at full speed), then `--rate` sends/s for `--seconds` while they consume (the lag: sent and not yet
consumed, sampled every second; bounded when it does not grow). Prints deliveries/s, the consumer processes' CPU
(user + system, psutil) per message, and the lag. A figure, not a test.

    rmq-chaos cluster up scenarios/slave-readonly-default.yaml --program apache --detach --out /tmp/b/runs
    .venv/bin/python benchmarks/consumers_throughput.py --namesrv 127.0.0.1:9876 --topic ChaosTopic \
        [--backlog 20000] [--rate 1000] [--seconds 20] [--consumers 1] [--threads 20]

(with `--program apache` run it inside the cluster's network namespace, e.g. `nsenter`, or on the emulator once it
serves consumers). Every delivery still makes its consume row and journal line; consumption is counted from the
rows in part files, so it lags the listeners by up to the 1 s flush interval.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import pyarrow.parquet as pq
from support import cpu_seconds

from loads.consumer_spec import parse_group
from loads.consumers import ConsumerFleet
from remoting.message import Message
from remoting.producer import Producer

SENDERS = 16


_seen_parts: dict[Path, tuple[list[str], int]] = {}


def consumed(run_dir: Path, fleet: ConsumerFleet, prefix: str) -> tuple[set[str], int]:
    """Keys of this benchmark consumed (listener returned), and all deliveries, from the part files written so far
    (every second; a part never changes, so each is read once)."""
    keys: set[str] = set()
    total = 0
    for path in sorted((run_dir / "consumes").glob("part-*.parquet")):
        if path not in _seen_parts:
            t = pq.read_table(path, columns=["key", "done_ns"]).to_pydict()
            _seen_parts[path] = ([k for k, d in zip(t["key"], t["done_ns"], strict=True)
                                  if d is not None and k and k.startswith(prefix)], len(t["key"]))
        got, n = _seen_parts[path]
        keys.update(got)
        total += n
    return keys, total


def send_all(producer: Producer, topic: str, keys: list[str], rate: float | None, sent: list[str]) -> None:
    """Send `keys` from `SENDERS` threads, paced to `rate` sends/s overall when given."""
    start = time.monotonic()
    lock = threading.Lock()
    it = iter(enumerate(keys))

    def run() -> None:
        while True:
            with lock:
                nxt = next(it, None)
            if nxt is None:
                return
            i, key = nxt
            if rate:
                delay = start + i / rate - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
            if producer.send(Message(topic, b"b" * 128, keys=key), 5000).status == "SEND_OK":
                sent.append(key)

    threads = [threading.Thread(target=run, daemon=True) for _ in range(SENDERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--namesrv", required=True)
    p.add_argument("--topic", required=True)
    p.add_argument("--backlog", type=int, default=20000)
    p.add_argument("--rate", type=float, default=1000.0)
    p.add_argument("--seconds", type=float, default=20.0)
    p.add_argument("--consumers", type=int, default=1)
    p.add_argument("--threads", type=int, default=20)
    args = p.parse_args()

    run_id = f"bench-{uuid.uuid4().hex[:8]}"
    run_dir = Path(tempfile.mkdtemp(prefix="rmq-consumers-bench-"))
    producer = Producer(args.namesrv, f"{run_id}-producer")
    backlog = [f"{run_id}:w0:{i}" for i in range(args.backlog)]
    sent: list[str] = []
    t0 = time.monotonic()
    send_all(producer, args.topic, backlog, None, sent)
    print(f"backlog: {len(sent)} SEND_OK of {args.backlog} in {time.monotonic() - t0:.1f} s")

    group = {"name": run_id, "consumers": args.consumers, "threads": args.threads,
             "consume_from": "CONSUME_FROM_FIRST_OFFSET"}
    with ConsumerFleet([parse_group(group)], args.namesrv, args.topic, run_dir, run_id) as fleet:
        pids = fleet.pids()
        cpu0, t0 = cpu_seconds(pids, skip_gone=True), time.monotonic()
        want = set(sent)
        while True:
            keys, total = consumed(run_dir, fleet, run_id)
            if want <= keys:
                break
            time.sleep(0.2)
        dt, cpu = time.monotonic() - t0, cpu_seconds(pids, skip_gone=True) - cpu0
        print(f"drain: {total} deliveries ({len(want)} of the backlog) in {dt:.1f} s: {total / dt:,.0f} "
              f"deliveries/s, {cpu:.1f} consumer CPU s, {cpu / max(total, 1) * 1e6:.0f} CPU us per message")

        steady = [f"{run_id}:w0:{args.backlog + i}" for i in range(int(args.rate * args.seconds))]
        sent_steady: list[str] = []
        sender = threading.Thread(target=send_all, args=(producer, args.topic, steady, args.rate, sent_steady))
        cpu0, t0, before = cpu_seconds(pids, skip_gone=True), time.monotonic(), total
        sender.start()
        lags = []
        while sender.is_alive():
            time.sleep(1.0)
            keys, total = consumed(run_dir, fleet, run_id)
            lags.append(len(set(sent_steady) - keys))
        sender.join()
        dt, cpu = time.monotonic() - t0, cpu_seconds(pids, skip_gone=True) - cpu0
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            keys, total = consumed(run_dir, fleet, run_id)
            if set(sent_steady) <= keys:
                break
            time.sleep(0.2)
        left = len(set(sent_steady) - keys)
        n = total - before
        print(f"steady: {len(sent_steady)} SEND_OK at {len(sent_steady) / dt:,.0f}/s for {dt:.1f} s, {n} "
              f"deliveries, {cpu / max(n, 1) * 1e6:.0f} consumer CPU us per message; lag per second (sent, not "
              f"consumed): {lags}; max {max(lags, default=0)}; {left} left 30 s after the last send: "
              f"{'bounded' if left == 0 and lags and max(lags) < args.rate * 5 else 'NOT bounded'}")
        rows = fleet.stop()
    producer.close()
    print(f"rows written: {rows}; run dir {run_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

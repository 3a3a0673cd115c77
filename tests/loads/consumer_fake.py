"""A stand-in for `remoting.consumer.PushConsumer` for the consumer process's own tests (`--factory
consumer_fake:FakePushConsumer`): no broker, but the same listener contract and the offset habit that matters for
the records: a message's offset is committed (appended to `<FAKE_CONSUMER_DIR>/<instance>.offsets` with one
unbuffered write, as a broker would hold it) only after its listener returned, and a new process of the instance
starts from the first offset not committed, so what a killed process had in its listeners is delivered again.

Environment: FAKE_CONSUMER_DIR (required), FAKE_RUN_ID (key prefix), FAKE_MESSAGES (stop after that many offsets;
default unlimited), FAKE_INTERVAL_S (pause between deliveries of one thread, default 0.002)."""
from __future__ import annotations

import os
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from remoting.route import MessageQueue
from remoting.stored import MessageExt


@dataclass
class FakeContext:
    message_queue: MessageQueue
    broker_id: int
    pulled_ns: int


class FakePushConsumer:
    def __init__(self, namesrv_addr, group, profile="java-4.9.1", *, instance_name=None, consume_threads=20,
                 consume_from="CONSUME_FROM_LAST_OFFSET", **_):
        self.group, self.threads = group, consume_threads
        self.instance = re.sub(r"\.r\d+$", "", instance_name or "DEFAULT")
        self.client_id = f"127.0.0.1@{instance_name}"
        self.dir = Path(os.environ["FAKE_CONSUMER_DIR"])
        self.run_id = os.environ.get("FAKE_RUN_ID", "run-1")
        self.limit = int(os.environ.get("FAKE_MESSAGES", "0")) or None
        self.interval_s = float(os.environ.get("FAKE_INTERVAL_S", "0.002"))
        self.topic = None
        self.listener = None
        self._stop = threading.Event()
        self._lock = threading.Lock()

    def subscribe(self, topic, expression="*"):
        self.topic = topic

    def register_listener(self, fn):
        self.listener = fn

    def start(self):
        path = self.dir / f"{self.instance}.offsets"
        done = {int(x) for x in path.read_text().split()} if path.exists() else set()
        self._next = 0
        while self._next in done:
            self._next += 1
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        for i in range(self.threads):
            threading.Thread(target=self._run, name=f"ConsumeMessageThread_{i + 1}", daemon=True).start()

    def _take(self):
        with self._lock:
            if self.limit is not None and self._next >= self.limit:
                return None
            self._next += 1
            return self._next - 1

    def _run(self):
        queue = MessageQueue(self.topic, "broker-a", 0)
        while not self._stop.is_set():
            offset = self._take()
            if offset is None:
                return
            now = time.time_ns()
            msg = MessageExt(topic=self.topic, queue_id=0, queue_offset=offset, commitlog_offset=offset * 100,
                             body=b"x" * 16, properties={"KEYS": f"{self.run_id}:w0:{offset} extra",
                                                         "UNIQ_KEY": f"U{offset:08d}"},
                             born_timestamp=now // 1_000_000, store_timestamp=now // 1_000_000)
            try:
                result = self.listener([msg], FakeContext(queue, 0, now))
            except Exception:
                result = "RECONSUME_LATER"
            if not self._stop.is_set():
                os.write(self._fd, f"{offset}\n".encode())
            time.sleep(self.interval_s)
            del result

    def shutdown(self):
        self._stop.set()


def committed(directory: Path, instance: str) -> list[int]:
    path = directory / f"{instance}.offsets"
    return [int(x) for x in path.read_text().split()] if path.exists() else []

"""`ConsumerOffsetManager`: the committed offset of each group on each queue (`topic@group` -> {queueId: offset}),
persisted to `<storePathRootDir>/config/consumerOffset.json` in fastjson's pretty form (as 4.9.1 writes it, the
previous file kept as `.bak`) every `flushConsumerOffsetInterval` ms and at shutdown, loaded at start; a slave
takes its master's table by SlaveSynchronize (`replace_all`). Also `DelayOffsetManager`'s file
(`config/delayOffset.json`, the schedule service's per-level progress) shares the same persistence."""
from __future__ import annotations

import os
import threading

from emulator.logs import broker_log
from remoting import fastjson

TOPIC_GROUP_SEPARATOR = "@"


def pretty_offset_table(table: dict[str, dict[int, int]]) -> str:
    """`JSON.toJSONString(wrapper, true)` of an `offsetTable` of maps Integer -> Long, as the real 4.9.1 wrote it:
    tab indents, the inner maps' bare integer keys on the opening line (`{0:2,1:5\\n\\t\\t}`)."""
    if not table:
        return '{\n\t"offsetTable":{}\n}'
    rows = []
    for key, offsets in table.items():
        inner = ",".join(f"{q}:{o}" for q, o in offsets.items())
        rows.append(f'\t\t{fastjson.dumps(key)}:{{{inner}\n\t\t}}')
    return '{\n\t"offsetTable":{\n' + ",\n".join(rows) + "\n\t}\n}"


def persist_text(path: str, text: str) -> None:
    """`MixAll.string2File`: write `.tmp`, keep the previous file as `.bak`, rename."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        if os.path.exists(path):
            os.replace(path, path + ".bak")
        os.replace(tmp, path)
    except OSError as e:
        broker_log.error("persist file %s exception %s", path, e)


def load_text(path: str) -> str | None:
    """`ConfigManager.load`: the file, or its `.bak` when the file is missing or empty."""
    for candidate in (path, path + ".bak"):
        try:
            with open(candidate, encoding="utf-8") as f:
                text = f.read()
        except FileNotFoundError:
            continue
        if text.strip("\0 \n\t"):
            broker_log.info("load %s OK", candidate)
            return text
    return None


def parse_offset_table(text: str) -> dict[str, dict[int, int]]:
    doc = fastjson.loads(text) or {}
    return {key: {int(q): int(o) for q, o in (offsets or {}).items()}
            for key, offsets in (doc.get("offsetTable") or {}).items()}


class ConsumerOffsetManager:
    def __init__(self, store_root: str) -> None:
        self.path = os.path.join(store_root or ".", "config", "consumerOffset.json")
        self.table: dict[str, dict[int, int]] = {}
        self._lock = threading.Lock()

    def load(self) -> None:
        text = load_text(self.path)
        if text is not None:
            self.table = parse_offset_table(text)

    def persist(self) -> None:
        with self._lock:
            text = pretty_offset_table({k: dict(v) for k, v in self.table.items()})
        persist_text(self.path, text)

    def commit(self, client_host: str, group: str, topic: str, queue_id: int, offset: int) -> None:
        key = f"{topic}{TOPIC_GROUP_SEPARATOR}{group}"
        with self._lock:
            offsets = self.table.setdefault(key, {})
            previous = offsets.get(queue_id)
            offsets[queue_id] = offset
        if previous is not None and offset < previous:
            broker_log.warning("[NOTIFYME]update consumer offset less than store. clientHost=%s, key=%s, queueId=%d, "
                               "requestOffset=%d, storeOffset=%d", client_host, key, queue_id, offset, previous)

    def query(self, group: str, topic: str, queue_id: int) -> int:
        """The committed offset, -1 when none."""
        offsets = self.table.get(f"{topic}{TOPIC_GROUP_SEPARATOR}{group}")
        if offsets is None:
            return -1
        return offsets.get(queue_id, -1)

    def topics_of_group(self, group: str) -> list[str]:
        """`whichTopicByConsumer`."""
        out = []
        for key in list(self.table):
            topic, _, g = key.partition(TOPIC_GROUP_SEPARATOR)
            if g == group:
                out.append(topic)
        return out

    def wrapper_json(self) -> bytes:
        """GET_ALL_CONSUMER_OFFSET's body (`ConsumerOffsetSerializeWrapper`, compact)."""
        with self._lock:
            return fastjson.dumps({"offsetTable": {k: dict(v) for k, v in self.table.items()}}).encode()

    def replace_all(self, text: str | bytes) -> None:
        """Slave: the master's table put over ours (`SlaveSynchronize.syncConsumerOffset`), then persisted."""
        if isinstance(text, bytes | bytearray):
            text = bytes(text).decode("utf-8")
        table = parse_offset_table(text)
        with self._lock:
            self.table.update(table)
        self.persist()

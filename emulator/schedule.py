"""Delayed delivery as 4.9.1 does it: a message put with a `DELAY` level (a send-back to `%RETRY%<group>`, or a
producer's delayed message) is stored in `SCHEDULE_TOPIC_XXXX`, queue `level - 1`, its real topic and queue kept in
the `REAL_TOPIC` / `REAL_QID` properties (`put_inner`). The `ScheduleMessageService` (master only) reads each level's
queue from its offset every 100 ms and puts every message whose time is up (store time + the level's delay from
`messageDelayLevel`) into its real topic and queue, properties as they were (4.9.1 leaves `DELAY` in the stored
properties string); progress per level is `config/delayOffset.json`, persisted every `flushDelayOffsetInterval` and
at shutdown in fastjson's pretty form. A slave writes its master's compact string to that file
(`SlaveSynchronize.syncDelayOffset`). Unlike 4.9.1 the consume queue's tags code is not the delivery time: the due
time is computed from the message's store time when read."""
from __future__ import annotations

import os
import threading
import time

from emulator.consumer_offsets import load_text, persist_text
from emulator.logs import broker_log
from remoting import fastjson
from remoting.message import PROPERTY_DELAY_TIME_LEVEL, PROPERTY_REAL_QUEUE_ID, PROPERTY_REAL_TOPIC
from remoting.stored import decode_stored_message, encode_stored_message

SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
SCAN_PERIOD_S = 0.1
UNITS_MS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_delay_levels(text: str) -> dict[int, int]:
    """`messageDelayLevel` ("1s 5s 10s ...") -> {level: delay ms}, levels from 1."""
    levels = {}
    for i, word in enumerate(text.split(), start=1):
        unit = UNITS_MS.get(word[-1:])
        if unit is None or not word[:-1].isdigit():
            raise ValueError(f"messageDelayLevel: '{word}' is not a number followed by one of s, m, h, d")
        levels[i] = int(word[:-1]) * unit
    return levels


def pretty_level_offsets(offsets: dict[int, int]) -> str:
    """`DelayOffsetSerializeWrapper` pretty, as 4.9.1 wrote it: `{\\n\\t"offsetTable":{1:1,3:1\\n\\t}\\n}`."""
    if not offsets:
        return '{\n\t"offsetTable":{}\n}'
    return '{\n\t"offsetTable":{' + ",".join(f"{k}:{v}" for k, v in sorted(offsets.items())) + "\n\t}\n}"


def put_inner(ctx, *, topic: str, queue_id: int, body: bytes, properties: dict[str, str], born_timestamp: int,
              born_host: str | tuple[str, int], flag: int = 0, sys_flag: int = 0, reconsume_times: int = 0,
              divert: bool = True):
    """Store one message the broker makes itself (send-back, schedule delivery); a `DELAY` level > 0 diverts it to
    `SCHEDULE_TOPIC_XXXX` as `CommitLog.putMessage` does (`divert=False`: the schedule's delivery, whose DELAY 4.9.1
    clears from the map but not from the properties string it stores). Returns the store's completion ((status, result))."""
    props = dict(properties)
    level = int(props.get(PROPERTY_DELAY_TIME_LEVEL) or 0)
    if divert and level > 0 and topic != SCHEDULE_TOPIC:
        max_level = len(ctx.schedule.levels) if ctx.schedule is not None else 18
        level = min(level, max_level)
        props[PROPERTY_DELAY_TIME_LEVEL] = str(level)
        props[PROPERTY_REAL_TOPIC] = topic
        props[PROPERTY_REAL_QUEUE_ID] = str(queue_id)
        topic, queue_id = SCHEDULE_TOPIC, level - 1
    encoded = bytearray(encode_stored_message(
        topic=topic, queue_id=queue_id, body=body, properties=props, queue_offset=0, commitlog_offset=0,
        born_timestamp=born_timestamp, born_host=born_host, store_timestamp=0, store_host=ctx.store_host, flag=flag,
        sys_flag=sys_flag & ~0x30, reconsume_times=reconsume_times))
    return ctx.store.async_put_message(encoded, topic, queue_id, False)


class ScheduleMessageService(threading.Thread):
    def __init__(self, ctx) -> None:
        super().__init__(name="ScheduleMessageTimerThread", daemon=True)
        self.ctx = ctx
        self.levels = parse_delay_levels(ctx.config.get("messageDelayLevel") or "")
        self.path = os.path.join(ctx.config.get("storePathRootDir") or ".", "config", "delayOffset.json")
        self.offsets: dict[int, int] = {}
        self._lock = threading.Lock()
        self._stopped = threading.Event()

    def load(self) -> None:
        text = load_text(self.path)
        if text is not None:
            doc = fastjson.loads(text) or {}
            self.offsets = {int(k): int(v) for k, v in (doc.get("offsetTable") or {}).items()}

    def persist(self) -> None:
        with self._lock:
            text = pretty_level_offsets(dict(self.offsets))
        persist_text(self.path, text)

    def offsets_json(self) -> str:
        """GET_ALL_DELAY_OFFSET's body (compact)."""
        with self._lock:
            return "{\"offsetTable\":{" + ",".join(f"{k}:{v}" for k, v in sorted(self.offsets.items())) + "}}"

    def sync_from_master(self, text: str) -> None:
        persist_text(self.path, text)

    def run(self) -> None:
        broker_log.info("ScheduleMessageService started, %d levels", len(self.levels))
        last_persist = 0.0
        flush_s = self.ctx.config.get_int("flushDelayOffsetInterval") / 1000.0
        clock = 0.0
        while not self._stopped.wait(SCAN_PERIOD_S):
            for level, delay_ms in self.levels.items():
                try:
                    self._deliver_due(level, delay_ms)
                except Exception as e:  # the timer task logs and tries again later
                    broker_log.error("ScheduleMessageService, executeOnTimeup exception, level %d %s", level, e)
            clock += SCAN_PERIOD_S
            if clock - last_persist >= flush_s:
                last_persist = clock
                self.persist()

    def _deliver_due(self, level: int, delay_ms: int) -> None:
        store = self.ctx.store
        queue_id = level - 1
        offset = self.offsets.get(level, 0)
        max_offset = store.max_offset_in_queue(SCHEDULE_TOPIC, queue_id)
        if offset >= max_offset:
            return
        lo = store.min_offset_in_queue(SCHEDULE_TOPIC, queue_id)
        offset = max(offset, lo)
        now_ms = int(time.time() * 1000)
        while offset < max_offset and not self._stopped.is_set():
            status, _next, _lo, _hi, messages = store.get_message(SCHEDULE_TOPIC, queue_id, offset, 1, 1 << 30)
            if status != "FOUND" or not messages:
                return
            msg, _ = decode_stored_message(messages[0])
            if msg.store_timestamp + delay_ms > now_ms:
                return
            props = dict(msg.properties)
            real_topic = props.get(PROPERTY_REAL_TOPIC, "")
            real_qid = int(props.get(PROPERTY_REAL_QUEUE_ID) or 0)
            done = put_inner(self.ctx, topic=real_topic, queue_id=real_qid, body=msg.body, properties=props,
                             born_timestamp=msg.born_timestamp, born_host=msg.born_host, flag=msg.flag,
                             sys_flag=msg.sys_flag, reconsume_times=msg.reconsume_times, divert=False)
            status_box: list = []
            done.then(status_box.append)
            if status_box and status_box[0][0] not in ("PUT_OK",):
                broker_log.error("ScheduleMessageService, a message time up, but reput it failed, topic: %s "
                                 "msgId %s %s", real_topic, msg.msg_id, status_box[0][0])
                return
            offset += 1
            with self._lock:
                self.offsets[level] = offset

    def shutdown(self) -> None:
        self._stopped.set()

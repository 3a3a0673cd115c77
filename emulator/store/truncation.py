"""Cutting the end of a running store, as a controller-mode broker does when it changes role
(`DefaultMessageStore.truncateDirtyFiles` / `truncateFiles`, `AutoSwitchHAService.truncateInvalidMsg`, rocketmq-all-5.3.0):
the reput service stops, every consume queue loses its entries at or past the offset, the commitlog's files end
there (later files are deleted), the queue offsets are recounted from the consume queues and dispatch resumes from
the smaller of where it was and the cut."""
from __future__ import annotations

from collections.abc import Iterator

from emulator.logs import store_log
from emulator.store.message_check import DispatchRequest, check_message

READ_CHUNK = 4 * 1024 * 1024


def truncate_dirty_files(store, offset: int) -> None:
    store_log.info("truncate dirty files to %d", offset)
    if offset >= store.max_phy_offset():
        store_log.info("no need to truncate files, truncate offset is %d, max physical offset is %d", offset,
                       store.max_phy_offset())
        return
    reput = store.reput
    with reput.paused():
        old = reput.reput_from
        for cq in list(store.consume_queues.values()):
            cq.truncate_physical(offset)
        with store.commitlog.put_lock:
            store.commitlog.queue.truncate_dirty(offset)
        recover_topic_queue_table(store)
        reput.reput_from = min(old, offset)
        store_log.info("oldReputFromOffset is %d, reset reput from offset to %d", old, reput.reput_from)


def truncate_files(store, offset: int) -> bool:
    if offset >= store.max_phy_offset():
        store_log.info("no need to truncate files, truncate offset is %d, max physical offset is %d", offset,
                       store.max_phy_offset())
        return True
    if not is_offset_aligned(store, offset):
        store_log.error("offset %d is not align, truncate failed, need manual fix", offset)
        return False
    truncate_dirty_files(store, offset)
    return True


def _check(store, data: bytes, pos: int) -> DispatchRequest:
    return check_message(data, pos, len(data), check_crc=False, accept_v2=store.commitlog.reads_magic_v2, quiet=True)


def is_offset_aligned(store, offset: int) -> bool:
    data = store.commitlog.get_data(offset, READ_CHUNK)
    return not data or _check(store, data, 0).success


def whole_messages(store, offset: int) -> Iterator[tuple[int, DispatchRequest | None]]:
    """Walk whole messages (and file-end blanks) from `offset` as `truncateInvalidMsg` does: yields (the offset
    after it, the message, None for a blank) until a record `checkMessageAndReturnSize` does not take, or the end."""
    commitlog = store.commitlog
    end = store.max_phy_offset()
    while offset < end:
        data = commitlog.get_data(offset, READ_CHUNK)
        if not data:
            return
        pos = 0
        while pos < len(data):
            req = _check(store, data, pos)
            if req.success and req.msg_size == 0:
                offset = commitlog.roll_next_file(offset + pos)
                yield offset, None
                pos = -1
                break
            if req.underflow and pos > 0 and len(data) == READ_CHUNK:
                break  # a message across this chunk's end: read on from it
            if not req.success:
                return
            pos += req.msg_size
            yield offset + pos, req
        if pos == -1:
            continue
        if pos == 0:
            return
        offset += pos


def last_valid_offset_from(store, offset: int) -> int:
    """The offset after the last valid message (or file-end blank) from `offset`."""
    last = offset
    for last, _ in whole_messages(store, offset):  # noqa: B007 - the last one yielded is the answer
        pass
    return last


def recover_topic_queue_table(store) -> None:
    """`recoverTopicQueueTable`: the next queue offset of every queue from its consume queue, then (controller mode,
    5.2+) past every message between the confirm offset and the log's end, which dispatch has not reached."""
    table = store.commitlog.topic_queue_table
    table.clear()
    for (topic, qid), cq in store.consume_queues.items():
        table[f"{topic}-{qid}"] = cq.max_offset_in_queue()
    if store.controller_mode and store.profile.compensates_ha_queue_offsets:
        compensate_for_ha(store, table)


def compensate_for_ha(store, table: dict[str, int]) -> None:
    """`ConsumeQueueStore.compensateForHA`: walk whole messages from the confirm offset (0 before any) and set
    each one's queue to its queue offset + 1, so a new message never takes the offset of one not yet dispatched."""
    offset = max(store.confirm_offset, 0)
    store_log.info("Correct unsubmitted offset...StartReadOffset = %d", offset)
    for after, parsed in whole_messages(store, offset):
        if parsed is None:
            continue
        key = f"{parsed.topic}-{parsed.queue_id}"
        table[key] = parsed.queue_offset + 1
        store_log.info("Correcting. Key:%s, start read Offset: %d", key, after)

"""`DefaultMessageStore`: the store a broker runs. It checks whether a put may proceed (`checkStoreStatus`,
page-cache busy), appends to the commitlog, and returns a completion that ends when the flush request and the replica
request both end (`asyncPutMessage` + `thenCombine`); it dispatches consume queues, answers pulls and offset queries,
recovers from existing files at start-up and owns the HA service. In 5.x controller mode (`enableControllerMode`)
the HA service is `AutoSwitchHAService`, a fenced store refuses puts, a SYNC_MASTER put first checks the SyncStateSet
against `minInSyncReplicas` (IN_SYNC_REPLICAS_NOT_ENOUGH, nothing stored) and with `allAckInSyncStateSet` waits for
every member, dispatch stops at the confirm offset (kept in the checkpoint file; recovery rebuilds the consume
queues only up to it) and the store can be cut at run time (`emulator.store.truncation`)."""
from __future__ import annotations

import os
import shutil
import struct
import threading
import time

from emulator.config.broker_config import BrokerConfig
from emulator.logs import store_log
from emulator.store import abort_file, truncation
from emulator.store.allocate_service import AllocateMappedFileService
from emulator.store.checkpoint import StoreCheckpoint
from emulator.store.commitlog import AppendResult, CommitLog
from emulator.store.completion import Completion, combine
from emulator.store.consume_queue import ConsumeQueue
from emulator.store.flush import (
    CommitRealTimeService,
    FlushDiskWatcher,
    FlushRealTimeService,
    GroupCommitRequest,
    GroupCommitService,
)
from emulator.store.mapped_file_queue import MappedFileQueue
from emulator.store.reput import ReputService
from emulator.store.stats import StoreStats
from emulator.store.transient_pool import INTEGER_MAX, TransientStorePool
from emulator.version import VersionProfile

BUSY_SANITY_MS = 10_000_000
PUT_OK = "PUT_OK"
SYSFLAG_POS = 4 + 4 + 4 + 4 + 4 + 8 + 8
BORN_HOST_POS = SYSFLAG_POS + 4 + 8
STORE_TIMESTAMP_END = BORN_HOST_POS + 20 + 8
CQ_PUT_TRIES = 30
CQ_PUT_RETRY_S = 1.0


class MessageStore:
    def __init__(self, config: BrokerConfig, profile: VersionProfile, store_host: str) -> None:
        from emulator.ha.service import HAService

        self.config, self.profile = config, profile
        self.root = config.get("storePathRootDir") or ""
        self.shutdown_flag = False
        file_size = config.get_int("mappedFileSizeCommitLog")
        self.pool = TransientStorePool(config.get_int("transientStorePoolSize"), file_size) \
            if config.transient_store_pool_enabled else None
        self.allocator = AllocateMappedFileService(self.pool)
        queue = MappedFileQueue(config.commitlog_dir(), file_size, self.allocator)
        self.commitlog = CommitLog(queue, store_host, profile.slave_append_through_mapping,
                                   reads_magic_v2=profile.reads_magic_v2, logs_half_message=profile.logs_half_message)
        self.consume_queues: dict[tuple[str, int], ConsumeQueue] = {}
        self.stats = StoreStats()
        self.reput = ReputService(self.commitlog, self)
        self.watcher = FlushDiskWatcher() if profile.flush_disk_watcher else None
        if config.sync_flush:
            self.flush_service = GroupCommitService(queue)
        else:
            self.flush_service = FlushRealTimeService(queue, config)
        self.commit_service = CommitRealTimeService(queue, config, self.pool.give_back, self.flush_service) \
            if self.pool else None
        self.controller_mode = config.controller_mode
        self._recovering = False
        self._shutdown_event = threading.Event()
        self.logics_queue_error = False
        """`RunningFlags.WRITE_LOGICS_QUEUE_ERROR_BIT`: a consume queue could not be written 30 times in a row."""
        self.fenced = False
        """controller mode: refuse puts until the broker has registered with the controller (`RunningFlags.FENCED`)"""
        self.checkpoint = StoreCheckpoint(self.root) if self.controller_mode else None
        if self.controller_mode:
            from emulator.autoswitch.ha_service import AutoSwitchHAService

            self.ha: HAService = AutoSwitchHAService(self)
            store_log.warning("Load AutoSwitch HA Service: AutoSwitchHAService")
        else:
            self.ha = HAService(self)
        self.message_arriving = None
        """`NotifyMessageArrivingListener`: called (topic, queue_id, next queue offset) by the reput service for
        each dispatched message (set by the controller on a master with `longPollingEnable`)."""

    # --- life cycle -------------------------------------------------------------------------------------------
    def load_and_recover(self) -> None:
        os.makedirs(self.config.commitlog_dir(), exist_ok=True)
        if not self.commitlog.queue.load():
            raise OSError(f"commitlog files in {self.config.commitlog_dir()} do not match mappedFileSizeCommitLog")
        end = self.commitlog.recover(self.config.get_bool("checkCRCOnRecover"), abort_file.last_exit_ok(self.root))
        cq_dir = os.path.join(self.root, "consumequeue")
        if os.path.isdir(cq_dir):
            shutil.rmtree(cq_dir)
        if self.checkpoint is not None:
            confirm = self.checkpoint.confirm_phy_offset
            low = max(self.commitlog.min_offset(), 0)
            if self.commitlog.queue.files and (confirm < low or confirm > end):
                store_log.error("confirmOffset %d is out of [%d, %d], correct confirmOffset to %d", confirm, low,
                                end, min(max(confirm, low), end))
            self.confirm_offset = min(max(confirm, low), end)
        self.reput.reput_from = self.commitlog.min_offset() if self.commitlog.queue.files else 0
        self._recovering = True
        while self.reput.do_reput():
            pass
        self._recovering = False
        truncation.recover_topic_queue_table(self)
        store_log.info("recover end, commitlog max offset %d, %d consume queues rebuilt", end,
                       len(self.consume_queues))
        store_log.info("load over, and the max phy offset = %d", self.commitlog.max_offset())

    def start(self) -> None:
        abort_file.create(self.root)
        if self.checkpoint is not None:
            self.checkpoint.start()
        for service in (self.allocator, self.flush_service, self.commit_service, self.watcher, self.reput,
                        self.stats):
            if service is not None:
                service.start()
        self.ha.start()

    def shutdown(self) -> None:
        self.shutdown_flag = True
        self._shutdown_event.set()
        self.ha.shutdown()
        for service in (self.reput, self.flush_service, self.commit_service, self.watcher, self.stats,
                        self.allocator):
            if service is not None:
                service.shutdown()
        if self.checkpoint is not None:
            self.checkpoint.shutdown()
        abort_file.remove_at_shutdown(self.root, not self.logics_queue_error, self.dispatch_behind_bytes())

    # --- put --------------------------------------------------------------------------------------------------
    def is_os_page_cache_busy(self) -> bool:
        begin = self.commitlog.begin_time_in_lock
        diff = time.time() * 1000.0 - begin
        return diff < BUSY_SANITY_MS and diff > self.config.get_int("osPageCacheBusyTimeOutMills")

    def is_transient_store_pool_deficient(self) -> bool:
        return self.pool is not None and self.pool.available() == 0

    def remain_transient_buffers(self) -> int:
        return self.pool.available() if self.pool is not None else INTEGER_MAX

    def check_store_status(self) -> str:
        if self.shutdown_flag:
            return "SERVICE_NOT_AVAILABLE"
        if self.config.is_slave or self.fenced or self.logics_queue_error:
            return "SERVICE_NOT_AVAILABLE"
        if self.is_os_page_cache_busy():
            return "OS_PAGECACHE_BUSY"
        return PUT_OK

    def async_put_message(self, encoded: bytearray, topic: str, queue_id: int, wait_store_ok: bool) -> Completion:
        """Completion of (status, AppendResult | None)."""
        status = self.check_store_status()
        if status != PUT_OK:
            return Completion.completed((status, None))
        if len(encoded) > self.config.get_int("maxMessageSize") + 4096:
            return Completion.completed(("MESSAGE_ILLEGAL", None))
        need_acks = self._need_ack_nums(wait_store_ok)
        if need_acks is None:
            return Completion.completed(("IN_SYNC_REPLICAS_NOT_ENOUGH", None))
        begin = time.monotonic()
        result = self.commitlog.put_message(encoded, topic, queue_id)
        if result.status != PUT_OK:
            status = "MESSAGE_ILLEGAL" if result.status == "MESSAGE_SIZE_EXCEEDED" else result.status
            return Completion.completed((status, result))
        self.stats.on_put(result.wrote_bytes)
        flush = self._submit_flush(result, wait_store_ok)
        replica = self._submit_replica(result, wait_store_ok, need_acks)
        done = combine(flush, replica, lambda f, r: (_combined(f, r), result))
        stats = self.stats
        done.then(lambda value: stats.on_put_done((time.monotonic() - begin) * 1000.0, value[0] == PUT_OK))
        return done

    def _submit_flush(self, result: AppendResult, wait: bool) -> Completion:
        if self.config.sync_flush:
            if wait:
                req = GroupCommitRequest(result.wrote_offset + result.wrote_bytes,
                                         self.config.get_int("syncFlushTimeout"))
                if self.watcher is not None:
                    self.watcher.add(req)
                self.flush_service.put_request(req)  # type: ignore[union-attr]
                return req.completion
            self.flush_service.wake.set()
            return Completion.completed(PUT_OK)
        (self.commit_service or self.flush_service).wake.set()
        return Completion.completed(PUT_OK)

    def _need_ack_nums(self, wait: bool) -> int | None:
        """The acks a put needs (`inSyncReplicas`; -1 = every SyncStateSet member); None: IN_SYNC_REPLICAS_NOT_ENOUGH
        (controller mode: fewer SyncStateSet members than `minInSyncReplicas`, checked before the append)."""
        need = self.config.get_int("inSyncReplicas") if self.profile.is_5x else 1
        if self.controller_mode and wait and self.config.is_sync_master:
            if self.ha.in_sync_replicas_nums() < self.config.get_int("minInSyncReplicas"):  # type: ignore[attr-defined]
                return None
            if self.config.get_bool("allAckInSyncStateSet"):
                return -1
        return need

    def _submit_replica(self, result: AppendResult, wait: bool, need: int) -> Completion:
        if not self.config.is_sync_master or not wait:
            return Completion.completed(PUT_OK)
        next_offset = result.wrote_offset + result.wrote_bytes
        if self.profile.is_5x:
            if 0 <= need <= 1:
                return Completion.completed(PUT_OK)
            req = GroupCommitRequest(next_offset, self.config.get_int("slaveTimeout"), need)
        else:
            if not self.ha.is_slave_ok(next_offset):
                return Completion.completed("SLAVE_NOT_AVAILABLE")
            req = GroupCommitRequest(next_offset, self.config.get_int(self.profile.replica_timeout_key))
        self.ha.put_request(req)
        return req.completion

    # --- consume queues, pull, offsets ---------------------------------------------------------------------------
    def consume_queue(self, topic: str, queue_id: int, create: bool = True) -> ConsumeQueue | None:
        key = (topic, queue_id)
        cq = self.consume_queues.get(key)
        if cq is None and create:
            cq = ConsumeQueue(self.root, topic, queue_id, self.config.get_int("mappedFileSizeConsumeQueue"),
                              self.profile.slave_append_through_mapping)
            self.consume_queues[key] = cq
        return cq

    def dispatch(self, topic: str, queue_id: int, offset: int, size: int, tags_code: int, queue_offset: int) -> None:
        """`putMessagePositionInfoWrapper`: up to 30 tries a second apart, then the consume queues are marked in
        error (`makeLogicsQueueError`): no later dispatch is tried and puts answer SERVICE_NOT_AVAILABLE."""
        cq = self.consume_queue(topic, queue_id)
        for attempt in range(CQ_PUT_TRIES if not self.logics_queue_error else 0):
            if cq.put(offset, size, tags_code, queue_offset):  # type: ignore[union-attr]
                break
            store_log.warning("[BUG]put commit log position info to %s:%d %d failed, retry %d times", topic, queue_id,
                              offset, attempt)
            if self._shutdown_event.wait(CQ_PUT_RETRY_S):
                return
        else:
            store_log.error("[BUG]consume queue can not write, %s %d", topic, queue_id)
            self.logics_queue_error = True
        listener = self.message_arriving
        if listener is not None:
            listener(topic, queue_id, queue_offset + 1)

    def max_offset_in_queue(self, topic: str, queue_id: int) -> int:
        cq = self.consume_queue(topic, queue_id, create=False)
        return cq.max_offset_in_queue() if cq else 0

    def min_offset_in_queue(self, topic: str, queue_id: int) -> int:
        cq = self.consume_queue(topic, queue_id, create=False)
        return cq.min_offset_in_queue() if cq else 0

    def store_timestamp(self, topic: str, queue_id: int, offset: int) -> int:
        """`getMessageStoreTimeStamp`: the store time of the message at a queue offset, -1 when not readable."""
        cq = self.consume_queue(topic, queue_id, create=False)
        if cq is None:
            return -1
        entries = cq.entries(offset, 1)
        if not entries:
            return -1
        phy, size, _tags = entries[0]
        data = self.commitlog.get_message(phy, size)
        if data is None or len(data) < STORE_TIMESTAMP_END:
            return -1
        sys_flag = struct.unpack_from(">i", data, SYSFLAG_POS)[0]
        pos = BORN_HOST_POS + (20 if sys_flag & 0x10 else 8)
        return struct.unpack_from(">q", data, pos)[0]

    def get_message(self, topic: str, queue_id: int, offset: int, max_nums: int, max_bytes: int):
        """(status, next_begin, min, max, [message bytes]) as `DefaultMessageStore.getMessage`."""
        cq = self.consume_queue(topic, queue_id, create=False)
        if cq is None:
            return "NO_MATCHED_LOGIC_QUEUE", 0, 0, 0, []
        lo, hi = cq.min_offset_in_queue(), cq.max_offset_in_queue()
        if hi == 0:
            return "NO_MESSAGE_IN_QUEUE", 0, lo, hi, []
        if offset < lo:
            return "OFFSET_TOO_SMALL", lo, lo, hi, []
        if offset == hi:
            return "OFFSET_OVERFLOW_ONE", offset, lo, hi, []
        if offset > hi:
            return "OFFSET_OVERFLOW_BADLY", hi if lo != 0 else lo, lo, hi, []
        messages: list[bytes] = []
        total = 0
        next_begin = offset
        for phy, size, _tags in cq.entries(offset, max_nums):
            data = self.commitlog.get_message(phy, size)
            next_begin += 1
            if data is None:
                continue
            messages.append(data)
            total += size
            if total >= max_bytes:
                break
        status = "FOUND" if messages else "MESSAGE_WAS_REMOVING"
        self.stats.get_found += 1 if messages else 0
        return status, next_begin, lo, hi, messages

    # --- slave, confirm offset, truncation ------------------------------------------------------------------------
    def max_phy_offset(self) -> int:
        return self.commitlog.max_offset()

    @property
    def confirm_offset(self) -> int:
        """The stored confirm offset (`confirmOffset` field, -1 before any)."""
        return self.checkpoint.confirm_phy_offset if self.checkpoint is not None else -1

    @confirm_offset.setter
    def confirm_offset(self, value: int) -> None:
        if self.checkpoint is not None:
            self.checkpoint.confirm_phy_offset = value

    def get_confirm_offset(self) -> int:
        """`getConfirmOffset`: controller mode asks the HA service; otherwise everything written."""
        if self.controller_mode:
            return self.ha.get_confirm_offset()  # type: ignore[attr-defined]
        return self.max_phy_offset()

    def reput_end(self) -> int:
        """Where dispatch may go: the confirm offset in controller mode (not while recovering: then the checkpoint's
        value), else the commitlog's end."""
        if not self.controller_mode or self.config.get_bool("readUnCommitted"):
            return self.max_phy_offset()
        if self._recovering:
            return self.confirm_offset
        return self.get_confirm_offset()

    def dispatch_behind_bytes(self) -> int:
        return self.reput.behind()

    def truncate_files(self, offset: int) -> bool:
        return truncation.truncate_files(self, offset)

    def truncate_dirty_files(self, offset: int) -> None:
        truncation.truncate_dirty_files(self, offset)

    def last_valid_offset_from(self, offset: int) -> int:
        return truncation.last_valid_offset_from(self, offset)

    def recover_topic_queue_table(self) -> None:
        truncation.recover_topic_queue_table(self)

    def append_to_commitlog(self, start_offset: int, data: bytes) -> bool:
        if self.shutdown_flag:
            store_log.warning("message store has shutdown, so appendToPhyQueue is forbidden")
            return False
        ok = self.commitlog.append_data(start_offset, data)
        if ok:
            self.reput.wake.set()
        else:
            store_log.error("appendToPhyQueue failed %d %d", start_offset, len(data))
        return ok


def _combined(flush_status: str, replica_status: str) -> str:
    if replica_status != PUT_OK:
        return replica_status
    return flush_status

"""Flow control on the master as mechanisms. A put that blocks in a page fault holds the put-message lock, so after
`osPageCacheBusyTimeOutMills` the page cache counts as busy: new sends are rejected before queueing
(`[REJECTREQUEST]`), the fast-failure sweeper drains the send queue (`[PCBUSY_CLEAN_QUEUE]`) and answers queued
requests older than `waitTimeMillsInSendQueue` (`[TIMEOUT_CLEAN_QUEUE]`). A frozen master store makes the put block;
a blkio write throttle on the master (SYNC_FLUSH) slows the flush, and with it every acknowledgement."""
from __future__ import annotations

import collections
import time

import pytest
from emu_cluster import poll
from emu_load import Flood

from faults.disk_freeze import DiskFreeze
from faults.disk_throttle import DiskThrottle

pytestmark = pytest.mark.root
TOPIC = "FlowTopic"
BUSY_PREFIXES = ("[REJECTREQUEST]", "[PCBUSY_CLEAN_QUEUE]", "[TIMEOUT_CLEAN_QUEUE]")
THROTTLE_BPS = 256 * 1024
BODY = 4096


def _busy(flood: Flood, since: float) -> list:
    """Flow-control answers: SYSTEM_BUSY (2), which the 4.9.1 client does not retry, as MQBrokerException."""
    return flood.matching(since, "MQBrokerException", 2, BUSY_PREFIXES)


def test_put_blocked_in_page_fault_turns_on_flow_control(emu_cluster):
    cluster = emu_cluster()
    cluster.create_topic(TOPIC, 4)
    fault = DiskFreeze(cluster.target("master"), journal=cluster.journal)
    with Flood(cluster.producer(), TOPIC, threads=16, body_size=BODY) as flood:
        poll(lambda: flood.count(0, "SEND_OK") >= 300, 30, "SEND_OK before the freeze")
        assert not _busy(flood, 0)
        fault.apply()
        fault.verify()
        frozen_at = time.monotonic()
        poll(lambda: int(cluster.runtime("master")["pageCacheLockTimeMills"]) > 1000, 15,
             "the put-message lock held for more than osPageCacheBusyTimeOutMills")
        poll(lambda: len(_busy(flood, frozen_at)) >= 20, 30, "flow-control answers")
        fault.revert()
        thawed_at = time.monotonic()
        poll(lambda: flood.count(thawed_at, "SEND_OK") >= 100, 30, "SEND_OK after the thaw")
    remarks = collections.Counter(o.remark.split("]")[0] + "]" for o in _busy(flood, frozen_at))
    # both come from isOSPageCacheBusy (the lock held > osPageCacheBusyTimeOutMills); which one a request meets
    # depends on whether it arrives (rejected before queueing) or is already queued (drained by the sweeper)
    assert remarks["[REJECTREQUEST]"] + remarks["[PCBUSY_CLEAN_QUEUE]"] > 0, remarks


def test_write_throttle_slows_sync_flush_acknowledgements(emu_cluster):
    cluster = emu_cluster(cgroups=True)
    cluster.create_topic(TOPIC, 4)
    with Flood(cluster.producer(), TOPIC, threads=16, body_size=BODY) as flood:
        start = time.monotonic()
        poll(lambda: time.monotonic() - start > 4, 6, "an unthrottled window")
        free_rate = flood.count(start, "SEND_OK") / (time.monotonic() - start)
        fault = DiskThrottle(cluster.target("master"), {"write_bps": THROTTLE_BPS}, journal=cluster.journal)
        fault.apply()  # verify() is skipped: its probe shares the throttled bandwidth with the broker's own flushes
        throttled_at = time.monotonic()
        poll(lambda: time.monotonic() - throttled_at > 8, 10, "a throttled window")
        throttled_rate = flood.count(throttled_at, "SEND_OK") / (time.monotonic() - throttled_at)
        fault.revert()
    print("outcomes under the throttle:", flood.words(throttled_at))
    # SYNC_FLUSH acknowledges only flushed bytes: the acknowledged bandwidth cannot exceed the write limit by much
    assert throttled_rate * BODY < 3 * THROTTLE_BPS < free_rate * BODY, (free_rate, throttled_rate)

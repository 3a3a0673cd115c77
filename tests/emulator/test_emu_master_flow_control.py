"""Flow control on the master as mechanisms. A put that blocks in a page fault holds the put-message lock, so after
`osPageCacheBusyTimeOutMills` the page cache counts as busy: new sends are rejected before queueing
(`[REJECTREQUEST]`), the fast-failure sweeper drains the send queue (`[PCBUSY_CLEAN_QUEUE]`) and answers queued
requests older than `waitTimeMillsInSendQueue` (`[TIMEOUT_CLEAN_QUEUE]`). A frozen master store makes the put block;
a blkio write throttle on the master (SYNC_FLUSH) slows the flush, and with it every acknowledgement, but not the
put. (A throttle with the page cache bounded by a memory limit, ASYNC_FLUSH, can make the put wait in memcg reclaim
for pages under throttled writeback: `benchmarks/emulator_throttled_flush.py`, docs/emulator.md.)"""
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
BODY = 4000
SYNC_FLUSH_TIMEOUT_MS = 500
CLIENT_TIMEOUT_MS = 10_000


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


@pytest.mark.parametrize(("version", "slow_word"), [("4.9.1", "SEND_OK"), ("4.9.3", "FLUSH_DISK_TIMEOUT")])
def test_write_throttle_slows_sync_flush_acknowledgements(emu_cluster, version, slow_word):
    """SYNC_FLUSH master under a blkio write throttle: `disk_throttle.verify` measures the limit on the master's
    cgroup while the broker itself flushes into it; acknowledgements slow down to what the flushes let through; 4.9.1
    answers SEND_OK whenever its flush ends, 4.9.3's FlushDiskWatcher answers FLUSH_DISK_TIMEOUT at
    `syncFlushTimeout`. The put never blocks (the send thread does not wait for the flush, and v1 blkio does not
    throttle page-cache writes), so no flow-control answer comes, throttled or not (docs/emulator.md)."""
    cluster = emu_cluster(version=version, cgroups=True, master_conf={"syncFlushTimeout": str(SYNC_FLUSH_TIMEOUT_MS)})
    cluster.create_topic(TOPIC, 4)
    producer = cluster.producer(profile="java-4.9.3" if version == "4.9.3" else "java-4.9.1")
    with Flood(producer, TOPIC, threads=32, body_size=BODY, timeout_ms=CLIENT_TIMEOUT_MS) as flood:
        start = time.monotonic()
        poll(lambda: time.monotonic() - start > 3, 5, "an unthrottled window")
        free = flood.since(start)
        free_rate = len(free) / (time.monotonic() - start)
        fault = DiskThrottle(cluster.target("master"), {"write_bps": THROTTLE_BPS}, journal=cluster.journal)
        fault.apply()
        throttled_at = time.monotonic()
        evidence = fault.verify()["write_bps"]
        poll(lambda: time.monotonic() - throttled_at > 8, 10, "a throttled window")
        throttled = flood.since(throttled_at + 1)
        throttled_rate = len(throttled) / (time.monotonic() - throttled_at - 1)
        fault.revert()
        reverted_at = time.monotonic()
        poll(lambda: flood.count(reverted_at, "SEND_OK") >= 200, 30, "SEND_OK at full speed again")
    words = flood.words(throttled_at)
    # the limit holds on the cgroup (probe + broker) while the broker's own flushes take part of it
    assert abs(evidence["ratio"] - 1) <= 0.2 and evidence["probe_share"] < 1.0, evidence
    assert all(o.outcome == "SEND_OK" for o in free) and len(free) > 0
    # acknowledgements follow the flush: far fewer, much later (ext4's journal commit writes part of the data from
    # jbd2's context, which v1 blkio does not throttle, so the acknowledged bytes can pass the limit a little)
    assert throttled_rate * BODY < 4 * THROTTLE_BPS and throttled_rate < free_rate / 5, (free_rate, throttled_rate)
    slow = [o for o in throttled if o.outcome == slow_word and o.latency_ms >= SYNC_FLUSH_TIMEOUT_MS]
    assert slow, words
    if version == "4.9.3":
        assert all(o.latency_ms < 2 * SYNC_FLUSH_TIMEOUT_MS for o in flood.matching(throttled_at, slow_word))
    assert not flood.matching(0, "MQBrokerException", 2), words

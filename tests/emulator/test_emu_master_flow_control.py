"""The master's answers when its puts stop, as mechanisms. A put that blocks in a page fault (frozen master store)
holds the put-message lock and, being a copy into a mapped file, keeps the broker from reaching its next safepoint
(`emulator.safepoint`): the fast-failure sweeper answers queued sends older than `waitTimeMillsInSendQueue`
(`[TIMEOUT_CLEAN_QUEUE]`) until the VM thread asks for its next safepoint (at most `GuaranteedSafepointInterval`
later), and from then on every thread waits at its poll, so nothing is answered until the thaw; the page-cache-busy
rejections (`[REJECTREQUEST]`, `[PCBUSY_CLEAN_QUEUE]`, after `osPageCacheBusyTimeOutMills` = 1 s) never come. That
is what the real 4.9.1 master did (docs/fidelity.md: one `Reaching safepoint` of 19.68 s, ~60 TIMEOUT_CLEAN_QUEUE in
the first 0.3 s, then silence). A blkio write throttle on the master (SYNC_FLUSH) slows the flush, and with it every
acknowledgement, but not the put. (A throttle with the page cache bounded by a memory limit, ASYNC_FLUSH, can make
the put wait in memcg reclaim for pages under throttled writeback: `benchmarks/emulator_throttled_flush.py`,
docs/emulator.md.)"""
from __future__ import annotations

import re
import time

import pytest
from emu_load import Flood
from waiting import poll

from faults.disk_freeze import DiskFreeze
from faults.disk_throttle import DiskThrottle
from remoting.errors import RemotingError

pytestmark = pytest.mark.root
TOPIC = "FlowTopic"
BUSY_PREFIXES = ("[REJECTREQUEST]", "[PCBUSY_CLEAN_QUEUE]", "[TIMEOUT_CLEAN_QUEUE]")
THROTTLE_BPS = 256 * 1024
BODY = 4000
SYNC_FLUSH_TIMEOUT_MS = 500
CLIENT_TIMEOUT_MS = 10_000
STALLED_S = 4.0
BROKER_ANSWERS = ("SEND_OK", "FLUSH_DISK_TIMEOUT", "FLUSH_SLAVE_TIMEOUT", "SLAVE_NOT_AVAILABLE", "MQBrokerException")
REACHING = re.compile(r'Safepoint "([^"]+)", .*Reaching safepoint: (\d+) ns')


def _busy(flood: Flood, since: float, prefixes: tuple[str, ...] = BUSY_PREFIXES) -> list:
    """Flow-control answers: SYSTEM_BUSY (2), which the 4.9.1 client does not retry, as MQBrokerException."""
    return flood.matching(since, "MQBrokerException", 2, prefixes)


def _answers_admin(cluster) -> bool:
    try:
        cluster.admin.get_runtime_info(cluster.master.addr, timeout_ms=500)
        return True
    except RemotingError:
        return False


def test_put_blocked_in_page_fault_stops_the_broker_at_its_next_safepoint(emu_cluster):
    cluster = emu_cluster()
    cluster.create_topic(TOPIC, 4)
    fault = DiskFreeze(cluster.target("master"), journal=cluster.journal)
    with Flood(cluster.producer(), TOPIC, threads=16, body_size=BODY) as flood:
        poll(lambda: flood.count(0, "SEND_OK") >= 300, 30, "SEND_OK before the freeze")
        assert not _busy(flood, 0)
        fault.apply()
        fault.verify()
        frozen_at = time.monotonic()
        # every thread waits at the safepoint: not even an admin request is answered
        poll(lambda: not _answers_admin(cluster), 10, "the master stops answering altogether")
        stalled_at = time.monotonic()
        poll(lambda: time.monotonic() - stalled_at >= STALLED_S, STALLED_S + 1, "a stalled window")
        thaw_at = time.monotonic()
        answered_while_stalled = [o for o in flood.since(stalled_at + 0.5) if o.outcome in BROKER_ANSWERS]
        fault.revert()
        thawed_at = time.monotonic()
        poll(lambda: flood.count(thawed_at, "SEND_OK") >= 100, 30, "SEND_OK after the thaw")
        poll(lambda: _answers_admin(cluster), 10, "admin answers after the thaw")
    # nothing reached a client from the broker while it stood at the safepoint (answers sent just before it was
    # requested may still arrive in the first half second)
    assert not [o for o in answered_while_stalled if o.end < thaw_at], answered_while_stalled[:5]
    # page cache never counted as busy while frozen: the whole broker stopped before osPageCacheBusyTimeOutMills
    # passed (right after the thaw the freed threads can still find the put's lock held: docs/fidelity.md)
    rejected = [o for o in _busy(flood, frozen_at, ("[REJECTREQUEST]", "[PCBUSY_CLEAN_QUEUE]")) if o.end < thaw_at]
    assert not rejected, [(round(o.end - thaw_at, 3), o.remark[:20], round(o.latency_ms)) for o in rejected][:20]
    reaching = [(cause, int(ns)) for cause, ns in REACHING.findall(cluster.master.log("gc.log"))]
    assert max(ns for _, ns in reaching) >= STALLED_S * 1e9, "the safepoint waited for the frozen put"
    assert {"Cleanup", "G1CollectForAllocation"} & {cause for cause, _ in reaching}


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

"""Broker behaviour through real requests: SLAVE_NOT_AVAILABLE until the slave's HA client connects, live config
changes (UPDATE_BROKER_CONFIG) that take effect and rewrite the -c file, a store recovered on restart, a read-only
slave repaired (stop, e2fsck, remount, start) that catches up, the transient store pool, and 5.x's replica counts."""
from __future__ import annotations

import os
import re
import time

import pytest
from emu_load import Flood, send_one
from waiting import poll

from emulator.config.properties import parse_properties
from faults.disk_freeze import DiskFreeze
from faults.readonly_fs import ReadonlyFs

pytestmark = pytest.mark.root
TOPIC = "BehaviourTopic"


def _send(producer, key, body=b"b" * 512, timeout_ms=10000):
    return send_one(producer, TOPIC, body, key, timeout_ms)


def _keys(cluster, role, queues):
    return {m.keys for m in cluster.pull_all(role, TOPIC, queues)}


def test_startup_and_live_config(emu_cluster):
    cluster = emu_cluster(wait_slave=False)
    cluster.create_topic(TOPIC, 1)
    producer = cluster.producer()
    early = _send(producer, "early")  # no slave connected yet: a send status, returned without a retry
    assert (early.outcome, early.code, early.attempts) == ("SLAVE_NOT_AVAILABLE", 11, 1)
    cluster.wait_slave_connected()
    assert _send(producer, "ok").outcome == "SEND_OK"
    cluster.admin.update_broker_config(cluster.master.addr, {"haSlaveFallbehindMax": "1"})
    # with the slave acknowledging everything the gap is 0 < 1 before the put, and 512+ bytes after
    reply = _send(producer, "gap")
    assert reply.outcome == "SLAVE_NOT_AVAILABLE" and reply.latency_ms < 1000
    config = cluster.admin.get_broker_config(cluster.master.addr)
    assert config["haSlaveFallbehindMax"] == "1"
    written = parse_properties(cluster.master.conf.read_text())
    assert written["haSlaveFallbehindMax"] == "1" and len(written) >= 160
    cluster.admin.update_broker_config(cluster.master.addr, {"haSlaveFallbehindMax": str(256 << 20)})
    assert _send(producer, "again").outcome == "SEND_OK"


def test_restart_recovers_the_store(emu_cluster):
    cluster = emu_cluster()
    cluster.create_topic(TOPIC, 2)
    producer = cluster.producer()
    # one thread: the producer's round robin alternates the two queues, 350 messages each, > 2 commitlog files
    sent = [_send(producer, f"r{i}", b"r" * 3000) for i in range(700)]
    assert all(r.outcome == "SEND_OK" for r in sent)
    assert sorted(r.queue_offset for r in sent) == sorted(list(range(350)) * 2)
    before = cluster.runtime("master")["commitLogMaxOffset"]
    control = cluster.target("master").control
    control.stop()
    control.start()
    control.wait_ready(30)
    assert cluster.runtime("master")["commitLogMaxOffset"] == before
    assert _keys(cluster, "master", 2) == {r.key for r in sent}
    cluster.wait_slave_connected()
    after = _send(producer, "after-restart")  # the queue offsets go on from the recovered consume queues
    assert after.outcome == "SEND_OK" and after.queue_offset == 350


def test_readonly_slave_repaired_catches_up(emu_cluster):
    cluster = emu_cluster()
    cluster.create_topic(TOPIC, 1)
    producer = cluster.producer()
    # a slave that has replicated something holds its first commitlog file (a slave that has none yet cannot create
    # it on a read-only store, and every send would wait for it)
    assert _send(producer, "before").outcome == "SEND_OK"
    poll(cluster.caught_up, 10, "the slave to hold the first message")
    fault = ReadonlyFs(cluster.target("slave"), journal=cluster.journal)
    fault.apply()
    fault.verify()
    acked = [_send(producer, f"ro{i}", b"o" * 2048) for i in range(100)]
    assert all(r.outcome == "SEND_OK" for r in acked)  # the slave acknowledged bytes it could not store
    assert not _keys(cluster, "slave", 1) & {r.key for r in acked}
    fault.revert()  # stop the slave, unmount, e2fsck, mount, start, wait caught up
    poll(cluster.caught_up, 30, "the repaired slave to catch up")
    on_slave = poll(lambda: (lambda ks: ks if {r.key for r in acked} <= ks else None)(_keys(cluster, "slave", 1)),
                    30, "the slave's queue")
    assert {r.key for r in acked} <= on_slave


def test_a_frozen_store_with_the_pool_rejects_while_its_next_file_waits(emu_cluster):
    """transientStorePoolEnable on an ASYNC_FLUSH master whose store freezes, as the real 4.9.1 did it
    (`transient-store-pool`, docs/fidelity.md): the put goes on into the off-heap buffers until it needs a file the
    allocator cannot make on the frozen disk; it waits for it inside the put lock ("create mmap timeout" after 5 s),
    so the send processor rejects with code 2 `[REJECTREQUEST]` (page cache busy: the lock held past
    osPageCacheBusyTimeOutMills; the 4.9.1 client does not retry code 2). The allocator takes a buffer only once its
    file is made (4.9.1's `MappedFile.init`), so the blocked creation holds none. After the thaw: the creation's
    and the commit's times, and SEND_OK."""
    cluster = emu_cluster(master_conf={"brokerRole": "ASYNC_MASTER", "flushDiskType": "ASYNC_FLUSH",
                                       "transientStorePoolEnable": "true",
                                       "transientStorePoolSize": "3"})
    cluster.create_topic(TOPIC, 4)
    assert cluster.runtime("master")["remainTransientStoreBufferNumbs"] in ("1", "2", "3")
    fault = DiskFreeze(cluster.target("master"), journal=cluster.journal)
    store_log = lambda: cluster.nodes["master"].log("store.log")  # noqa: E731
    with Flood(cluster.producer(), TOPIC, threads=8, body_size=8192) as flood:
        poll(lambda: flood.count(0, "SEND_OK") >= 100, 30, "SEND_OK before the freeze")
        before = len(store_log())
        fault.apply()
        fault.verify()
        frozen_at = time.monotonic()
        poll(lambda: flood.count(frozen_at, "MQBrokerException", 2, "[REJECTREQUEST]"), 30,
             "[REJECTREQUEST] while the put waits for its file")
        poll(lambda: "create mmap timeout" in store_log()[before:], 30,
             "the put's wait for a file the frozen disk cannot hold")
        fault.revert()
        thawed_at = time.monotonic()
        poll(lambda: flood.count(thawed_at, "SEND_OK") >= 50, 30, "SEND_OK after the thaw")
        after = store_log()[before:]
        # the blocked creation and commit, each held up longer than the put's 5 s wait for that file
        made = [int(ms) for ms in re.findall(r"create mappedFile spent time\(ms\) (\d+)", after)]
        committed = [int(ms) for ms in re.findall(r"Commit data to file costs (\d+) ms", after)]
        assert max(made, default=0) >= 5000 and max(committed, default=0) >= 5000, after
        assert "Use default implementation." in after  # 4.9.1's line at each creation with the pool


@pytest.mark.parametrize(("replicas", "expected"), [("1", "SEND_OK"), ("2", "FLUSH_SLAVE_TIMEOUT")])
def test_5x_sync_master_waits_only_for_in_sync_replicas(emu_cluster, replicas, expected):
    cluster = emu_cluster(version="5.3.0", master_conf={"inSyncReplicas": replicas, "totalReplicas": replicas,
                                                         "slaveTimeout": "1500"})
    cluster.create_topic(TOPIC, 1)
    producer = cluster.producer(profile="java-5.3")
    assert _send(producer, "first").outcome == "SEND_OK"
    fault = DiskFreeze(cluster.target("slave"), journal=cluster.journal)
    fault.apply()
    fault.verify()
    # incompressible bodies, so the client's zlib (bodies over 4 KiB) leaves 64 KiB for the store to replicate
    replies = [_send(producer, f"f{i}", os.urandom(65536)) for i in range(3)]
    fault.revert()
    assert replies[-1].outcome == expected
    if expected == "FLUSH_SLAVE_TIMEOUT":
        assert replies[-1].latency_ms >= 1500
        assert "transfer message to slave timeout, offset" in cluster.master.log("store.log")

"""Broker behaviour through real requests: SLAVE_NOT_AVAILABLE until the slave's HA client connects, live config
changes (UPDATE_BROKER_CONFIG) that take effect and rewrite the -c file, a store recovered on restart, a read-only
slave repaired (stop, e2fsck, remount, start) that catches up, the transient store pool, and 5.x's replica counts."""
from __future__ import annotations

import time

import emu_wire as wire
import pytest
from emu_cluster import poll
from emu_load import Flood

from emulator.config.properties import parse_properties
from faults.disk_freeze import DiskFreeze
from faults.readonly_fs import ReadonlyFs
from remoting.codes import ResponseCode

pytestmark = pytest.mark.root
TOPIC = "BehaviourTopic"


def _send(cluster, key, body=b"b" * 512, queue=0, timeout_ms=10000):
    return wire.send(cluster.client, cluster.master.addr, TOPIC, body, key, queue, timeout_ms)


def test_startup_and_live_config(emu_cluster):
    cluster = emu_cluster(wait_slave=False)
    wire.create_topic(cluster.client, cluster.master.addr, TOPIC, 1)
    assert _send(cluster, "early").code == ResponseCode.SLAVE_NOT_AVAILABLE  # no slave connected yet
    cluster.wait_slave_connected()
    assert _send(cluster, "ok").code == ResponseCode.SUCCESS
    wire.update_broker_config(cluster.client, cluster.master.addr, {"haSlaveFallbehindMax": "1"})
    # with the slave acknowledging everything the gap is 0 < 1 before the put, and 512+ bytes after
    reply = _send(cluster, "gap")
    assert reply.code == ResponseCode.SLAVE_NOT_AVAILABLE and reply.latency_ms < 1000
    config = wire.broker_config(cluster.client, cluster.master.addr)
    assert config["haSlaveFallbehindMax"] == "1"
    written = parse_properties(cluster.master.conf.read_text())
    assert written["haSlaveFallbehindMax"] == "1" and len(written) >= 160
    wire.update_broker_config(cluster.client, cluster.master.addr, {"haSlaveFallbehindMax": str(256 << 20)})
    assert _send(cluster, "again").code == ResponseCode.SUCCESS


def test_restart_recovers_the_store(emu_cluster):
    cluster = emu_cluster()
    wire.create_topic(cluster.client, cluster.master.addr, TOPIC, 2)
    sent = [_send(cluster, f"r{i}", b"r" * 3000, i % 2) for i in range(700)]  # > 2 commitlog files
    assert all(r.code == ResponseCode.SUCCESS for r in sent)
    before = cluster.runtime("master")["commitLogMaxOffset"]
    control = cluster.target("master").control
    control.stop()
    control.start()
    control.wait_ready(30)
    assert cluster.runtime("master")["commitLogMaxOffset"] == before
    keys = {m.keys for q in range(2) for m in wire.pull_queue(cluster.client, cluster.master.addr, TOPIC, q)}
    assert keys == {r.key for r in sent}
    cluster.wait_slave_connected()
    after = _send(cluster, "after-restart", queue=0)
    assert after.code == ResponseCode.SUCCESS and after.queue_offset == 350


def test_readonly_slave_repaired_catches_up(emu_cluster):
    cluster = emu_cluster()
    wire.create_topic(cluster.client, cluster.master.addr, TOPIC, 1)
    fault = ReadonlyFs(cluster.target("slave"), journal=cluster.journal)
    fault.apply()
    fault.verify()
    acked = [_send(cluster, f"ro{i}", b"o" * 2048) for i in range(100)]
    assert all(r.code == ResponseCode.SUCCESS for r in acked)  # the slave acknowledged bytes it could not store
    assert not {m.keys for m in wire.pull_queue(cluster.client, cluster.slave.addr, TOPIC, 0)} & {r.key for r in acked}
    fault.revert()  # stop the slave, unmount, e2fsck, mount, start, wait caught up
    poll(cluster.caught_up, 30, "the repaired slave to catch up")
    on_slave = poll(lambda: (lambda ks: ks if {r.key for r in acked} <= ks else None)(
        {m.keys for m in wire.pull_queue(cluster.client, cluster.slave.addr, TOPIC, 0)}), 30, "the slave's queue")
    assert {r.key for r in acked} <= on_slave


def test_transient_store_pool_runs_dry_when_commits_block(emu_cluster):
    cluster = emu_cluster(master_conf={"brokerRole": "ASYNC_MASTER", "flushDiskType": "ASYNC_FLUSH",
                                       "transientStorePoolEnable": "true",
                                       "transientStorePoolSize": "3"})
    wire.create_topic(cluster.client, cluster.master.addr, TOPIC, 4)
    assert cluster.runtime("master")["remainTransientStoreBufferNumbs"] in ("1", "2", "3")
    fault = DiskFreeze(cluster.target("master"), journal=cluster.journal)
    with Flood(cluster.client, cluster.master.addr, TOPIC, threads=8, body_size=8192) as flood:
        poll(lambda: flood.count(0, code=ResponseCode.SUCCESS) >= 100, 30, "SEND_OK before the freeze")
        fault.apply()
        fault.verify()
        frozen_at = time.monotonic()
        poll(lambda: any((o.remark or "").startswith("[REJECTREQUEST]") for o in flood.since(frozen_at)), 30,
             "[REJECTREQUEST] once the pool is empty")
        assert cluster.runtime("master")["remainTransientStoreBufferNumbs"] == "0"
        fault.revert()
        thawed_at = time.monotonic()
        poll(lambda: flood.count(thawed_at, code=ResponseCode.SUCCESS) >= 50, 30, "SEND_OK after the thaw")


@pytest.mark.parametrize(("replicas", "expected"), [("1", ResponseCode.SUCCESS), ("2", ResponseCode.FLUSH_SLAVE_TIMEOUT)])
def test_5x_sync_master_waits_only_for_in_sync_replicas(emu_cluster, replicas, expected):
    cluster = emu_cluster(version="5.3.0", master_conf={"inSyncReplicas": replicas, "totalReplicas": replicas,
                                                         "slaveTimeout": "1500"})
    wire.create_topic(cluster.client, cluster.master.addr, TOPIC, 1)
    assert _send(cluster, "first").code == ResponseCode.SUCCESS
    fault = DiskFreeze(cluster.target("slave"), journal=cluster.journal)
    fault.apply()
    fault.verify()
    replies = [_send(cluster, f"f{i}", b"f" * 65536) for i in range(3)]
    fault.revert()
    assert replies[-1].code == expected
    if expected == ResponseCode.FLUSH_SLAVE_TIMEOUT:
        assert replies[-1].latency_ms >= 1500
        assert "transfer message to slave timeout, offset" in cluster.master.log("store.log")

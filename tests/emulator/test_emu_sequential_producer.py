"""One sequential producer, slave store read-only, nothing queued ahead: once replication stops at the slave's file
boundary each send is answered FLUSH_SLAVE_TIMEOUT after the version's wait: `syncFlushTimeout` counted from when the
group-transfer service reaches the request (4.9.1), `slaveTimeout` fixed when the request is made (4.9.3)."""
from __future__ import annotations

import os

import pytest
from emu_load import send_one

from faults.readonly_fs import ReadonlyFs

pytestmark = pytest.mark.root
TOPIC = "SeqTopic"
BODY = os.urandom(96 * 1024)  # incompressible: the client's zlib (over 4 KiB) leaves 96 KiB for the store
MAX_SENDS = 120
CLIENT_TIMEOUT_MS = 10000


@pytest.mark.parametrize(("version", "conf", "wait_ms"), [
    ("4.9.1", {"syncFlushTimeout": "2500", "slaveTimeout": "1000"}, 2500),
    ("4.9.3", {"syncFlushTimeout": "5000", "slaveTimeout": "1500"}, 1500),
])
def test_flush_slave_timeout_after_the_version_wait(emu_cluster, version, conf, wait_ms):
    cluster = emu_cluster(version=version, master_conf=conf)
    cluster.create_topic(TOPIC, 1)
    producer = cluster.producer()
    assert send_one(producer, TOPIC, BODY, "first", CLIENT_TIMEOUT_MS).outcome == "SEND_OK"
    fault = ReadonlyFs(cluster.target("slave"), journal=cluster.journal)
    fault.apply()
    fault.verify()
    replies = []
    for i in range(MAX_SENDS):
        reply = send_one(producer, TOPIC, BODY, f"seq-{i}", CLIENT_TIMEOUT_MS)
        replies.append(reply)
        if reply.outcome != "SEND_OK":
            break
    words = [r.outcome for r in replies]
    assert words[0] == "SEND_OK", "the slave acknowledges at first although it stores nothing"
    assert words[-1] == "FLUSH_SLAVE_TIMEOUT", words
    late = replies[-1]
    assert late.code == 12 and late.attempts == 1  # a send status: returned to the application, not retried
    assert wait_ms <= late.latency_ms < CLIENT_TIMEOUT_MS
    if version == "4.9.3":
        assert late.latency_ms < 2500, "4.9.3 waits slaveTimeout, not syncFlushTimeout"
        assert "transfer messsage to slave timeout" not in cluster.master.log("store.log")
    else:
        assert "transfer messsage to slave timeout" in cluster.master.log("store.log")

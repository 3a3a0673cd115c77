"""One sequential producer, slave store read-only, nothing queued ahead: once replication stops at the slave's file
boundary each send is answered FLUSH_SLAVE_TIMEOUT after the version's wait: `syncFlushTimeout` counted from when the
group-transfer service reaches the request (4.9.1), `slaveTimeout` fixed when the request is made (4.9.3)."""
from __future__ import annotations

import emu_wire as wire
import pytest

from faults.readonly_fs import ReadonlyFs
from remoting.codes import ResponseCode

pytestmark = pytest.mark.root
TOPIC = "SeqTopic"
BODY = b"s" * (96 * 1024)
MAX_SENDS = 120
CLIENT_TIMEOUT_MS = 10000


@pytest.mark.parametrize(("version", "conf", "wait_ms"), [
    ("4.9.1", {"syncFlushTimeout": "2500", "slaveTimeout": "1000"}, 2500),
    ("4.9.3", {"syncFlushTimeout": "5000", "slaveTimeout": "1500"}, 1500),
])
def test_flush_slave_timeout_after_the_version_wait(emu_cluster, version, conf, wait_ms):
    cluster = emu_cluster(version=version, master_conf=conf)
    client = cluster.client
    wire.create_topic(client, cluster.master.addr, TOPIC, 1)
    assert wire.send(client, cluster.master.addr, TOPIC, BODY, "first", 0, CLIENT_TIMEOUT_MS).code == 0
    fault = ReadonlyFs(cluster.target("slave"), journal=cluster.journal)
    fault.apply()
    fault.verify()
    replies = []
    for i in range(MAX_SENDS):
        reply = wire.send(client, cluster.master.addr, TOPIC, BODY, f"seq-{i}", 0, CLIENT_TIMEOUT_MS)
        replies.append(reply)
        if reply.code != ResponseCode.SUCCESS:
            break
    codes = [r.code for r in replies]
    assert codes[0] == ResponseCode.SUCCESS, "the slave acknowledges at first although it stores nothing"
    assert codes[-1] == ResponseCode.FLUSH_SLAVE_TIMEOUT, codes
    late = replies[-1]
    assert wait_ms <= late.latency_ms < CLIENT_TIMEOUT_MS
    if version == "4.9.3":
        assert late.latency_ms < 2500, "4.9.3 waits slaveTimeout, not syncFlushTimeout"
        assert "transfer messsage to slave timeout" not in cluster.master.log("store.log")
    else:
        assert "transfer messsage to slave timeout" in cluster.master.log("store.log")

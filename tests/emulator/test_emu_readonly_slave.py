"""Slave store turned read-only by an ext4 error under load (4.9.1 profile, 1 MiB commitlog files), as the real
4.9.1 cluster was recorded doing (shared/fixtures/README.md): SEND_OK goes on while the slave drops the replicated
bytes; at the slave's next file boundary replication stops with the slave still counted as connected, the master's
group-transfer waits serialize (one `transfer messsage to slave timeout` per syncFlushTimeout), clients time out; the
messages acknowledged after the fault are not on the slave. With haSlaveFallbehindMax at 1 MiB the master answers
SLAVE_NOT_AVAILABLE at once after the gap passes it."""
from __future__ import annotations

import threading
import time

import emu_wire as wire
import pytest
from emu_cluster import poll
from emu_load import Flood

from faults.readonly_fs import ReadonlyFs
from remoting.codes import ResponseCode
from remoting.errors import RemotingError
from remoting.message import Message
from remoting.producer import Producer

pytestmark = pytest.mark.root
TOPIC = "RoTopic"


def _apply_readonly(cluster):
    fault = ReadonlyFs(cluster.target("slave"), journal=cluster.journal)
    fault.apply()
    fault.verify()
    return time.monotonic()


def test_readonly_slave_acks_then_stalls_at_file_boundary(emu_cluster):
    files = {"mappedFileSizeCommitLog": str(2 << 20)}
    cluster = emu_cluster(master_conf=files, slave_conf=files)
    client = cluster.client
    wire.create_topic(client, cluster.master.addr, TOPIC, 4)
    with Flood(client, cluster.master.addr, TOPIC, threads=12, body_size=1024) as flood:
        poll(lambda: flood.count(0, code=ResponseCode.SUCCESS) >= 200, 30, "SEND_OK before the fault")
        fault_at = _apply_readonly(cluster)
        after = fault_at + 0.2
        # 1. SEND_OK at full speed while the slave stores nothing
        poll(lambda: flood.count(after, code=ResponseCode.SUCCESS) >= 100, 30, "SEND_OK after the fault")
        # 2. the cliff: replication stops, sends time out
        poll(lambda: flood.count(fault_at, error="RemotingTimeoutException") >= 10, 60, "client timeouts")
        stalled_at = time.monotonic()
        poll(lambda: "transfer messsage to slave timeout" in cluster.master.log("store.log"), 15,
             "the group-transfer timeout line")
        # the slave stays counted as connected and far below haSlaveFallbehindMax
        info = poll(lambda: (lambda i: i if int(i["haConnectionCount"]) > 0 else None)(cluster.runtime("master")),
                    15, "a counted slave connection")
        gap = int(info["commitLogMaxOffset"]) - int(info["haPush2SlaveMaxOffset"])
        assert 0 < gap < 256 << 20
        probe: list = []
        producer = Producer(cluster.nodes["namesrv"].addr, "probe_group")
        prober = threading.Thread(target=_probe, args=(producer, probe), daemon=True)
        prober.start()
        prober.join(45)
        producer.close()
        # a new producer with send(msg, 30000): the whole budget goes into waiting, no answer comes
        assert probe and probe[0][0] == "RemotingTooMuchRequestException", probe
        assert probe[0][1] >= 30000
        late = flood.since(stalled_at + 4)
        assert late and all(o.code != ResponseCode.SUCCESS for o in late)
    # the slave drops what came after the fault; the master has it
    slave_log = cluster.slave.log("store.log")
    assert "Error occurred when append message to mappedFile." in slave_log
    assert "appendData getLastMappedFile error" in slave_log
    acked = {o.key: o.queue_id for o in flood.since(after) if o.code == ResponseCode.SUCCESS}
    on_master = {m.keys for q in range(4) for m in wire.pull_queue(client, cluster.master.addr, TOPIC, q)}
    on_slave = {m.keys for q in range(4) for m in wire.pull_queue(client, cluster.slave.addr, TOPIC, q)}
    assert acked and set(acked) <= on_master
    assert not set(acked) & on_slave


def _probe(producer: Producer, out: list) -> None:
    begin = time.monotonic()
    try:
        result = producer.send(Message(TOPIC, b"probe", keys="probe"), 30000)
        out.append((result.status, (time.monotonic() - begin) * 1000))
    except RemotingError as e:
        out.append((type(e).__name__, (time.monotonic() - begin) * 1000))


def test_readonly_slave_with_small_fallbehind_max_gets_slave_not_available(emu_cluster):
    cluster = emu_cluster(master_conf={"haSlaveFallbehindMax": str(1 << 20)})
    client = cluster.client
    wire.create_topic(client, cluster.master.addr, TOPIC, 4)
    with Flood(client, cluster.master.addr, TOPIC, threads=12, body_size=48 * 1024) as flood:
        poll(lambda: flood.count(0, code=ResponseCode.SUCCESS) >= 20, 30, "SEND_OK before the fault")
        fault_at = _apply_readonly(cluster)
        poll(lambda: flood.count(fault_at, error="RemotingTimeoutException") >= 1, 60, "client timeouts")
        poll(lambda: flood.count(fault_at, code=ResponseCode.SLAVE_NOT_AVAILABLE) >= 20, 60, "SLAVE_NOT_AVAILABLE")
    sna = [o for o in flood.since(fault_at) if o.code == ResponseCode.SLAVE_NOT_AVAILABLE]
    # answered at once, not after a group-transfer wait (syncFlushTimeout 5000 ms) or a client timeout
    assert sorted(o.latency_ms for o in sna)[len(sna) // 2] < 1000
    info = cluster.runtime("master")
    assert int(info["commitLogMaxOffset"]) - int(info["haPush2SlaveMaxOffset"]) >= 1 << 20

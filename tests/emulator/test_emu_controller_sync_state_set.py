"""Controller mode, `allAckInSyncStateSet=true`, `minInSyncReplicas=2`: a slave frozen under a load of 1 MB random
(incompressible) messages stops catching up (the master's writes fill the socket buffers, which 5.x leaves to the
kernel's autotuning, so they take megabytes; while the master has nothing left to send, 5.3.0 counts the slave as
caught up); the master drops it from the SyncStateSet after `haMaxTimeSlaveNotCatchup` (at the next
`checkSyncStateSetPeriod` check) and the controller agrees; meanwhile sends wait for it and end FLUSH_SLAVE_TIMEOUT;
once the set is the master alone every send is refused with SYSTEM_ERROR "in-sync replicas not enough" and nothing
is stored; thawed, the slave catches up, is added back and sends are SEND_OK again."""
from __future__ import annotations

import random
import threading
import time

from emu_cluster import poll
from emu_load import send_one

TOPIC = "SssTopic"
NOT_CATCHUP_MS, CHECK_MS = 3000, 1000
SHRINK_BOUND_S = (NOT_CATCHUP_MS + CHECK_MS) / 1000 + 15
EXPAND_BOUND_S = 1 + 15  # haSendHeartbeatInterval (1 s here) + margin
BODY = 1_000_000


def test_frozen_slave_leaves_the_set_sends_refused_below_min_in_sync_then_it_rejoins(controller_cluster):
    cluster = controller_cluster(broker_conf={"haMaxTimeSlaveNotCatchup": str(NOT_CATCHUP_MS),
                                              "checkSyncStateSetPeriod": str(CHECK_MS), "minInSyncReplicas": "2"})
    master, slave = cluster.master_name(), cluster.slave_names()[0]
    master_id = cluster.sync_state().master_broker_id
    cluster.admin.create_topic(cluster.nodes[master].addr, TOPIC, 2, 2)
    producer = cluster.producer(profile="java-5.3", retry_times_when_send_failed=0)
    assert poll(lambda: send_one(producer, TOPIC, b"ok", "first", 5000).outcome == "SEND_OK", 30, "a first SEND_OK")

    outcomes: list = []
    stop = threading.Event()

    def load() -> None:
        i = 0
        while not stop.is_set():
            outcomes.append((time.monotonic(), send_one(producer, TOPIC, random.randbytes(BODY), f"k{i}", 5000)))
            i += 1
            time.sleep(0.02)

    cluster.freeze(slave)  # before the load: the socket buffers between them have not grown yet
    frozen_at = time.monotonic()
    threads = [threading.Thread(target=load) for _ in range(4)]
    for t in threads:
        t.start()
    try:
        info = poll(lambda: (i := cluster.sync_state()) and i.sync_state_set == {master_id} and i, SHRINK_BOUND_S,
                    "the SyncStateSet to shrink to the master")
        shrunk_at = time.monotonic()
        assert shrunk_at - frozen_at >= NOT_CATCHUP_MS / 1000
        assert [r.broker_id for r in info.not_in_sync_replicas] != []
        refused = poll(lambda: [o for t, o in outcomes if t > shrunk_at + 1 and o.code == 1], 10,
                       "in-sync replicas not enough")
        assert "CODE: 1  DESC: in-sync replicas not enough" in refused[0].remark
        waited = {o.outcome for t, o in outcomes if t < shrunk_at - 1}
        assert "FLUSH_SLAVE_TIMEOUT" in waited and waited <= {"FLUSH_SLAVE_TIMEOUT", "SEND_OK"}
        cluster.thaw(slave)
        thawed_at = time.monotonic()
        cluster.wait_in_sync(2, EXPAND_BOUND_S)
        poll(lambda: any(t > thawed_at and o.outcome == "SEND_OK" for t, o in outcomes), 10, "SEND_OK again")
    finally:
        stop.set()
        for t in threads:
            t.join(15)
    store_log = cluster.nodes[master].log("store.log")
    assert "The slave" in store_log and "has caught up" in store_log
    assert "SyncStateSet changed from [1, 2] to [1]" in cluster.nodes[master].log("broker.log").replace(
        str(master_id), "1")

"""Unclean election: a slave out of the SyncStateSet (frozen under load until the master dropped it) is not elected
when the master dies while `enableElectUncleanMaster` is off (the default): the controller records that no master
could be elected, and the slave's own requests to become master fail. Switched on (`updateControllerConfig`, live),
the slave's next request elects it, and what the old master acknowledged alone is not on it: the loss unclean
election buys availability with."""
from __future__ import annotations

import random
import threading
import time

from emu_cluster import poll
from emu_load import send_one

TOPIC = "UncleanTopic"
QUEUES = 2
NO_ELECTION_WATCH_S = 7  # longer than syncBrokerMetadataPeriod (5 s): the slave has asked to be elected meanwhile
ELECT_BOUND_S = 5 + 15  # syncBrokerMetadataPeriod + margin


def test_out_of_sync_slave_elected_only_with_unclean_election_and_then_misses_messages(controller_cluster):
    cluster = controller_cluster(broker_conf={"haMaxTimeSlaveNotCatchup": "3000", "checkSyncStateSetPeriod": "1000"})
    master, slave = cluster.master_name(), cluster.slave_names()[0]
    master_id = cluster.sync_state().master_broker_id
    for name in (master, slave):
        cluster.admin.create_topic(cluster.nodes[name].addr, TOPIC, QUEUES, QUEUES)
    producer = cluster.producer(profile="java-5.3", retry_times_when_send_failed=0)
    poll(lambda: send_one(producer, TOPIC, b"ok", "first", 5000).outcome == "SEND_OK", 30, "a first SEND_OK")

    acked: list = []
    stop = threading.Event()

    def load(n: int) -> None:
        i = 0
        while not stop.is_set():
            outcome = send_one(producer, TOPIC, random.randbytes(1_000_000), f"t{n}-{i}", 5000)
            if outcome.outcome == "SEND_OK":
                acked.append(outcome.key)
            i += 1

    cluster.freeze(slave)
    threads = [threading.Thread(target=load, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    try:
        poll(lambda: (i := cluster.sync_state()) and i.sync_state_set == {master_id}, 30, "the slave out of the set")
        poll(lambda: len(acked) >= 4, 15, "sends acknowledged by the master alone")
    finally:
        stop.set()
        for t in threads:
            t.join(15)
    cluster.kill(master)
    cluster.thaw(slave)
    time.sleep(NO_ELECTION_WATCH_S)
    info = cluster.sync_state()
    assert info.master_broker_id is None and info.master_address is None
    assert info.sync_state_set == {master_id}
    assert "Failed to elect a new master for broker broker-a" in cluster.nodes["namesrv"].log("namesrv.log")

    cluster.ctrl.update_controller_config(cluster.leader(), {"enableElectUncleanMaster": "true"})
    assert cluster.ctrl.get_controller_config(cluster.leader())["enableElectUncleanMaster"] == "true"
    info = poll(lambda: (i := cluster.sync_state()) and i.master_address == cluster.nodes[slave].addr and i,
                ELECT_BOUND_S, "the out-of-sync slave elected")
    assert info.sync_state_set == {info.master_broker_id}
    held = {m.keys for m in cluster.pull_all(slave, TOPIC, QUEUES)}
    assert set(acked) - held  # acknowledged by the old master alone: not on the new one

"""Controller mode, embedded controller, two brokers, `allAckInSyncStateSet=true`: the master is killed right after
sends it could not replicate (its slave frozen: FLUSH_SLAVE_TIMEOUT; more bytes than the sockets between them
hold, so part of them never reaches the slave; the controller, frozen meanwhile, sees the death after the slave
has appended what reached it), the controller elects the in-sync slave within a bound made of the configured
timeouts, the new master cuts the half-received message and starts epoch 2 at the end of the acknowledged
messages, the name server gives it as brokerId 0; the old master comes back as a slave, truncates its log to epoch
2's start and rejoins the SyncStateSet; every SEND_OK message is read back from both brokers, and both hold the
same messages. The controller logs the election as 5.3.0 does."""
from __future__ import annotations

import concurrent.futures as cf
import random

from emu_cluster import poll
from emu_load import send_one

from remoting.producer import Producer

TOPIC = "CtrlTopic"
QUEUES = 4
UNREPLICATED, UNREPLICATED_SIZE = 16, 400_000
HA_CLOSED = "AutoSwitchHAClient close connection with master"
ELECT_BOUND_S = 10 + 5 + 10
"""controllerHeartBeatTimeoutMills + scanNotActiveBrokerInterval + margin (a killed broker's closed channel makes
it immediate; the bound holds for a silent one too)"""


def _send(producer: Producer, prefix: str, n: int, threads: int = 4, size: int = 100) -> list:
    """`n` sends of `size` random bytes (incompressible: the producer compresses bodies over 4 KiB)."""
    with cf.ThreadPoolExecutor(threads) as pool:
        return list(pool.map(lambda i: send_one(producer, TOPIC, random.randbytes(size), f"{prefix}-{i}", 5000),
                             range(n)))


def test_killed_master_in_sync_slave_elected_old_master_truncated_nothing_acknowledged_lost(controller_cluster):
    cluster = controller_cluster()
    master, slave = cluster.master_name(), cluster.slave_names()[0]
    for name in (master, slave):
        cluster.admin.create_topic(cluster.nodes[name].addr, TOPIC, QUEUES, QUEUES)
    poll(lambda: cluster.route_master(TOPIC) == cluster.nodes[master].addr, 30, "the route of the topic")
    producer = cluster.producer(profile="java-5.3", retry_times_when_send_failed=0)
    acked = _send(producer, "before", 120)
    assert {o.outcome for o in acked} == {"SEND_OK"}
    acked_end = cluster.ctrl.get_broker_epoch_cache(cluster.nodes[master].addr).max_offset

    cluster.freeze(slave)  # the slave stops acknowledging: these are on the master only
    unreplicated = _send(producer, "unreplicated", UNREPLICATED, UNREPLICATED, UNREPLICATED_SIZE)
    assert "FLUSH_SLAVE_TIMEOUT" in {o.outcome for o in unreplicated}
    assert "SEND_OK" not in {o.outcome for o in unreplicated}  # (a send may also be refused as busy: 16 at once)
    before = cluster.sync_state()
    master_end = cluster.ctrl.get_broker_epoch_cache(cluster.nodes[master].addr).max_offset
    # the controller (in the name server) learns of the death once the slave has taken in what the old master had
    # sent it: its HA client appends those frames (a message cut in the middle) before the role change, which cuts
    # them, as the real 5.3.0 did ("Truncate commitLog to <end of the acknowledged messages>")
    cluster.freeze("namesrv")
    cluster.kill(master)
    closes = cluster.nodes[slave].log("store.log").count(HA_CLOSED)
    cluster.thaw(slave)
    poll(lambda: cluster.nodes[slave].log("store.log").count(HA_CLOSED) > closes, 30, "the slave's HA client to close")
    cluster.thaw("namesrv")

    info = poll(lambda: (i := cluster.sync_state()) and i.master_address == cluster.nodes[slave].addr and i,
                ELECT_BOUND_S, "the slave's election")
    assert info.master_epoch == before.master_epoch + 1
    assert info.sync_state_set == {info.master_broker_id}
    assert {r.broker_id for r in info.not_in_sync_replicas} == set(before.sync_state_set) - {info.master_broker_id}
    poll(lambda: cluster.route_master(TOPIC) == cluster.nodes[slave].addr, 30, "brokerId 0 in the route")
    epochs = cluster.ctrl.get_broker_epoch_cache(cluster.nodes[slave].addr)
    assert [e.epoch for e in epochs.epoch_list] == [1, 2]
    start2 = epochs.epoch_list[1].start_offset
    assert start2 == acked_end < master_end  # what reached the slave of the unreplicated tail was cut

    fresh = cluster.producer(group="after_group", profile="java-5.3")
    acked += _send(fresh, "after", 40)
    assert {o.outcome for o in acked} == {"SEND_OK"}

    cluster.restart(master)
    poll(lambda: len((cluster.sync_state() or before).sync_state_set) == 2, 30, "the old master back in sync")
    old = cluster.ctrl.get_broker_epoch_cache(cluster.nodes[master].addr)
    assert [(e.epoch, e.start_offset) for e in old.epoch_list] == [(1, 0), (2, start2)]
    assert old.broker_id == before.master_broker_id  # a slave registers under its controller id, not 0
    store_log = cluster.nodes[master].log("store.log")
    assert f"truncateOffset is {start2}" in store_log
    assert f"Truncate slave log to {start2} success, change to transfer state" in store_log
    # the controller's lines as 5.3.0 prints them: its RoleChangeNotifyEntry has no toString, and the election's
    # response is printed before its header is encoded into fields (neither names the broker elected)
    controller_log = cluster.nodes["namesrv"].log("namesrv.log")
    assert "RoleChangeNotifyEntry:org.apache.rocketmq.remoting.protocol.body.RoleChangeNotifyEntry@" in controller_log
    assert "done, result: RemotingCommand [code=0, language=JAVA, version=" in controller_log
    assert "flag(B)=1, remark=null, extFields=null, serializeTypeCurrentRPC=JSON]" in controller_log

    want = {o.key for o in acked}
    held = {name: {m.keys for m in poll(lambda n=name: _read_all(cluster, n, want), 30, f"every message on {name}")}
            for name in (slave, master)}
    assert held[master] == held[slave]
    assert {o.key for o in unreplicated} - held[slave]  # the tail only the old master had is gone everywhere


def _read_all(cluster, name: str, want: set[str]):
    messages = cluster.pull_all(name, TOPIC, QUEUES)
    return messages if want <= {m.keys for m in messages} else None

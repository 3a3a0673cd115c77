"""Consumer groups on the emulator's broker, through real sockets as a Java push consumer's channel sees them: a
heartbeat with consumer data registers the client (GET_CONSUMER_LIST_BY_GROUP lists it, the `%RETRY%<group>` topic
and the subscription group are created); a second client's heartbeat, its UNREGISTER_CLIENT or its closed connection
send NOTIFY_CONSUMER_IDS_CHANGED (40, oneway, header consumerGroup) to the clients left, as the real 4.9.1 did; a
group with no client answers SYSTEM_ERROR "no consumer for this group, <group>"."""
from __future__ import annotations

import json

import pytest
from consumer_wire import WireConnection, consumer_data
from waiting import poll

from remoting.codes import RequestCode, ResponseCode

pytestmark = pytest.mark.root
TOPIC = "GroupTopic"
GROUP = "emu_group_a"


def _ids(conn: WireConnection) -> list[str] | str:
    response = conn.call(RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": GROUP})
    if response.code != ResponseCode.SUCCESS:
        return f"{response.code} {response.remark}"
    return sorted(json.loads(response.body)["consumerIdList"])


def test_clients_joining_and_leaving_are_notified(emu_cluster):
    cluster = emu_cluster(wait_slave=False)
    cluster.create_topic(TOPIC, 2)
    c1, c2, c3 = (WireConnection(cluster.master.addr) for _ in range(3))
    try:
        assert _ids(c1) == f"1 no consumer for this group, {GROUP}"
        assert c1.heartbeat("127.0.0.1@c1", [consumer_data(GROUP, [TOPIC])]).code == ResponseCode.SUCCESS
        assert c1.wait_notifies(GROUP, 1, 5) == 1  # the first client is told too (the group changed)
        assert c1.heartbeat("127.0.0.1@c1", [consumer_data(GROUP, [TOPIC])]).code == ResponseCode.SUCCESS
        assert _ids(c1) == ["127.0.0.1@c1"]
        assert c1.notifies(GROUP) == 1  # a heartbeat that changes nothing notifies nobody

        c2.heartbeat("127.0.0.1@c2", [consumer_data(GROUP, [TOPIC])])
        assert c1.wait_notifies(GROUP, 2, 5) == 2
        assert c2.wait_notifies(GROUP, 1, 5) == 1
        c3.heartbeat("127.0.0.1@c3", [consumer_data(GROUP, [TOPIC])])
        assert c1.wait_notifies(GROUP, 3, 5) == 3
        assert _ids(c1) == ["127.0.0.1@c1", "127.0.0.1@c2", "127.0.0.1@c3"]

        c2.close()  # a closed channel leaves the group
        assert c1.wait_notifies(GROUP, 4, 5) == 4
        assert c3.wait_notifies(GROUP, 2, 5) == 2
        assert poll(lambda: _ids(c1) == ["127.0.0.1@c1", "127.0.0.1@c3"], 5, "c2 gone from the list")

        response = c3.call(RequestCode.UNREGISTER_CLIENT, {"clientID": "127.0.0.1@c3", "consumerGroup": GROUP})
        assert (response.code, response.ext_fields) == (ResponseCode.SUCCESS, {})
        assert c1.wait_notifies(GROUP, 5, 5) == 5
        assert _ids(c1) == ["127.0.0.1@c1"]

        topics = json.loads(c1.call(RequestCode.GET_ALL_TOPIC_CONFIG).body)["topicConfigTable"]
        assert topics[f"%RETRY%{GROUP}"]["readQueueNums"] == 1 and topics[f"%RETRY%{GROUP}"]["perm"] == 6
        groups = json.loads(c1.call(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG).body)["subscriptionGroupTable"]
        assert groups[GROUP]["retryMaxTimes"] == 16 and "SELF_TEST_C_GROUP" in groups
    finally:
        for conn in (c1, c2, c3):
            conn.close()


def test_notify_can_be_switched_off(emu_cluster):
    cluster = emu_cluster(wait_slave=False, master_conf={"notifyConsumerIdsChangedEnable": "false"})
    c1, c2 = WireConnection(cluster.master.addr), WireConnection(cluster.master.addr)
    try:
        c1.heartbeat("127.0.0.1@c1", [consumer_data(GROUP, [TOPIC])])
        c2.heartbeat("127.0.0.1@c2", [consumer_data(GROUP, [TOPIC])])
        assert _ids(c1) == ["127.0.0.1@c1", "127.0.0.1@c2"]
        c2.close()
        assert poll(lambda: _ids(c1) == ["127.0.0.1@c1"], 5, "c2 gone from the list")
        assert c1.notifies(GROUP) == 0
    finally:
        c1.close()
        c2.close()


class _FakeChannel:
    """Unit-test stand-in for `emulator.server.Channel`: records what is sent and whether it was closed."""

    def __init__(self, name: str) -> None:
        self.remote, self.version, self.sent, self.closed = name, 395, [], False

    def send(self, cmd) -> None:
        self.sent.append(cmd)

    def close(self) -> None:
        self.closed = True


def test_a_channel_without_heartbeat_for_120_s_is_closed_and_removed():
    from emulator.consumer_manager import ClientChannelInfo, ConsumerManager

    manager = ConsumerManager(lambda: True)
    old, fresh = _FakeChannel("old"), _FakeChannel("fresh")
    now = 1_000_000_000
    manager.register(GROUP, old, ClientChannelInfo("c-old", 0, 395, now - 120_001), consumer_data(GROUP, [TOPIC]), True)
    manager.register(GROUP, fresh, ClientChannelInfo("c-new", 0, 395, now - 119_000), consumer_data(GROUP, [TOPIC]),
                     True)
    assert manager.client_ids(GROUP) == ["c-old", "c-new"]
    assert manager.scan_not_active(now) == [old]
    assert old.closed and not fresh.closed
    assert manager.client_ids(GROUP) == ["c-new"]
    assert manager.scan_not_active(now + 1001) == [fresh]
    assert manager.group(GROUP) is None

"""Our frames against the frames recorded from a real Apache RocketMQ 4.9.1 cluster (tests/fixtures/rocketmq-4.9.1).
Every recorded frame decodes and re-encodes byte for byte; for each recorded request our client, given the same
inputs, sends the same frame (opaque, timestamps and the chosen queue aside); every recorded response, replayed by a
server, decodes into the right result objects."""
from __future__ import annotations

import dataclasses
import json

import pytest
from remoting_scripted_server import Reply

from remoting import codec
from remoting.acl import AclCredentials
from remoting.admin import BrokerAdmin
from remoting.codes import SerializeType
from remoting.command import RemotingCommand
from remoting.consumer import PullConsumer
from remoting.errors import MQClientException
from remoting.headers import RegisterBrokerRequestHeader
from remoting.message import Message
from remoting.namesrv import NameServerClient
from remoting.producer import Producer

MQADMIN = AclCredentials("rocketmq2", "12345678")  # tools.yml defaults: the recorded mqadmin frames are signed


def load(wire_dir, name) -> list[dict]:
    return json.loads((wire_dir / name).read_text())


def command(frame: dict) -> RemotingCommand:
    return codec.decode_frame(bytes.fromhex(frame["hex"])[4:])


def pairs(wire_dir, name) -> list[tuple[dict, dict | None]]:
    """(request, response) frames of a recording, matched by TCP stream and opaque."""
    frames = load(wire_dir, name)
    out = []
    for f in frames:
        if f["direction"] != "request":
            continue
        opaque = json.loads(f["header_json"])["opaque"]
        match = next((r for r in frames if r["direction"] == "response" and r["tcp_stream"] == f["tcp_stream"]
                      and json.loads(r["header_json"])["opaque"] == opaque), None)
        out.append((f, match))
    return out


def test_every_recorded_frame_decodes_and_re_encodes_byte_for_byte(wire_dir):
    count = 0
    for path in sorted(wire_dir.glob("*.json")):
        for frame in json.loads(path.read_text()):
            raw = bytes.fromhex(frame["hex"])
            cmd = codec.decode_frame(raw[4:])
            assert cmd.code == frame.get("response_code", frame["request_code"])
            assert cmd.serialize_type == frame["serialize_type"]
            assert cmd.is_response == (frame["direction"] == "response")
            assert codec.encode(cmd) == raw, (path.name, frame["ts"])
            count += 1
    assert count == 185


@pytest.fixture
def replay(server_factory):
    """replay(recorded response frame or None) -> server answering every request with it (the request's opaque)."""

    def make(response_frame: dict | None):
        raw = command(response_frame) if response_frame else None
        return server_factory(lambda cmd: Reply(raw=raw) if raw else Reply())

    return make


def same_frame(ours: RemotingCommand, recorded: dict, *, volatile: tuple[str, ...] = ()) -> None:
    """Our request equals the recorded one byte for byte once opaque and the `volatile` extFields are taken over."""
    theirs = command(recorded)
    ext = dict(ours.ext_fields or {}) if ours.ext_fields is not None else None
    for key in volatile:
        ext[key] = theirs.ext_fields[key]
    patched = dataclasses.replace(ours, opaque=theirs.opaque, ext_fields=ext)
    assert patched.ext_fields == theirs.ext_fields
    assert codec.encode(patched) == bytes.fromhex(recorded["hex"])


def admin_call(replay, client_factory, wire_dir, name, call):
    (request, response), *_ = pairs(wire_dir, name)
    server = replay(response)
    admin = BrokerAdmin(client_factory(rpc_hook=MQADMIN))
    result = call(admin, server.addr)
    same_frame(server.requests[0], request)
    return result


def test_create_topic_frames(replay, client_factory, wire_dir):
    assert admin_call(replay, client_factory, wire_dir, "17_UPDATE_AND_CREATE_TOPIC.json",
                      lambda a, addr: a.create_topic(addr, "WireTopic", 2, 2, 6)) is None


def test_broker_config_frames(replay, client_factory, wire_dir):
    config = admin_call(replay, client_factory, wire_dir, "26_GET_BROKER_CONFIG.json",
                        lambda a, addr: a.get_broker_config(addr))
    assert len(config) == 163 and config["brokerName"] == "broker-a" and config["syncFlushTimeout"] == "5000"
    assert config["messageDelayLevel"].startswith("1s 5s 10s")
    admin_call(replay, client_factory, wire_dir, "25_UPDATE_BROKER_CONFIG.json",
               lambda a, addr: a.update_broker_config(addr, {"fileReservedTime": 48}))


def test_runtime_info_frames(replay, client_factory, wire_dir):
    info = admin_call(replay, client_factory, wire_dir, "28_GET_BROKER_RUNTIME_INFO.json",
                      lambda a, addr: a.get_runtime_info(addr))
    assert info["brokerVersionDesc"] == "V4_9_1" and info["commitLogMaxOffset"] == "370"
    assert info["getTotalTps"] == "0.0 0.0 0.0" and len(info) == 44


def test_unregister_client_frames(replay, client_factory, wire_dir):
    admin_call(replay, client_factory, wire_dir, "35_UNREGISTER_CLIENT.json",
               lambda a, addr: a.unregister_client(addr, "127.0.0.1@1795235205375", "CLIENT_INNER_PRODUCER"))


@pytest.mark.parametrize("name, serialize", [("34_HEART_BEAT.json", "JSON"),
                                             ("34_HEART_BEAT_ROCKETMQ_BINARY_HEADER.json", "ROCKETMQ")])
def test_heartbeat_frames(replay, client_factory, wire_dir, name, serialize):
    (request, response), *_ = pairs(wire_dir, name)
    server = replay(response)
    admin = BrokerAdmin(client_factory(), profile="java-4.9.1")
    admin.profile = dataclasses.replace(admin.profile, serialize_type=SerializeType[serialize])
    version = admin.heartbeat(server.addr, "127.0.0.1@wire-p", ["CLIENT_INNER_PRODUCER", "wire_producer_group"])
    assert version == 395
    same_frame(server.requests[0], request)


def test_route_and_cluster_frames(replay, client_factory, wire_dir):
    for name in ["105_GET_ROUTEINFO_BY_TOPIC.json", "105_GET_ROUTEINFO_BY_TOPIC_ROCKETMQ_BINARY_HEADER.json"]:
        for request, response in pairs(wire_dir, name):
            theirs = command(request)
            server = replay(response)
            ns = NameServerClient(client_factory([server.addr], rpc_hook=MQADMIN if "AccessKey" in
                                                 (theirs.ext_fields or {}) else None),
                                  serialize_type=theirs.serialize_type)
            route = ns.get_route(theirs.ext_fields["topic"])
            same_frame(server.requests[0], request)
            assert route.broker_datas[0].broker_addrs == {0: "127.0.0.1:10911", 1: "127.0.0.1:11911"}
            assert route.queue_datas[0].perm in (6, 7)
    (request, response), = pairs(wire_dir, "105_GET_ROUTEINFO_BY_TOPIC_TOPIC_NOT_EXIST.json")
    server = replay(response)
    with pytest.raises(MQClientException) as err:
        NameServerClient(client_factory([server.addr], rpc_hook=MQADMIN)).get_route("NoSuchTopic")
    assert err.value.response_code == 17
    assert err.value.error_message.startswith("No topic route info in name server for the topic: NoSuchTopic")
    same_frame(server.requests[0], request)
    (request, response), = pairs(wire_dir, "106_GET_BROKER_CLUSTER_INFO.json")
    server = replay(response)
    info = NameServerClient(client_factory([server.addr], rpc_hook=MQADMIN)).get_cluster_info()
    same_frame(server.requests[0], request)
    assert info.cluster_addr_table == {"DefaultCluster": ["broker-a"]}
    assert info.broker_addr_table["broker-a"].master_addr == "127.0.0.1:10911"


@pytest.mark.parametrize("name", ["11_PULL_MESSAGE.json", "11_PULL_MESSAGE_ROCKETMQ_BINARY_HEADER.json"])
def test_pull_frames(replay, client_factory, wire_dir, name):
    for request, response in pairs(wire_dir, name):
        theirs = command(request)
        server = replay(response)
        consumer = PullConsumer("wire_consumer_group", client_factory())
        consumer.profile = dataclasses.replace(consumer.profile, serialize_type=theirs.serialize_type)
        result = consumer.pull(server.addr, "WireTopic", int(theirs.ext_fields["queueId"]), 0, 4)
        same_frame(server.requests[0], request)
        recorded = command(response)
        if recorded.code == 0:
            assert (result.status, result.remark, result.next_begin_offset, result.max_offset) == ("FOUND", "FOUND", 1, 1)
            (msg,) = result.messages
            assert msg.body == b"hello wire 0" and msg.keys == "KEY0" and msg.properties["CLUSTER"] == "DefaultCluster"
        else:
            assert (result.status, result.remark, result.messages) == ("NO_NEW_MSG", "NO_MESSAGE_IN_QUEUE", [])


SEND_RECORDINGS = [("310_SEND_MESSAGE_V2_SEND_OK.json", "SEND_OK", "wire_producer_group"),
                   ("310_SEND_MESSAGE_V2_SEND_OK_ROCKETMQ_BINARY_HEADER.json", "SEND_OK", "wire_producer_group"),
                   ("310_SEND_MESSAGE_V2_FLUSH_SLAVE_TIMEOUT.json", "FLUSH_SLAVE_TIMEOUT", "probe_producer_group"),
                   ("310_SEND_MESSAGE_V2_SLAVE_NOT_AVAILABLE.json", "SLAVE_NOT_AVAILABLE", "probe_producer_group"),
                   ("310_SEND_MESSAGE_V2_NO_RESPONSE_stuck_slave.json", None, "probe_producer_group")]


@pytest.mark.parametrize("name, status, group", SEND_RECORDINGS)
def test_send_frames_and_results(replay, namesrv_factory, wire_dir, name, status, group):
    from remoting_scripted_server import route_for

    for request, response in pairs(wire_dir, name):
        theirs = command(request)
        if response is None:
            response = {"hex": codec.encode(dataclasses.replace(theirs, flag=1, code=0, ext_fields={
                "msgId": "7F00000100002A9F0000000000000000", "queueId": theirs.ext_fields["e"],
                "queueOffset": "0"})).hex()}
        broker = replay(response)
        namesrv = namesrv_factory({theirs.ext_fields["b"]: route_for({"broker-a": broker.addr})})
        props = dict(p.split("\x01") for p in theirs.ext_fields["i"].split("\x02"))
        user = {k: v for k, v in props.items() if k not in ("KEYS", "TAGS", "WAIT", "UNIQ_KEY")}
        message = Message(theirs.ext_fields["b"], command(request).body, tags=props.get("TAGS"),
                          keys=props.get("KEYS"), properties=user)
        message.put_property("UNIQ_KEY", props["UNIQ_KEY"])
        with Producer(namesrv.addr, group, serialize_type=theirs.serialize_type, heartbeat=False) as producer:
            result = producer.send(message)
        same_frame(broker.requests[0], request, volatile=("e", "g"))
        recorded = command(response)
        if status is not None:
            assert result.status == status and result.response_code == recorded.code
            assert result.offset_msg_id == recorded.ext_fields["msgId"]
            assert result.queue_offset == int(recorded.ext_fields["queueOffset"])
            assert result.queue_id == int(recorded.ext_fields["queueId"]) and result.msg_id == props["UNIQ_KEY"]
            assert result.region_id == "DefaultRegion" and result.trace_on


def test_register_broker_header_round_trip(wire_dir):
    (request, _), = pairs(wire_dir, "103_REGISTER_BROKER.json")
    theirs = command(request)
    header = RegisterBrokerRequestHeader.from_fields(theirs.ext_fields)
    assert (header.brokerId, header.compressed, header.haServerAddr) == (0, False, "127.0.0.1:10912")
    assert list(header.to_fields().items()) == list(theirs.ext_fields.items())



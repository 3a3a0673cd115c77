"""Request helpers the emulator tests drive the cluster with, on top of `remoting.client.RemotingClient` (real
sockets, the real codec). Stand-ins until `remoting.producer` / `remoting.consumer` / `remoting.admin` land: each is
one request with the header fields the Java client sends."""
from __future__ import annotations

import json
import time
from dataclasses import dataclass

from remoting import fastjson
from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from remoting.command import make_request
from remoting.message import properties_to_string
from remoting.message_id import create_uniq_id
from remoting.stored import MessageExt, decode_stored_messages

PULL_BATCH = 32
SUBSCRIPTION_FLAG = 0x4


@dataclass
class SendReply:
    code: int
    remark: str | None
    queue_id: int
    queue_offset: int
    msg_id: str
    key: str
    latency_ms: float


def send(client: RemotingClient, addr: str, topic: str, body: bytes, key: str, queue_id: int = 0,
         timeout_ms: float = 3000, group: str = "emu_test_producer") -> SendReply:
    """One SEND_MESSAGE_V2 as the 4.9.1 Java client builds it; raises the remoting exceptions on timeout/IO."""
    props = {"KEYS": key, "UNIQ_KEY": create_uniq_id(), "WAIT": "true", "TAGS": "T"}
    fields = {"a": group, "b": topic, "c": "TBW102", "d": 4, "e": queue_id, "f": 0, "g": int(time.time() * 1000),
              "h": 0, "i": properties_to_string(props), "j": 0, "k": False, "m": False}
    begin = time.monotonic()
    response = client.invoke_sync(addr, make_request(RequestCode.SEND_MESSAGE_V2, fields, body), timeout_ms)
    ext = response.ext_fields or {}
    return SendReply(response.code, response.remark, int(ext.get("queueId", -1)), int(ext.get("queueOffset", -1)),
                     ext.get("msgId", ""), key, (time.monotonic() - begin) * 1000)


def pull_queue(client: RemotingClient, addr: str, topic: str, queue_id: int) -> list[MessageExt]:
    """Every message of one queue, paging with PULL_MESSAGE (SUBSCRIPTION flag, `*`)."""
    out: list[MessageExt] = []
    offset = 0
    while True:
        fields = {"consumerGroup": "emu_test_consumer", "topic": topic, "queueId": queue_id, "queueOffset": offset,
                  "maxMsgNums": PULL_BATCH, "sysFlag": SUBSCRIPTION_FLAG, "commitOffset": 0,
                  "suspendTimeoutMillis": 0, "subscription": "*", "subVersion": 0, "expressionType": "TAG"}
        response = client.invoke_sync(addr, make_request(RequestCode.PULL_MESSAGE, fields), 10000)
        if response.code != ResponseCode.SUCCESS:
            return out
        batch = decode_stored_messages(response.body)
        out.extend(batch)
        offset = int((response.ext_fields or {})["nextBeginOffset"])
        if not batch:
            return out


def create_topic(client: RemotingClient, addr: str, topic: str, queues: int) -> None:
    fields = {"topic": topic, "defaultTopic": "TBW102", "readQueueNums": queues, "writeQueueNums": queues,
              "perm": 6, "topicFilterType": "SINGLE_TAG", "topicSysFlag": 0, "order": False}
    response = client.invoke_sync(addr, make_request(RequestCode.UPDATE_AND_CREATE_TOPIC, fields), 5000)
    assert response.code == ResponseCode.SUCCESS, response.remark


def runtime_info(client: RemotingClient, addr: str) -> dict[str, str]:
    response = client.invoke_sync(addr, make_request(RequestCode.GET_BROKER_RUNTIME_INFO), 5000)
    return json.loads(response.body)["table"]


def broker_config(client: RemotingClient, addr: str) -> dict[str, str]:
    response = client.invoke_sync(addr, make_request(RequestCode.GET_BROKER_CONFIG), 5000)
    return dict(line.split("=", 1) for line in response.body.decode().splitlines() if "=" in line)


def update_broker_config(client: RemotingClient, addr: str, changes: dict[str, str]) -> None:
    body = "".join(f"{k}={v}\n" for k, v in changes.items()).encode()
    response = client.invoke_sync(addr, make_request(RequestCode.UPDATE_BROKER_CONFIG, None, body), 5000)
    assert response.code == ResponseCode.SUCCESS, response.remark


def route(client: RemotingClient, topic: str) -> dict | None:
    response = client.invoke_sync(None, make_request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}), 3000)
    return fastjson.loads(response.body) if response.code == ResponseCode.SUCCESS else None

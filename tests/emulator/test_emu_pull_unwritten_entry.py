"""A consume-queue entry that a read-only slave never wrote reads as offset 0, size 0; 4.9.1 serves it as an empty
message buffer and its `readGetMessageResult` then fails reading the sysFlag: the pull is answered SYSTEM_ERROR (1)
with `java.lang.IndexOutOfBoundsException, ...`, as the real 4.9.1 slave answered the read-back after the fault.
The processor runs in the emulator's real remoting server and is asked by the real pull consumer over a socket; only
the store is a stand-in (it returns what the store returns for such an entry)."""
from __future__ import annotations

import types

import pytest

from emulator.config.broker_config import BrokerConfig
from emulator.processors.pull import BufferIndexOutOfBounds, PullMessageProcessor
from emulator.server import RemotingServer
from emulator.version import resolve_profile
from remoting.codes import RequestCode, ResponseCode
from remoting.consumer import PullConsumer
from remoting.errors import MQBrokerException
from remoting.stored import encode_stored_message

TOPIC = "T"


def _message() -> bytes:
    return bytes(encode_stored_message(topic=TOPIC, queue_id=0, body=b"x", properties={}, queue_offset=0,
                                       commitlog_offset=0, born_timestamp=0, born_host=("127.0.0.1", 1),
                                       store_timestamp=0, store_host="127.0.0.1:10911", flag=0, sys_flag=0,
                                       reconsume_times=0))


@pytest.fixture
def serve():
    servers = []

    def start(found: list[bytes]) -> str:
        config = BrokerConfig(resolve_profile("4.9.1"), overrides={"brokerRole": "SLAVE", "brokerId": "1",
                                                                    "slaveReadEnable": "true"})
        store = types.SimpleNamespace(get_message=lambda *a: ("FOUND", 1 + len(found), 0, 10, list(found)))
        ctx = types.SimpleNamespace(config=config, store=store, consumer_groups={},
                                    topics=types.SimpleNamespace(get=lambda t: {"readQueueNums": 4}))
        server = RemotingServer("127.0.0.1", 0, "NettyServerCodecThread", 395)
        server.register(RequestCode.PULL_MESSAGE, PullMessageProcessor(ctx), None)
        server.start()
        servers.append(server)
        return f"127.0.0.1:{server._listener.getsockname()[1]}"

    yield start
    for server in servers:
        server.shutdown()


def test_an_entry_never_written_fails_the_pull_with_index_out_of_bounds(serve):
    addr = serve([_message(), b""])
    with PullConsumer() as consumer, pytest.raises(MQBrokerException) as err:
        consumer.pull(addr, TOPIC, 0, 0)
    assert err.value.response_code == ResponseCode.SYSTEM_ERROR
    assert err.value.remark == BufferIndexOutOfBounds.java_desc
    assert err.value.remark.startswith("java.lang.IndexOutOfBoundsException, ")


def test_whole_messages_are_served(serve):
    addr = serve([_message(), _message()])
    with PullConsumer() as consumer:
        result = consumer.pull(addr, TOPIC, 0, 0)
    assert result.status == "FOUND" and [m.body for m in result.messages] == [b"x", b"x"]

"""The send path's cheaper wake-ups and writes: a `Wakeup` raised before its waiter waits is not lost; responses a
thread gathers reach the connection in the order they were made, in one write, and no later than the gathering
thread's next wait: the group-transfer service answers the requests an ack covered before it waits for the next
one (a request still waiting for the slave never holds back an acknowledged one)."""
from __future__ import annotations

import socket
import threading
import types

import pytest
from waiting import poll

from emulator.config.broker_config import BrokerConfig
from emulator.ha.group_transfer import GroupTransferService
from emulator.server import GATHER_MAX, Channel, flush_gathered, responses_gathered
from emulator.store.flush import GroupCommitRequest
from emulator.version import resolve_profile
from emulator.wakeup import Wakeup
from remoting.codec import FrameReader
from remoting.command import RemotingCommand


@pytest.fixture
def pair():
    a, b = socket.socketpair()
    channel = Channel(a, ("127.0.0.1", 1), 395)
    b.setblocking(False)
    yield channel, b
    channel.close()
    b.close()


def received(sock: socket.socket, reader: FrameReader, got: list) -> list:
    try:
        while True:
            data = sock.recv(65536)
            if not data:
                break
            got.extend(reader.feed(data))
    except BlockingIOError:
        pass
    return got


def request(opaque: int) -> RemotingCommand:
    return RemotingCommand(code=310, opaque=opaque)


def test_a_wakeup_raised_before_the_wait_is_not_lost():
    wake = Wakeup()
    wake.clear()
    wake.set()
    wake.set()  # raising a raised flag changes nothing
    assert wake.wait(0)
    wake.clear()
    assert not wake.wait(0)
    threading.Timer(0.05, wake.set).start()
    assert wake.wait(5.0)


def test_gathered_responses_arrive_in_order_at_the_end(pair):
    channel, peer = pair
    reader, got = FrameReader(), []
    with responses_gathered():
        for opaque in (1, 2, 3):
            channel.respond(request(opaque), 0, None, {"queueOffset": str(opaque)})
        with responses_gathered():  # a nested use joins the outer one
            channel.respond(request(4), 0)
        assert received(peer, reader, got) == []  # nothing written yet
    poll(lambda: len(received(peer, reader, got)) == 4)
    assert [c.opaque for c in got] == [1, 2, 3, 4]
    assert got[0].ext_fields == {"queueOffset": "1"} and all(c.is_response for c in got)


def test_flush_gathered_writes_what_was_gathered_so_far(pair):
    channel, peer = pair
    reader, got = FrameReader(), []
    with responses_gathered():
        channel.respond(request(7), 0)
        flush_gathered()
        poll(lambda: len(received(peer, reader, got)) == 1)
        channel.respond(request(8), 0)
        assert len(received(peer, reader, got)) == 1
    poll(lambda: len(received(peer, reader, got)) == 2)
    assert [c.opaque for c in got] == [7, 8]


def test_a_long_gathering_writes_every_gather_max_responses(pair):
    channel, peer = pair
    reader, got = FrameReader(), []
    with responses_gathered():
        for opaque in range(GATHER_MAX + 2):
            channel.respond(request(opaque), 0)
        poll(lambda: len(received(peer, reader, got)) == GATHER_MAX)  # the first ones are not held back
        assert len(received(peer, reader, got)) == GATHER_MAX
    poll(lambda: len(received(peer, reader, got)) == GATHER_MAX + 2)
    assert [c.opaque for c in got] == list(range(GATHER_MAX + 2))


def test_outside_a_gathering_a_response_is_written_at_once(pair):
    channel, peer = pair
    reader, got = FrameReader(), []
    channel.respond(request(9), 0)
    poll(lambda: received(peer, reader, got))
    assert got[0].opaque == 9


def test_group_transfer_answers_acked_requests_before_waiting_for_the_next(pair):
    channel, peer = pair
    profile = resolve_profile("4.9.1")
    config = BrokerConfig(profile, overrides={"brokerRole": "SYNC_MASTER", "syncFlushTimeout": "5000"})
    ha = types.SimpleNamespace(store=types.SimpleNamespace(profile=profile, config=config),
                               push2slave_max_offset=100, connections=lambda: [])
    service = GroupTransferService(ha)
    service.start()
    try:
        acked, waiting = GroupCommitRequest(100, 5000), GroupCommitRequest(200, 5000)
        acked.completion.then(lambda status: channel.respond(request(1), 0, status))
        waiting.completion.then(lambda status: channel.respond(request(2), 0, status))
        service.put_request(acked)
        service.put_request(waiting)
        reader, got = FrameReader(), []
        poll(lambda: received(peer, reader, got))
        assert [(c.opaque, c.remark) for c in got] == [(1, "PUT_OK")]
        assert not waiting.completion.done
        ha.push2slave_max_offset = 200  # the slave's next report
        service.notify_transfer_some()
        poll(lambda: len(received(peer, reader, got)) == 2)
        assert [(c.opaque, c.remark) for c in got] == [(1, "PUT_OK"), (2, "PUT_OK")]
    finally:
        service.shutdown()
        service.join(5)

"""RemotingClient over real sockets against scripted servers: multiplexing by opaque, Java's invokeSync timeout and
connect semantics, what a sync timeout's close does to the other requests in flight, peer close, garbage."""
from __future__ import annotations

import random
import re
import sys
import threading
import time

import pytest
from remoting_scripted_server import CLOSE, SILENT, Reply
from waiting import poll

from remoting import codec
from remoting.acl import AclCredentials
from remoting.client import RemotingClient, TransportRules
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand, make_request
from remoting.errors import (
    RemotingConnectException,
    RemotingSendRequestException,
    RemotingTimeoutException,
)

RULES_5X = TransportRules(pre_send_timeout="invokeSync call the addr[{addr}] timeout", timeout_when_nothing_left=True,
                          min_close_left_ms=100, fail_inflight_on_eof=True)


def in_thread(fn, *args):
    """Run fn in a thread; returns a holder whose ['result'] or ['error'] is set when done, and the thread."""
    box: dict = {}

    def run():
        try:
            box["result"] = fn(*args)
        except Exception as e:  # noqa: BLE001 - the test inspects it
            box["error"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return box, t




def echo(cmd: RemotingCommand):
    """Answer after a random short delay with the request's `tag` field as remark."""
    if cmd.code == 999:
        return SILENT
    return Reply(remark=cmd.field("tag"), delay_s=random.random() * 0.05)


def test_requests_are_multiplexed_by_opaque_over_one_connection(server_factory, client_factory):
    server = server_factory(echo)
    client = client_factory()
    results: dict[int, str | None] = {}

    def call(i: int):
        response = client.invoke_sync(server.addr, make_request(RequestCode.HEART_BEAT, {"tag": f"t{i}"}), 5000)
        results[i] = response.remark

    threads = [threading.Thread(target=call, args=(i,)) for i in range(40)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert results == {i: f"t{i}" for i in range(40)}
    assert server.connections_accepted == 1


def test_timeout_message_and_the_connection_is_closed(server_factory, client_factory):
    server = server_factory(lambda cmd: SILENT)
    client = client_factory()
    with pytest.raises(RemotingTimeoutException) as err:
        client.invoke_sync(server.addr, make_request(RequestCode.HEART_BEAT), 150)
    # the budget less the connect time, in whole milliseconds
    assert re.fullmatch(rf"wait response on the channel <{server.addr}> timeout, 1[45]\d\(ms\)", str(err.value))
    assert client.connection(server.addr) is None
    with pytest.raises(RemotingTimeoutException):
        client.invoke_sync(server.addr, make_request(RequestCode.HEART_BEAT), 50)
    assert server.connections_accepted == 2


def test_sync_timeout_close_fails_the_other_requests_in_flight(server_factory, client_factory):
    server = server_factory(lambda cmd: SILENT)
    client = client_factory()
    long_box, long_thread = in_thread(client.invoke_sync, server.addr, make_request(RequestCode.HEART_BEAT), 30000)
    assert poll(lambda: len(server.requests) == 1)
    with pytest.raises(RemotingTimeoutException):
        client.invoke_sync(server.addr, make_request(RequestCode.HEART_BEAT), 100)
    long_thread.join(10)
    error = long_box.get("error")
    assert isinstance(error, RemotingSendRequestException), long_box
    assert str(error) == f"send request to <{server.addr}> failed"


def test_timeouts_close_in_deadline_order_one_timeout_the_rest_failed_sends(server_factory, client_factory):
    """32 requests on one connection to a silent broker, their deadlines all passed while no thread could run (the
    GIL held): as on the JVM, only the earliest deadline times out, its close fails the other 31 ("send failed"),
    whichever thread runs first; the connection is closed and out of the table, and the next request gets a new one."""
    server = server_factory(lambda cmd: SILENT)
    client = client_factory()
    started = [in_thread(client.invoke_sync, server.addr, make_request(RequestCode.HEART_BEAT), 300)
               for _ in range(32)]
    assert poll(lambda: len(server.requests) == 32)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(60.0)
    try:
        end = time.monotonic() + 0.6
        while time.monotonic() < end:  # holds the GIL past every deadline
            pass
        sys.setswitchinterval(1e-6)  # then the woken threads interleave at every chance
        for _, thread in started:
            thread.join(10)
    finally:
        sys.setswitchinterval(interval)
    errors = [type(box.get("error")) for box, _ in started]
    assert errors.count(RemotingTimeoutException) == 1, errors
    assert errors.count(RemotingSendRequestException) == 31, errors
    assert client.connection(server.addr) is None
    with pytest.raises(RemotingTimeoutException):
        client.invoke_sync(server.addr, make_request(RequestCode.HEART_BEAT), 50)
    assert server.connections_accepted == 2


def test_without_close_on_timeout_the_other_request_still_gets_its_answer(server_factory, client_factory):
    server = server_factory(lambda cmd: Reply(remark="late", delay_s=0.4) if cmd.field("tag") == "slow" else SILENT)
    client = client_factory(rules=TransportRules(close_socket_if_timeout=False))
    box, thread = in_thread(client.invoke_sync, server.addr, make_request(RequestCode.HEART_BEAT, {"tag": "slow"}), 10000)
    assert poll(lambda: len(server.requests) == 1)
    with pytest.raises(RemotingTimeoutException):
        client.invoke_sync(server.addr, make_request(RequestCode.HEART_BEAT), 50)
    thread.join(10)
    assert box["result"].remark == "late"
    assert server.connections_accepted == 1


@pytest.mark.parametrize("rules, timeout_ms, expected", [(TransportRules(), 300, RemotingTimeoutException),
                                                         (RULES_5X, 10000, RemotingSendRequestException)])
def test_peer_close_4_9_waits_out_the_timeout_5_x_fails_at_once(server_factory, client_factory, rules, timeout_ms,
                                                                 expected):
    server = server_factory(lambda cmd: CLOSE)
    client = client_factory(rules=rules)
    with pytest.raises(expected):
        client.invoke_sync(server.addr, make_request(RequestCode.HEART_BEAT), timeout_ms)


def test_connection_refused_is_a_connect_exception(client_factory, refused_addr):
    addr = refused_addr()
    with pytest.raises(RemotingConnectException) as err:
        client_factory().invoke_sync(addr, make_request(RequestCode.HEART_BEAT), 1000)
    assert str(err.value) == f"connect to {addr} failed"


def test_no_budget_left_fails_before_sending_and_closes(server_factory, client_factory):
    server = server_factory(echo)
    client = client_factory()
    # 4.9.x: `timeoutMillis < costTime` in whole milliseconds (0 left within the connect's millisecond still sends)
    with pytest.raises(RemotingTimeoutException, match="^invokeSync call timeout$"):
        client.invoke_sync(server.addr, make_request(RequestCode.HEART_BEAT), -1)
    assert server.requests == [] and client.connection(server.addr) is None
    with pytest.raises(RemotingTimeoutException, match=r"^invokeSync call the addr\[127.0.0.1:\d+\] timeout$"):
        client_factory(rules=RULES_5X).invoke_sync(server.addr, make_request(RequestCode.HEART_BEAT), 0)


def test_garbage_from_the_server_fails_requests_in_flight(server_factory, client_factory):
    server = server_factory(lambda cmd: SILENT)
    client = client_factory()
    box, thread = in_thread(client.invoke_sync, server.addr, make_request(RequestCode.HEART_BEAT), 30000)
    assert poll(lambda: len(server.requests) == 1)
    server.send_raw(b"\x7f\xff\xff\xff garbage")
    thread.join(10)
    assert isinstance(box.get("error"), RemotingSendRequestException)


def test_server_requests_get_request_code_not_supported(server_factory, client_factory):
    server = server_factory(echo)
    client = client_factory()
    client.invoke_sync(server.addr, make_request(RequestCode.HEART_BEAT), 3000)
    server.send_raw(codec.encode(make_request(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, {"consumerGroup": "g"})))
    assert poll(lambda: len(server.responses) == 1)
    answer = server.responses[0]
    assert (answer.code, answer.remark) == (ResponseCode.REQUEST_CODE_NOT_SUPPORTED, " request type 40 not supported")
    assert client.invoke_sync(server.addr, make_request(RequestCode.HEART_BEAT, {"tag": "x"}), 3000).remark == "x"


def test_name_server_failover_to_the_next_address(server_factory, client_factory, refused_addr):
    server = server_factory(echo)
    client = client_factory([refused_addr(), server.addr])
    for _ in range(3):
        assert client.invoke_sync(None, make_request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"tag": "ns"}), 3000).remark == "ns"


def test_oneway_is_flagged_and_not_answered(server_factory, client_factory):
    server = server_factory(echo)
    client = client_factory()
    client.invoke_oneway(server.addr, make_request(RequestCode.UNREGISTER_CLIENT, {"clientID": "c"}))
    assert poll(lambda: len(server.requests) == 1)
    assert server.requests[0].is_oneway


def test_acl_hook_signs_like_mqadmin(wire_dir, server_factory):
    import json

    recorded = json.loads(json.loads((wire_dir / "105_GET_ROUTEINFO_BY_TOPIC.json").read_text())[0]["header_json"])
    request = make_request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "WireTopic"})
    AclCredentials("rocketmq2", "12345678")("127.0.0.1:9876", request)
    assert list(request.ext_fields.items()) == list(recorded["extFields"].items())


def test_client_shutdown_fails_waiting_requests(server_factory):
    server = server_factory(lambda cmd: SILENT)
    client = RemotingClient()
    box, thread = in_thread(client.invoke_sync, server.addr, make_request(RequestCode.HEART_BEAT), 30000)
    assert poll(lambda: len(server.requests) == 1)
    client.shutdown()
    thread.join(10)
    assert isinstance(box.get("error"), RemotingSendRequestException)


def test_a_peer_that_stops_reading_fails_the_write_instead_of_hanging(client_factory):
    import socket

    from remoting.connection import WRITE_STALL_TIMEOUT_S

    with socket.socket() as listener:  # accepts, never reads: the kernel buffers fill up
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        addr = f"127.0.0.1:{listener.getsockname()[1]}"
        client = client_factory()
        assert WRITE_STALL_TIMEOUT_S < 60
        # a send failure (the stalled write), not a RemotingTimeoutException at the end of the 60 s budget
        with pytest.raises(RemotingSendRequestException):
            client.invoke_sync(addr, make_request(RequestCode.SEND_MESSAGE_V2, body=b"x" * (12 << 20)), 60000)

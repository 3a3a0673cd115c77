"""The name server's log lines when it drops a broker (`emulator.route_table`), as 4.9.1's RouteInfoManager writes
them: a broker that unregisters (a graceful stop) gives `unregisterBroker, ...`, one whose connection closed or
expired gives `onChannelDestroy`'s "... because channel destroyed". `rmq-chaos diagnose` tells a dead master from a
stopped one by exactly this difference (fingerprint `namesrv_master_removed`)."""
from __future__ import annotations

import logging
import socket

from waiting import poll

from emulator.idle_channels import IdleChannels
from emulator.route_table import RouteTable
from emulator.server import RemotingServer
from remoting.codes import VERSION_V4_9_1

MASTER = "127.0.0.1:10911"
SLAVE = "127.0.0.1:10921"


def _table() -> RouteTable:
    table = RouteTable()
    table.register("c", MASTER, "broker-a", 0, "127.0.0.1:10912", None, channel_id=1)
    table.register("c", SLAVE, "broker-a", 1, "127.0.0.1:10922", None, channel_id=2)
    return table


def _lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records]


def test_a_closed_connection_is_a_channel_destroyed(caplog):
    table = _table()
    with caplog.at_level(logging.INFO, logger="RocketmqNamesrv"):
        caplog.clear()
        table.channel_closed(1)
    assert _lines(caplog) == [f"the broker's channel destroyed, {MASTER}, clean it's data structure at once",
                              f"remove brokerAddr[0, {MASTER}] from brokerAddrTable, because channel destroyed"]
    assert table.cluster_info()["brokerAddrTable"]["broker-a"]["brokerAddrs"] == {1: SLAVE}


def test_an_unregister_is_not_a_channel_destroyed(caplog):
    table = _table()
    with caplog.at_level(logging.INFO, logger="RocketmqNamesrv"):
        caplog.clear()
        table.unregister(MASTER, "broker-a", 0)
        table.channel_closed(1)  # the stopped broker's connection closes after its unregister: nothing left to drop
    assert _lines(caplog) == [f"unregisterBroker, remove from brokerLiveTable OK, {MASTER}",
                              f"unregisterBroker, remove addr from brokerAddrTable OK, {MASTER}"]


def test_an_expired_broker_is_dropped_as_channel_destroyed_without_being_named_first(caplog):
    """4.9.1's scanNotActiveBroker takes the broker out of the live table before onChannelDestroy looks there."""
    table = _table()
    table.broker_live[MASTER].last_update_ms = 0
    with caplog.at_level(logging.INFO, logger="RocketmqNamesrv"):
        caplog.clear()
        table.scan_not_active()
    assert _lines(caplog) == [f"The broker channel expired, {MASTER} 120000ms",
                              f"remove brokerAddr[0, {MASTER}] from brokerAddrTable, because channel destroyed"]


def test_5x_submits_an_unregister_for_a_closed_broker(caplog):
    """5.x's onChannelDestroy submits an unregister request (BatchUnregistrationService): the same lines as a
    graceful stop, named by BrokerAddrInfo, after its own line; no 4.x "remove brokerAddr[...]"."""
    table = RouteTable(five_x=True)
    table.register("c", MASTER, "broker-a", 0, "127.0.0.1:10912", None, channel_id=1)
    with caplog.at_level(logging.INFO, logger="RocketmqNamesrv"):
        caplog.clear()
        table.channel_closed(1)
    lines = _lines(caplog)
    named = f"BrokerIdentityInfo [clusterName=c, brokerAddr={MASTER}]"
    assert lines[0].startswith("the broker's channel destroyed, submit the unregister request at once, broker info: ")
    assert lines[1:] == [f"unregisterBroker, remove from brokerLiveTable OK, {named}",
                         f"unregisterBroker, remove addr from brokerAddrTable OK, {named}"]


def test_an_idle_broker_connection_is_closed_and_the_broker_dropped(caplog):
    """Netty's idle handler on the name server (`emulator.idle_channels`): a broker's connection that reads and writes
    nothing for serverChannelMaxIdleTimeSeconds (1 s here, 120 s by default) is closed with 4.9.1's lines, and its
    close drops the broker as any closed connection does; the real 4.9.1 name server cut off from its brokers logged
    exactly these, 120 s after their last registration, before its scan found them expired."""
    table = RouteTable()
    server = RemotingServer("127.0.0.1", 0, "NettyServerCodecThread", VERSION_V4_9_1)
    server.on_close.append(lambda ch: table.channel_closed(id(ch)))
    server.start()
    idle = IdleChannels(server, 1, logging.getLogger("RocketmqNamesrv"))
    with caplog.at_level(logging.INFO, logger="RocketmqNamesrv"):
        idle.start()
        sock = socket.create_connection(server.address())
        try:
            poll(lambda: len(server.channels()) == 1, 10, "the connection accepted")
            channel = server.channels()[0]
            table.register("c", MASTER, "broker-a", 0, "127.0.0.1:10912", None, channel_id=id(channel))
            caplog.clear()
            sock.settimeout(30)
            assert sock.recv(1) == b"", "the name server closed the silent connection"
            poll(lambda: len(_lines(caplog)) >= 4, 10, "the broker dropped")
        finally:
            idle.stopped.set()
            sock.close()
            server.shutdown()
    assert _lines(caplog) == [f"NETTY SERVER PIPELINE: IDLE exception [{channel.remote}]",
                              f"closeChannel: close the connection to remote address[{channel.remote}] result: true",
                              f"the broker's channel destroyed, {MASTER}, clean it's data structure at once",
                              f"remove brokerAddr[0, {MASTER}] from brokerAddrTable, because channel destroyed"]
    assert "broker-a" not in table.cluster_info()["brokerAddrTable"]

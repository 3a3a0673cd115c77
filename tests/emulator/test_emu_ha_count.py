"""The master's view of a connected slave (`isSlaveOK`): the connection count, a slave connection that the kernel
has completed but the accept thread has not counted yet (a JVM's accept thread counts it within microseconds; ours may
wait for the interpreter lock behind busy request threads, which turned a reconnect into SLAVE_NOT_AVAILABLE), and the
reconnect grace after the slave closed its last connection (a JVM's slave is back within a fraction of a
millisecond)."""
from __future__ import annotations

import socket
import types

import pytest

from emulator.config.broker_config import BrokerConfig
from emulator.ha import service as service_module
from emulator.ha.service import RECONNECT_GRACE_S, HAService
from emulator.version import resolve_profile

FALLBEHIND_MAX = 256 * 1024 * 1024


@pytest.fixture
def ha():
    profile = resolve_profile("4.9.1")
    store = types.SimpleNamespace(config=BrokerConfig(profile, overrides={"brokerRole": "SYNC_MASTER"}),
                                  profile=profile)
    service = HAService(store)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    service._listener = listener  # listening, but no accept thread: every connection stays in the backlog
    yield service
    listener.close()


def test_no_slave_is_not_ok(ha):
    assert ha.connection_count == 0
    assert not ha.is_slave_ok(1024)


def test_a_completed_connection_not_yet_accepted_counts(ha):
    with socket.create_connection(ha._listener.getsockname()):  # loopback: the handshake is done when it returns
        assert ha.connection_count == 0
        assert ha.is_slave_ok(1024)
        assert not ha.is_slave_ok(FALLBEHIND_MAX + 1), "the fall-behind limit still applies"


def test_counted_connection_is_ok_and_counting_down_to_zero_is_not(ha):
    ha._count_up()
    assert ha.is_slave_ok(1024)
    ha.remove_connection(None, count_down=True)
    assert ha.connection_count == 0 and not ha.is_slave_ok(1024)


def test_after_shutdown_a_pending_connection_does_not_count(ha):
    with socket.create_connection(ha._listener.getsockname()):
        ha._stopped = True
        assert not ha.is_slave_ok(1024)


@pytest.fixture
def clock(monkeypatch):
    """The service's nanosecond clock, moved by hand: `clock[0] += ns`."""
    now = [10_000_000_000]
    monkeypatch.setattr(service_module.time, "perf_counter_ns", lambda: now[0])
    return now


def test_a_connection_the_slave_closed_still_counts_for_the_reconnect_grace(ha, clock):
    ha._count_up()
    ha.remove_connection(None, count_down=True, peer_closed=True)
    assert ha.connection_count == 0 and ha.is_slave_ok(1024), "the slave reconnects at once: still counted"
    clock[0] += int(RECONNECT_GRACE_S * 1e9) - 1
    assert ha.is_slave_ok(1024)
    clock[0] += 1
    assert not ha.is_slave_ok(1024), "no new connection within the grace: the slave is gone"
    ha._count_up()
    ha.remove_connection(None, count_down=True, peer_closed=False)  # housekeeping expiry: no grace
    assert not ha.is_slave_ok(1024)


def test_a_new_connection_ends_the_grace(ha, clock):
    ha._count_up()
    ha.remove_connection(None, count_down=True, peer_closed=True)
    ha._count_up()
    ha.remove_connection(None, count_down=True, peer_closed=False)
    assert not ha.is_slave_ok(1024), "the grace belonged to the connection the new one replaced"

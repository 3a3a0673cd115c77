"""The master's view of a connected slave (`isSlaveOK`, 4.9.1): `connectionCount > 0` and the fall-behind below
`haSlaveFallbehindMax`. A connection counts from its accept (not while it waits in the kernel's backlog) until its
read side ends, as in the JVM; the moments the count stands at zero between a reconnecting slave's old and new
connection are measured (`haConnectionZero*`), not hidden: the real 4.9.1 master answered SLAVE_NOT_AVAILABLE in them."""
from __future__ import annotations

import socket
import types

import pytest

from emulator.config.broker_config import BrokerConfig
from emulator.ha import service as service_module
from emulator.ha.service import HAService
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


def test_a_completed_connection_not_yet_accepted_does_not_count(ha):
    with socket.create_connection(ha._listener.getsockname()):  # loopback: the handshake is done when it returns
        assert ha.connection_count == 0
        assert not ha.is_slave_ok(1024), "only the accept thread counts a connection"


def test_counted_connection_is_ok_and_counting_down_to_zero_is_not(ha):
    ha._count_up()
    assert ha.is_slave_ok(1024)
    assert not ha.is_slave_ok(FALLBEHIND_MAX + 1), "the fall-behind limit applies"
    ha.remove_connection(None)
    assert ha.connection_count == 0 and not ha.is_slave_ok(1024)


@pytest.fixture
def clock(monkeypatch):
    """The service's nanosecond clock, moved by hand: `clock[0] += ns`."""
    now = [10_000_000_000]
    monkeypatch.setattr(service_module.time, "perf_counter_ns", lambda: now[0])
    return now


def test_a_reconnect_that_counts_out_first_leaves_a_measured_gap(ha, clock):
    ha._count_up()
    ha.remove_connection(None)  # the old connection's EOF read first
    assert not ha.is_slave_ok(1024), "a put in the gap meets no slave"
    clock[0] += 300_000
    ha._count_up()  # the new connection accepted
    assert ha.is_slave_ok(1024)
    assert (ha.zero_periods.count, ha.zero_periods.last_ns, ha.zero_periods.max_ns) == (1, 300_000, 300_000)


def test_a_reconnect_that_counts_in_first_leaves_no_gap(ha, clock):
    ha._count_up()
    ha._count_up()  # the new connection accepted before the old one's EOF was read
    ha.remove_connection(None)
    assert ha.is_slave_ok(1024) and ha.zero_periods.count == 0

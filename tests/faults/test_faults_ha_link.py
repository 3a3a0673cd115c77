"""ha_link through our HA relay, with replication-like traffic: a stand-in master streams bytes to a stand-in slave
that reports its offset back, both through the relay the harness started on the slave node's path. Delay, throttle and
cut are measured on that traffic (the relay's own counters and what the slave receives) and through the relay's probe
port, and are gone after revert."""
from __future__ import annotations

import socket
import struct
import threading
import time

import pytest
from waiting import poll

from faults.errors import FaultRefused
from faults.ha_link import HaLink
from faults.relay_client import RelayClient, connect_result
from harness.resources import RelayProcess

pytestmark = pytest.mark.root
BLOCK = b"\xab" * 32768


class FakeMaster(threading.Thread):
    """Accepts slave connections on a loopback port and streams bytes to each; reads their 8-byte offset reports."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.stop = threading.Event()
        self.reports = 0

    def run(self) -> None:
        self.server.settimeout(0.2)
        while not self.stop.is_set():
            try:
                conn, _ = self.server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self._send, args=(conn,), daemon=True).start()
            threading.Thread(target=self._read, args=(conn,), daemon=True).start()

    def _send(self, conn: socket.socket) -> None:
        try:
            while not self.stop.is_set():
                conn.sendall(BLOCK)
        except OSError:
            pass
        finally:
            conn.close()

    def _read(self, conn: socket.socket) -> None:
        try:
            while data := conn.recv(64):
                self.reports += len(data) // 8
        except OSError:
            pass


class FakeSlave(threading.Thread):
    """Connects to the relay, reads the stream, reports its offset every 50 ms, reconnects every 0.2 s when cut."""

    def __init__(self, port: int) -> None:
        super().__init__(daemon=True)
        self.port = port
        self.stop = threading.Event()
        self.received = 0
        self.connects = 0
        self.refused = 0
        self.drops = 0

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                s = socket.create_connection(("127.0.0.1", self.port), timeout=1)
            except ConnectionRefusedError:
                self.refused += 1
                time.sleep(0.2)
                continue
            self.connects += 1
            last = 0.0
            s.settimeout(0.2)
            try:
                while not self.stop.is_set():
                    try:
                        data = s.recv(65536)
                    except TimeoutError:
                        data = b"."
                    if not data:
                        break
                    self.received += len(data)
                    if time.monotonic() - last > 0.05:
                        s.sendall(struct.pack(">q", self.received))
                        last = time.monotonic()
            except OSError:
                pass
            self.drops += 1
            s.close()


@pytest.fixture
def link(nodes, journal, base_dir, run_id):
    master = FakeMaster()
    master.start()
    relay = RelayProcess.start(journal, f"127.0.0.1:{master.port}", str(base_dir / "relay.sock"), run_id=run_id)
    node = nodes("slave", extras=relay.extras())
    slave = FakeSlave(relay.listen_port)
    slave.start()
    assert poll(lambda: slave.received > 1 << 20)
    yield node, relay, master, slave
    slave.stop.set()
    master.stop.set()
    slave.join(5)
    relay.stop()
    master.server.close()


def _rate(slave: FakeSlave, seconds: float) -> float:
    start, t0 = slave.received, time.monotonic()
    time.sleep(seconds)  # a measurement window, not synchronisation
    return (slave.received - start) / (time.monotonic() - t0)


def test_ha_link_throttle_on_real_traffic(link, journal):
    node, relay, master, slave = link
    limit = 1 << 20
    fault = HaLink(node.target, {"mode": "throttle", "rate_bps": limit}, journal=journal)
    fault.apply()
    evidence = fault.verify()
    assert abs(evidence["ratio"] - 1) <= 0.2
    assert 0.7 * limit <= _rate(slave, 1.0) <= 1.3 * limit
    down = RelayClient(relay.control).status()["traffic"]["down"]["rate_bps_1s"]
    assert 0.7 * limit <= down <= 1.3 * limit
    fault.revert()
    assert _rate(slave, 0.5) > 5 * limit


def test_ha_link_delay_on_real_traffic(link, journal):
    node, relay, master, slave = link
    fault = HaLink(node.target, {"mode": "delay", "delay_ms": 150}, journal=journal)
    fault.apply()
    evidence = fault.verify()
    assert all(270 <= r <= 400 for r in evidence["rtt_ms"])
    assert poll(lambda: (RelayClient(relay.control).status()["traffic"]["down"]["held_ms"]["mean"] or 0) >= 140, 5)
    fault.revert()
    assert poll(lambda: (RelayClient(relay.control).status()["traffic"]["down"]["held_ms"]["max"] or 999) < 100, 5)


def test_ha_link_cut_refuses_and_drops_then_heals(link, journal):
    node, relay, master, slave = link
    drops = slave.drops
    fault = HaLink(node.target, {"mode": "cut"}, journal=journal)
    fault.apply()
    evidence = fault.verify()
    assert evidence["connect"] == "ConnectionRefusedError"
    assert poll(lambda: slave.drops > drops and slave.refused > 0)
    frozen = slave.received
    assert connect_result("127.0.0.1", relay.listen_port) == "ConnectionRefusedError"
    assert slave.received == frozen
    connects = slave.connects
    fault.revert()
    assert poll(lambda: slave.connects > connects and slave.received > frozen + (1 << 20))


def test_ha_link_refuses_a_relay_the_harness_did_not_start(nodes, journal, tmp_path):
    node = nodes("slave", extras={"ha_relay": {"control": str(tmp_path / "nobody.sock")}})
    (tmp_path / "nobody.sock").touch()
    with pytest.raises(FaultRefused, match="was not started by the harness"):
        HaLink(node.target, {"mode": "cut"}, journal=journal).apply()

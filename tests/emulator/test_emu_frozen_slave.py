"""Slave store frozen (fsfreeze) under load: the slave's HA thread blocks in its write, sends time out, and after
`haHousekeepingInterval` without an offset report the master drops the slave, so sends get SLAVE_NOT_AVAILABLE at
once; thawed, the slave reconnects, catches up, and sends get SEND_OK again. haHousekeepingInterval is lowered from
its 20 s default to 5 s here to keep the test short; the mechanism is the same."""
from __future__ import annotations

import time

import emu_wire as wire
import pytest
from emu_cluster import poll
from emu_load import Flood

from faults.disk_freeze import DiskFreeze
from remoting.codes import ResponseCode

pytestmark = pytest.mark.root
TOPIC = "FrozenTopic"
HOUSEKEEPING_MS = 5000


def test_frozen_slave_is_dropped_then_recovers(emu_cluster):
    cluster = emu_cluster(master_conf={"haHousekeepingInterval": str(HOUSEKEEPING_MS)})
    client = cluster.client
    wire.create_topic(client, cluster.master.addr, TOPIC, 4)
    fault = DiskFreeze(cluster.target("slave"), journal=cluster.journal)
    with Flood(client, cluster.master.addr, TOPIC, threads=8, body_size=1024) as flood:
        poll(lambda: flood.count(0, code=ResponseCode.SUCCESS) >= 100, 30, "SEND_OK before the freeze")
        fault.apply()
        fault.verify()
        frozen_at = time.monotonic()
        poll(lambda: flood.count(frozen_at, error="RemotingTimeoutException") >= 1, 30, "client timeouts")
        poll(lambda: "ha housekeeping, found this connection[" in cluster.master.log("store.log"), 30,
             "the master's housekeeping to drop the slave")
        poll(lambda: cluster.runtime("master")["haConnectionCount"] == "0", 5, "the connection to be counted out")
        dropped_at = time.monotonic()
        poll(lambda: flood.count(dropped_at, code=ResponseCode.SLAVE_NOT_AVAILABLE) >= 50, 30,
             "SLAVE_NOT_AVAILABLE after the drop")
        # requests that were already waiting in the group transfer still end after their wait (up to
        # syncFlushTimeout each); every request arriving later is answered at once
        settled = time.monotonic() + 6
        poll(lambda: time.monotonic() > settled, 8, "the backlog to drain")
        sna = [o for o in flood.since(settled) if o.code == ResponseCode.SLAVE_NOT_AVAILABLE]
        assert sna and sorted(o.latency_ms for o in sna)[len(sna) // 2] < 1000
        assert flood.count(settled, code=ResponseCode.SUCCESS) == 0
        fault.revert()
        thawed_at = time.monotonic()
        poll(lambda: flood.count(thawed_at, code=ResponseCode.SUCCESS) >= 50, 60, "SEND_OK after the thaw")
    poll(cluster.caught_up, 30, "the slave to catch up")

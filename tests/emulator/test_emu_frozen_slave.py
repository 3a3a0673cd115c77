"""Slave store frozen (fsfreeze) under load: the slave's HA thread blocks in its write, sends time out, and after
`haHousekeepingInterval` without an offset report the master drops the slave, so sends get SLAVE_NOT_AVAILABLE at
once; thawed, the slave reconnects, catches up, and sends get SEND_OK again. haHousekeepingInterval is lowered from
its 20 s default to 5 s here to keep the test short; the mechanism is the same. The slave's haSendHeartbeatInterval
goes from 5 s to 1 s with it: a slave reports when more than the interval has passed, checked once a second, so
with both at 5 s the master could expire a healthy slave before its first report (it did, in CI)."""
from __future__ import annotations

import time

import pytest
from emu_load import Flood
from waiting import poll

from faults.disk_freeze import DiskFreeze

pytestmark = pytest.mark.root
TOPIC = "FrozenTopic"
HOUSEKEEPING_MS = 5000
HEARTBEAT_MS = 1000


def test_frozen_slave_is_dropped_then_recovers(emu_cluster):
    cluster = emu_cluster(master_conf={"haHousekeepingInterval": str(HOUSEKEEPING_MS)},
                          slave_conf={"haSendHeartbeatInterval": str(HEARTBEAT_MS)})
    cluster.create_topic(TOPIC, 4)
    fault = DiskFreeze(cluster.target("slave"), journal=cluster.journal)
    with Flood(cluster.producer(), TOPIC, threads=8, body_size=1024) as flood:
        poll(lambda: flood.count(0, "SEND_OK") >= 100, 30, "SEND_OK before the freeze")
        fault.apply()
        fault.verify()
        frozen_at = time.monotonic()
        # the first attempt waits the whole 3000 ms budget; the 4.9.1 client's loop then ends with a call timeout
        poll(lambda: flood.count(frozen_at, "RemotingTooMuchRequestException") >= 1, 30, "client timeouts")
        poll(lambda: "ha housekeeping, found this connection[" in cluster.master.log("store.log"), 30,
             "the master's housekeeping to drop the slave")
        poll(lambda: cluster.runtime("master")["haConnectionCount"] == "0", 5, "the connection to be counted out")
        dropped_at = time.monotonic()
        poll(lambda: flood.count(dropped_at, "SLAVE_NOT_AVAILABLE") >= 50, 30, "SLAVE_NOT_AVAILABLE after the drop")
        # requests that were already waiting in the group transfer still end after their wait (up to
        # syncFlushTimeout each); every request arriving later is answered at once
        settled = time.monotonic() + 6
        poll(lambda: time.monotonic() > settled, 8, "the backlog to drain")
        sna = poll(lambda: (m := flood.matching(settled, "SLAVE_NOT_AVAILABLE")) and len(m) >= 20 and m, 30,
                   "SLAVE_NOT_AVAILABLE after the backlog")  # (the window starts empty: the poll above just ended)
        assert sorted(o.latency_ms for o in sna)[len(sna) // 2] < 1000
        assert all(o.attempts == 1 for o in sna)  # a send status: returned, not retried
        assert flood.count(settled, "SEND_OK") == 0
        fault.revert()
        thawed_at = time.monotonic()
        poll(lambda: flood.count(thawed_at, "SEND_OK") >= 50, 60, "SEND_OK after the thaw")
    poll(cluster.caught_up, 30, "the slave to catch up")

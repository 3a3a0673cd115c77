"""What a master's death leaves in the emulator's logs, as in the real 4.9.1's (master-killed-consumers, run on
both: docs/diagnose.md), and what `rmq-chaos diagnose` reads as `master-lost`: the name server drops the master
"because channel destroyed" (a graceful stop unregisters instead), the slave sees its HA link close and, as 4.9.1's
HAClient does right after any close, logs its housekeeping expiry with the epoch in ms as the interval."""
from __future__ import annotations

import re
import signal

import pytest
from waiting import poll

from harness.diagnose import rank, scan

pytestmark = pytest.mark.root


def test_a_killed_master_is_a_channel_destroyed_and_a_closed_ha_link(emu_cluster):
    cluster = emu_cluster()
    master = cluster.master
    master.proc.send_signal(signal.SIGKILL)
    master.proc.wait(30)
    removed = f"remove brokerAddr[0, {master.addr}] from brokerAddrTable, because channel destroyed"
    poll(lambda: removed in cluster.nodes["namesrv"].log("namesrv.log"), 30, "the name server to drop the master")
    poll(lambda: "master not response some time" in cluster.slave.log("store.log"), 30, "the slave's housekeeping")
    slave_log = cluster.slave.log("store.log")
    closed = slave_log.index("HAClient, processReadEvent read socket < 0")
    expired = re.search(r"HAClient, housekeeping, found this connection\[\S+\] expired, (\d+)", slave_log[closed:])
    assert expired and int(expired.group(1)) > 1_600_000_000_000  # now - 0: the last write was reset by the close
    assert "unregisterBroker" not in cluster.nodes["namesrv"].log("namesrv.log")
    findings = rank(scan([str(cluster.workdir / "logs")])[0])
    assert findings and findings[0].mechanism.id == "master-lost", [f.mechanism.id for f in findings]

"""Elections in controller mode judged from the brokers' own lines: which broker became master against what the
master last reported as its SyncStateSet.

A master logs each SyncStateSet the controller accepted (`ReplicasManager.changeSyncStateSet`: `SyncStateSet changed
from [1, 2] to [1]`); a broker that becomes master logs its id and epoch once it registered in its new role
(`registerBrokerWhenRoleChange`: `Change broker [id:2][address:...] to SYNC_MASTER, newMasterBrokerId:2, ...,
newMasterEpoch:2, ...`). A broker elected in epoch 2 or later that was not in the last set a master logged before it
was elected from outside the set: enableElectUncleanMaster=true, and what the old master acknowledged alone is not
on it. The set a new master logs for itself (`from [] to [2]`) is its own start, not the old master's report, and
is not counted; an election in the same second as the last set change is not judged (log times are seconds).
Neither line names the controller's choice directly: 5.3.0's `RoleChangeNotifyEntry` has no toString, and the
controller's `Elect a new master ... result:` prints a response whose header is not yet in its fields.

A broker elected cleanly within REJOIN_RACE_S of the change that took it back into the set (after it had left one)
is apache/rocketmq#5663's moment: on 5.0.0 to 5.1.0 the master could acknowledge without it while that change was
in flight.

A broker elected while consumer groups were connected (`new consumer connected, group: ...` before its election, on
any broker) answers them with its own copy of their offsets: the one it last took from the old master as a slave
(`Update slave consumer offset from master, ...`: SlaveSynchronize, every 10 s in controller mode). Its last such line
before the election in its own directory is `controller_offsets_behind`'s evidence.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

MASTER_CHANGE = re.compile(r"Change broker \[id:(\d+)\]\[address:[^\]]*\] to (?:SYNC|ASYNC)_MASTER, .*?"
                           r"newMasterEpoch:(\d+)")
FIRST_FAILOVER_EPOCH = 2
"""Epoch 1 is the cluster's first election, at its start."""
REJOIN_RACE_S = 15
"""haMaxTimeSlaveNotCatchup's default: a slave back in the set for less than that had only just caught up."""
CONSUMER_GROUP = re.compile(r"new consumer connected, group: (\S+)")
SYSTEM_GROUPS = ("TOOLS_CONSUMER", "CID_RMQ_SYS_", "CID_ONSAPI_", "FILTERSRV_CONSUMER", "SELF_TEST_C_GROUP")
"""Groups of the broker's and mqadmin's own (MixAll): not an application's consumers."""


@dataclass
class Elections:
    """The set changes and new masters of a scan, judged once every file is read (`judged`)."""

    sets: list[tuple[str, frozenset[int], frozenset[int]]] = field(default_factory=list)
    """(time, before, after) of each set a master logged."""
    masters: list[tuple[str, int, str, int, str]] = field(default_factory=list)
    """(time, broker id, path, line, text) of each broker that became master in a failover epoch."""
    offset_syncs: list[tuple[str, str, int, str]] = field(default_factory=list)
    """(time, path, line, text) of each `Update slave consumer offset from master` a slave logged."""
    first_consumer: str | None = None
    """When an application's consumer group first connected to a broker."""

    def offsets_synced(self, ts: str | None, path: str, line_no: int, text: str) -> None:
        if ts:
            self.offset_syncs.append((ts, path, line_no, text))

    def consumer_connected(self, ts: str | None, text: str) -> None:
        m = CONSUMER_GROUP.search(text)
        if ts and m and not m.group(1).startswith(SYSTEM_GROUPS):
            self.first_consumer = min(ts, self.first_consumer or ts)

    def set_changed(self, ts: str | None, before: frozenset[int], after: frozenset[int]) -> None:
        if ts and before:
            self.sets.append((ts, before, after))

    def master_changed(self, ts: str | None, text: str, path: str, line_no: int) -> None:
        m = MASTER_CHANGE.search(text)
        if ts and m and int(m.group(2)) >= FIRST_FAILOVER_EPOCH:
            self.masters.append((ts, int(m.group(1)), path, line_no, text))

    def judged(self) -> list[tuple[str, str, int, str, str]]:
        """(fingerprint, path, line, time, text) of each new master judged: `controller_unclean_master` when it
        was not in the set last logged before it, `controller_elected_after_rejoin` when that set had just taken it
        back in; `controller_offsets_behind` at its last offset sync when consumer groups were connected."""
        found, sets = [], sorted(self.sets, key=lambda s: s[0])
        for ts, broker_id, path, line_no, text in self.masters:
            synced = self._last_offset_sync(path, ts)
            if synced is not None and self.first_consumer is not None and self.first_consumer < ts:
                found.append(("controller_offsets_behind", synced[1], synced[2], synced[0], synced[3]))
            earlier = [s for s in sets if s[0] < ts]
            if not earlier:
                continue
            at, before, after = earlier[-1]
            if broker_id not in after:
                found.append(("controller_unclean_master", path, line_no, ts, text))
            elif broker_id not in before and _seconds(at, ts) <= REJOIN_RACE_S and any(
                    broker_id in b and broker_id not in a for _, b, a in earlier[:-1]):
                found.append(("controller_elected_after_rejoin", path, line_no, ts, text))
        return found

    def _last_offset_sync(self, master_path: str, ts: str) -> tuple[str, str, int, str] | None:
        """The last offset sync logged in the new master's directory (its logs) at or before its election."""
        where = Path(master_path).parent
        mine = [s for s in self.offset_syncs if Path(s[1]).parent == where and s[0] <= ts]
        return max(mine, key=lambda s: (s[0], s[2])) if mine else None


def _seconds(start: str, end: str) -> float:
    try:
        return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()
    except ValueError:
        return float("inf")

"""Unclean elections in controller mode, from the brokers' own lines: which broker became master against what the
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
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

MASTER_CHANGE = re.compile(r"Change broker \[id:(\d+)\]\[address:[^\]]*\] to (?:SYNC|ASYNC)_MASTER, .*?"
                           r"newMasterEpoch:(\d+)")
FIRST_FAILOVER_EPOCH = 2
"""Epoch 1 is the cluster's first election, at its start."""


@dataclass
class Elections:
    """The set changes and new masters of a scan, judged once every file is read (`unclean`)."""

    sets: list[tuple[str, frozenset[int]]] = field(default_factory=list)
    masters: list[tuple[str, int, str, int, str]] = field(default_factory=list)
    """(time, broker id, path, line, text) of each broker that became master in a failover epoch."""

    def set_changed(self, ts: str | None, before: frozenset[int], after: frozenset[int]) -> None:
        if ts and before:
            self.sets.append((ts, after))

    def master_changed(self, ts: str | None, text: str, path: str, line_no: int) -> None:
        m = MASTER_CHANGE.search(text)
        if ts and m and int(m.group(2)) >= FIRST_FAILOVER_EPOCH:
            self.masters.append((ts, int(m.group(1)), path, line_no, text))

    def unclean(self) -> list[tuple[str, int, str, str]]:
        """(path, line, time, text) of each new master that was not in the set last logged before it."""
        found, sets = [], sorted(self.sets, key=lambda s: s[0])
        for ts, broker_id, path, line_no, text in self.masters:
            before = [members for at, members in sets if at < ts]
            if before and broker_id not in before[-1]:
                found.append((path, line_no, ts, text))
        return found

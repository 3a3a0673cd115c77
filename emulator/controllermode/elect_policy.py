"""`DefaultElectPolicy` (rocketmq-all-5.3.0): the new master is chosen among the live brokers of the SyncStateSet,
then (only with `enableElectUncleanMaster`) among all the broker set's live brokers. The old master wins if it is
still alive; a designated broker wins if alive; otherwise the best by (epoch desc, max offset desc, election
priority asc) from the brokers' last heartbeats."""
from __future__ import annotations

from collections.abc import Callable

AliveCheck = Callable[[str, str, int], bool]
"""(cluster, broker name, broker id) -> alive"""
LiveInfoGetter = Callable[[str, str, int], object]
"""(cluster, broker name, broker id) -> the heartbeat's BrokerLiveInfo (epoch, max_offset, election_priority)"""


class ElectPolicy:
    def __init__(self, alive: AliveCheck, live_info: LiveInfoGetter) -> None:
        self.alive, self.live_info = alive, live_info

    def elect(self, cluster: str, name: str, sync_state_set: set[int], all_brokers: set[int] | None,
              old_master: int | None, prefer: int | None) -> int | None:
        chosen = self._try(cluster, name, sync_state_set, old_master, prefer)
        if chosen is None and all_brokers is not None:
            chosen = self._try(cluster, name, all_brokers, old_master, prefer)
        return chosen

    def _try(self, cluster: str, name: str, brokers: set[int], old_master: int | None,
             prefer: int | None) -> int | None:
        live = sorted(b for b in brokers if self.alive(cluster, name, b))
        if not live:
            return None
        if old_master in live and (prefer is None or prefer == old_master):
            return old_master
        if prefer is not None:
            return prefer if prefer in live else None
        infos = [(self.live_info(cluster, name, b), b) for b in live]
        infos = [(i, b) for i, b in infos if i is not None]
        if infos:
            best = min(infos, key=lambda ib: (-ib[0].epoch, -ib[0].max_offset, ib[0].election_priority))
            return best[1]
        return live[0]

"""`SyncedTable`: what the broker's topic and subscription-group managers share as tables a slave takes from its
master (Java's `ConfigManager`s that `SlaveSynchronize` syncs): a table, its `DataVersion`, and `replace_all`."""
from __future__ import annotations

import threading
from typing import ClassVar

from emulator.config.broker_config import DataVersion


class SyncedTable:
    """A table the slave replaces by its master's; a subclass names the wrapper's key for it in `TABLE_KEY`
    (`topicConfigTable`, `subscriptionGroupTable`) and writes its file in `persist`."""

    TABLE_KEY: ClassVar[str]
    table: dict[str, dict]
    data_version: DataVersion
    _lock: threading.Lock

    def persist(self) -> None:
        raise NotImplementedError

    def replace_all(self, wrapper: dict) -> bool:
        """Slave: the master's table put over ours (`SlaveSynchronize.syncTopicConfig`,
        `syncSubscriptionGroupConfig`) when its data version is not ours; whether it was not."""
        with self._lock:
            if self.data_version.same_as(wrapper.get("dataVersion")):
                return False
            self.table.update(wrapper.get(self.TABLE_KEY) or {})
            self.data_version.assign(wrapper.get("dataVersion"))
        self.persist()
        return True

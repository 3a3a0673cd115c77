"""`SubscriptionGroupManager`: the broker's consumer-group configs (the system groups a 4.9.1 broker starts with, a
group auto-created on first use when `autoCreateSubscriptionGroup`), GET_ALL_SUBSCRIPTIONGROUP_CONFIG's wrapper and
`config/subscriptionGroup.json` (tab-indented, as 4.9.1 writes it)."""
from __future__ import annotations

import json
import os
import threading

from emulator.config.broker_config import BrokerConfig, DataVersion
from emulator.consumer_offsets import load_text, persist_text
from emulator.logs import broker_log
from emulator.synced_table import SyncedTable
from remoting.hashmap import java_hashmap_order

CHM_1024_TABLE = 2048  # a ConcurrentHashMap(1024)'s table length (1024 + 512 + 1 rounded up)
SYSTEM_GROUPS = ("SELF_TEST_C_GROUP", "CID_ONSAPI_OWNER", "CID_ONSAPI_PERMISSION", "TOOLS_CONSUMER",
                 "CID_ONS-HTTP-PROXY", "FILTERSRV_CONSUMER", "CID_ONSAPI_PULL")


def group_config(name: str) -> dict:
    """`SubscriptionGroupConfig`'s defaults, fields in fastjson's (name) order."""
    return {"brokerId": 0, "consumeBroadcastEnable": True, "consumeEnable": True, "consumeFromMinEnable": True,
            "groupName": name, "notifyConsumerIdsChangedEnable": True, "retryMaxTimes": 16, "retryQueueNums": 1,
            "whichBrokerWhenConsumeSlowly": 1}


class SubscriptionGroupManager(SyncedTable):
    TABLE_KEY = "subscriptionGroupTable"

    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.path = os.path.join(config.get("storePathRootDir") or ".", "config", "subscriptionGroup.json")
        self.table: dict[str, dict] = {name: group_config(name) for name in SYSTEM_GROUPS}
        self.data_version = DataVersion()
        self._lock = threading.Lock()

    def load(self) -> None:
        text = load_text(self.path)
        if text is None:
            return
        doc = json.loads(text)
        self.table.update(doc.get("subscriptionGroupTable") or {})
        self.data_version.assign(doc.get("dataVersion"), counter_default=0)

    def persist(self) -> None:
        persist_text(self.path, json.dumps(self.wrapper(), indent="\t", separators=(",", ":")))

    def find(self, group: str) -> dict | None:
        """`findSubscriptionGroupConfig`: the group's config, created when `autoCreateSubscriptionGroup` (or None)."""
        conf = self.table.get(group)
        if conf is not None or not self.config.get_bool("autoCreateSubscriptionGroup"):
            return conf
        with self._lock:
            conf = self.table.get(group)
            if conf is None:
                conf = self.table[group] = group_config(group)
                broker_log.info("auto create a subscription group, %s", conf)
                self.data_version.next_version()
        self.persist()
        return conf

    def wrapper(self) -> dict:
        table = dict(self.table)
        return {"dataVersion": self.data_version.to_dict(),
                "subscriptionGroupTable": {k: table[k] for k in java_hashmap_order(list(table), CHM_1024_TABLE)}}

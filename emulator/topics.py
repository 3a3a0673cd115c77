"""`TopicConfigManager`: the broker's topics with their queue counts and permissions, the system topics a 4.9.1 broker
creates (TBW102 when `autoCreateTopicEnable`, SELF_TEST_TOPIC, the cluster and broker-name topics, ...), topic
creation from TBW102 on first send, UPDATE_AND_CREATE_TOPIC, and `config/topics.json` under storePathRootDir."""
from __future__ import annotations

import json
import os
import threading

from emulator.config.broker_config import BrokerConfig, DataVersion
from emulator.logs import broker_log
from emulator.synced_table import SyncedTable

AUTO_CREATE_TOPIC = "TBW102"
PERM_READ, PERM_WRITE, PERM_INHERIT = 4, 2, 1


def topic_config(name: str, read: int, write: int, perm: int = 6, sys_flag: int = 0) -> dict:
    return {"order": False, "perm": perm, "readQueueNums": read, "topicFilterType": "SINGLE_TAG", "topicName": name,
            "topicSysFlag": sys_flag, "writeQueueNums": write}


class TopicConfigManager(SyncedTable):
    TABLE_KEY = "topicConfigTable"

    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.table: dict[str, dict] = {}
        self.data_version = DataVersion()
        self._lock = threading.Lock()
        self.path = os.path.join(config.get("storePathRootDir") or ".", "config", "topics.json")
        cluster = config.get("brokerClusterName") or "DefaultCluster"
        name = config.get("brokerName") or ""
        self.table["SELF_TEST_TOPIC"] = topic_config("SELF_TEST_TOPIC", 1, 1)
        if config.get_bool("autoCreateTopicEnable"):
            queues = config.get_int("defaultTopicQueueNums")
            self.table[AUTO_CREATE_TOPIC] = topic_config(AUTO_CREATE_TOPIC, queues, queues, 7)
        self.table["BenchmarkTest"] = topic_config("BenchmarkTest", 1024, 1024)
        self.table[cluster] = topic_config(cluster, 16, 16, 7 if config.get_bool("clusterTopicEnable") else 6)
        self.table[name] = topic_config(name, 1, 1, 7 if config.get_bool("brokerTopicEnable") else 6)
        self.table["OFFSET_MOVED_EVENT"] = topic_config("OFFSET_MOVED_EVENT", 1, 1)
        self.table["SCHEDULE_TOPIC_XXXX"] = topic_config("SCHEDULE_TOPIC_XXXX", 18, 18)
        self.table[f"{cluster}_REPLY_TOPIC"] = topic_config(f"{cluster}_REPLY_TOPIC", 1, 1)

    def load(self) -> None:
        """`ConfigManager.load`: the file, or its `.bak` when the file is empty (as after a crash and e2fsck)."""
        for path in (self.path, self.path + ".bak"):
            try:
                with open(path, encoding="utf-8") as f:
                    text = f.read()
            except FileNotFoundError:
                continue
            if not text.strip("\0 \n"):
                broker_log.warning("load %s: empty, trying the backup", path)
                continue
            doc = json.loads(text)
            self.table.update(doc.get("topicConfigTable") or {})
            self.data_version.assign(doc.get("dataVersion"), counter_default=0)
            broker_log.info("load %s OK", path)
            return

    def persist(self) -> None:
        """`MixAll.string2File`: write `.tmp`, keep the previous file as `.bak`, rename."""
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        doc = {"dataVersion": self.data_version.to_dict(), "topicConfigTable": self.table}
        tmp = self.path + ".tmp"
        try:
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump(doc, f, indent="\t")
            if os.path.exists(self.path):
                os.replace(self.path, self.path + ".bak")
            os.replace(tmp, self.path)
        except OSError as e:
            broker_log.error("persist file %s exception %s", self.path, e)

    def get(self, topic: str) -> dict | None:
        return self.table.get(topic)

    def update(self, conf: dict) -> None:
        with self._lock:
            old = self.table.get(conf["topicName"])
            self.table[conf["topicName"]] = conf
            broker_log.info("%s topic config, old: %s new: %s", "update" if old else "create new", old, conf)
            self.data_version.next_version()
        self.persist()

    def create_in_send(self, topic: str, default_topic: str, queue_nums: int, sys_flag: int) -> dict | None:
        """`createTopicInSendMessageMethod`: a new topic from the default topic's config when it may be inherited."""
        with self._lock:
            existing = self.table.get(topic)
            if existing is not None:
                return existing
            default = self.table.get(default_topic)
            if default is None:
                broker_log.warning("Create new topic failed, because the default topic[%s] not exist. "
                                   "producer:", default_topic)
                return None
            if default_topic == AUTO_CREATE_TOPIC and not self.config.get_bool("autoCreateTopicEnable"):
                return None
            if not default["perm"] & PERM_INHERIT:
                broker_log.warning("Create new topic failed, because the default topic[%s] has no perm [%d]",
                                   default_topic, default["perm"])
                return None
            queues = min(queue_nums, default["writeQueueNums"])
            conf = topic_config(topic, queues, queues, default["perm"] & ~PERM_INHERIT, sys_flag)
            self.table[topic] = conf
            self.data_version.next_version()
            broker_log.info("Create new topic by default topic:[%s] config:[%s]", default_topic, conf)
        self.persist()
        return conf

    def create_in_send_back(self, topic: str, queue_nums: int, perm: int, sys_flag: int) -> tuple[dict, bool]:
        """`createTopicInSendMessageBackMethod` (a group's `%RETRY%`/`%DLQ%` topic): (config, created now)."""
        with self._lock:
            existing = self.table.get(topic)
            if existing is not None:
                return existing, False
            conf = topic_config(topic, queue_nums, queue_nums, perm, sys_flag)
            self.table[topic] = conf
            self.data_version.next_version()
            broker_log.info("create new topic %s", conf)
        self.persist()
        return conf, True

    def wrapper(self) -> dict:
        return {"dataVersion": self.data_version.to_dict(), "topicConfigTable": dict(self.table)}

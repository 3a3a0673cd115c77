"""What the processors share: configuration, version profile, store, topics, the JVM-like memory, the store host
address, the thread pools (for runtime info) and a way to ask for an early name-server registration."""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from emulator.config.broker_config import BrokerConfig
from emulator.executor import BoundedExecutor
from emulator.jvm_memory import JvmMemory
from emulator.store.message_store import MessageStore
from emulator.topics import TopicConfigManager
from emulator.version import VersionProfile


@dataclass
class BrokerContext:
    config: BrokerConfig
    profile: VersionProfile
    store: MessageStore
    topics: TopicConfigManager
    memory: JvmMemory
    store_host: str
    executors: dict[str, BoundedExecutor] = field(default_factory=dict)
    consumer_groups: dict[str, set[str]] = field(default_factory=dict)
    register_request: object = None
    register_now: object = None

    def register_soon(self) -> None:
        event = self.register_request
        if event is not None:
            event.set()  # type: ignore[attr-defined]

    def register_sync(self) -> None:
        """Register with the name servers before answering (`registerIncrementBrokerData` in createTopic)."""
        if self.register_now is not None:
            self.register_now()  # type: ignore[operator]

    def disk_ratio(self) -> float:
        try:
            st = os.statvfs(self.config.commitlog_dir())
        except OSError:
            return -1.0
        total = st.f_blocks * st.f_frsize
        return (total - st.f_bavail * st.f_frsize) / total if total else -1.0

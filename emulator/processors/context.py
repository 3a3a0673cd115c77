"""What the processors share: configuration, version profile, store, topics, the JVM-like memory, the store host
address, the thread pools (for runtime info), a way to ask for an early name-server registration, and the consumer
side (groups' connections, subscription groups, committed offsets, held pulls, pull statistics)."""
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
    consumers: object = None  # emulator.consumer_manager.ConsumerManager
    groups: object = None  # emulator.subscription_groups.SubscriptionGroupManager
    offsets: object = None  # emulator.consumer_offsets.ConsumerOffsetManager
    hold: object = None  # emulator.pull_hold.PullRequestHoldService
    pull_stats: object = None  # emulator.pull_stats.GroupGetStats
    schedule: object = None  # emulator.schedule.ScheduleMessageService
    register_now: object = None
    replicas: object = None  # emulator.autoswitch.replicas_manager.ReplicasManager (5.x controller mode)

    def register_sync(self) -> None:
        """Register with the name servers before answering: 4.9.1 calls `registerBrokerAll(false, true, true)` in the
        request's thread when a topic is created (createTopic, a send's auto-create, a group's %RETRY%/%DLQ% topic)."""
        if self.register_now is not None:
            self.register_now()  # type: ignore[operator]

    def disk_ratio(self) -> float:
        try:
            st = os.statvfs(self.config.commitlog_dir())
        except OSError:
            return -1.0
        total = st.f_blocks * st.f_frsize
        return (total - st.f_bavail * st.f_frsize) / total if total else -1.0

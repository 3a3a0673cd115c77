"""`ConsumerManager`: the consumer groups' live connections as 4.9.1 keeps them. A HEART_BEAT's consumer data
registers the client's channel under its group (client id, consume type, message model, subscriptions by topic);
UNREGISTER_CLIENT, a closed channel, or 120 s without a heartbeat (`scan_not_active`, every 10 s) remove it. When a
group gains a channel or a subscription changes, and when it loses a channel, every remaining channel of the group
is sent NOTIFY_CONSUMER_IDS_CHANGED (40, oneway, header consumerGroup) if `notifyConsumerIdsChangedEnable` (the
broker's and the group's). The notify is written from the caller's thread (4.9.1 writes it from the heartbeat
thread too)."""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from emulator.logs import broker_log
from emulator.server import Channel
from remoting.codes import RequestCode
from remoting.command import make_request

CHANNEL_EXPIRED_MS = 120_000
SCAN_PERIOD_S = 10.0


@dataclass(slots=True)
class ClientChannelInfo:
    client_id: str
    language: int
    version: int
    last_update_ms: int


@dataclass
class ConsumerGroupInfo:
    group: str
    consume_type: str = ""
    message_model: str = ""
    consume_from_where: str = ""
    channels: dict[Channel, ClientChannelInfo] = field(default_factory=dict)
    subscriptions: dict[str, dict] = field(default_factory=dict)

    def client_ids(self) -> list[str]:
        return [info.client_id for info in self.channels.values()]


class ConsumerManager:
    def __init__(self, broker_notify_enabled) -> None:
        """`broker_notify_enabled()`: the broker's `notifyConsumerIdsChangedEnable`, read when a change happens."""
        self.groups: dict[str, ConsumerGroupInfo] = {}
        self._lock = threading.RLock()
        self._broker_notify_enabled = broker_notify_enabled

    def register(self, group: str, channel: Channel, client: ClientChannelInfo, consumer_data: dict,
                 notify: bool) -> bool:
        """`registerConsumer`; True when the group's channels or subscriptions changed."""
        with self._lock:
            info = self.groups.get(group)
            if info is None:
                info = self.groups[group] = ConsumerGroupInfo(group)
            info.consume_type = consumer_data.get("consumeType", "")
            info.message_model = consumer_data.get("messageModel", "")
            info.consume_from_where = consumer_data.get("consumeFromWhere", "")
            old = info.channels.get(channel)
            new_channel = old is None
            if old is not None and old.client_id != client.client_id:
                broker_log.error("[BUG] consumer channel exist in broker, but clientId not equal. GROUP: %s OLD: %s "
                                 "NEW: %s", group, old.client_id, client.client_id)
            if new_channel:
                broker_log.info("new consumer connected, group: %s %s %s channel: %s", group,
                                info.consume_type, info.message_model, channel.remote)
            info.channels[channel] = client
            changed_subs = self._update_subscriptions(info, consumer_data.get("subscriptionDataSet") or [])
            channels = list(info.channels)
        changed = new_channel or changed_subs
        if changed and notify:
            self._notify(group, channels)
        return changed

    @staticmethod
    def _update_subscriptions(info: ConsumerGroupInfo, subs: list[dict]) -> bool:
        changed = False
        topics = set()
        for sub in subs:
            topic = sub.get("topic", "")
            topics.add(topic)
            old = info.subscriptions.get(topic)
            if old is None:
                info.subscriptions[topic] = sub
                changed = True
                broker_log.info("subscription changed, add new topic, group: %s %s", info.group, sub)
            elif int(sub.get("subVersion", 0)) > int(old.get("subVersion", 0)):
                info.subscriptions[topic] = sub
        for topic in [t for t in info.subscriptions if t not in topics]:
            broker_log.warning("subscription changed, group: %s remove topic %s", info.group, topic)
            del info.subscriptions[topic]
            changed = True
        return changed

    def unregister(self, group: str, channel: Channel, notify: bool) -> None:
        """`unregisterConsumer` (UNREGISTER_CLIENT)."""
        with self._lock:
            info = self.groups.get(group)
            if info is None or info.channels.pop(channel, None) is None:
                return
            if not info.channels:
                broker_log.info("unregister consumer ok, no any connection, and remove consumer group, %s", group)
                del self.groups[group]
            channels = list(info.channels)
        if notify:
            self._notify(group, channels)

    def channel_closed(self, channel: Channel) -> None:
        """`doChannelCloseEvent`: the channel leaves every group; the groups it left are notified."""
        changed: list[tuple[str, list[Channel]]] = []
        with self._lock:
            for group, info in list(self.groups.items()):
                if info.channels.pop(channel, None) is None:
                    continue
                broker_log.info("NETTY EVENT: remove not active channel[%s] from ConsumerGroupInfo groupChannelTable, "
                                "consumer group: %s", channel.remote, group)
                if not info.channels:
                    del self.groups[group]
                changed.append((group, list(info.channels)))
        for group, channels in changed:
            self._notify(group, channels)

    def scan_not_active(self, now_ms: int | None = None) -> list[Channel]:
        """`scanNotActiveChannel`: channels without a heartbeat for 120 s are removed and closed."""
        now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        expired = []
        with self._lock:
            for group, info in list(self.groups.items()):
                for channel, client in list(info.channels.items()):
                    if now_ms - client.last_update_ms > CHANNEL_EXPIRED_MS:
                        broker_log.warning("SCAN: remove expired channel from ConsumerManager consumerTable. "
                                           "channel=%s, consumerGroup=%s", channel.remote, group)
                        del info.channels[channel]
                        expired.append(channel)
                if not info.channels:
                    del self.groups[group]
        for channel in expired:
            channel.close()
        return expired

    def group(self, group: str) -> ConsumerGroupInfo | None:
        return self.groups.get(group)

    def client_ids(self, group: str) -> list[str]:
        info = self.groups.get(group)
        return info.client_ids() if info else []

    def find_subscription(self, group: str, topic: str) -> dict | None:
        info = self.groups.get(group)
        return info.subscriptions.get(topic) if info else None

    def _notify(self, group: str, channels: list[Channel]) -> None:
        if not self._broker_notify_enabled():
            return
        for channel in channels:
            cmd = make_request(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, {"consumerGroup": group},
                               version=channel.version, oneway=True)
            try:
                channel.send(cmd)
            except OSError as e:
                broker_log.error("notifyConsumerIdsChanged exception, %s %s", group, e)
            else:
                broker_log.info("notifyConsumerIdsChanged OK, %s", group)

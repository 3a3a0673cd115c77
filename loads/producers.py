"""The producers of one worker process: one `remoting.producer.Producer` per client, shared by all users of that
client (as one Java `DefaultMQProducer` is shared by an application's threads, so a sync timeout that closes the
connection fails the other users' requests in flight, as in the recorded incident); and the message each send
carries (the harness key first in KEYS, then the client's own keys; TAGS; a body of the client's size).

Connections belong to a client instance (Java's `MQClientInstance`, one per instanceName in a JVM): a client has its
own unless it names an `instance` another client names too; those share one connection per broker, so the flood's
timeouts also fail the requests in flight of a probe on the same instance. The shipped scenarios give the probe its
own, as the field report's 30 s probe was a program of its own.
"""
from __future__ import annotations

import logging
from typing import Any

from loads.spec import ClientSpec, LoadSpec
from remoting.message import Message

log = logging.getLogger(__name__)

BODY_PATTERN = b"rmq-chaos "


def body_of(size: int) -> bytes:
    """A body of exactly `size` bytes."""
    return (BODY_PATTERN * (size // len(BODY_PATTERN) + 1))[:size]


class MessageFactory:
    """Builds the message of each send of one client."""

    __slots__ = ("topic", "tags", "extra_keys", "body")

    def __init__(self, topic: str, client: ClientSpec) -> None:
        self.topic = topic
        self.tags = client.tags
        self.extra_keys = list(client.keys)
        self.body = body_of(client.message_size)

    def make(self, key: str) -> Message:
        keys = [key, *self.extra_keys] if self.extra_keys else key
        return Message(self.topic, self.body, tags=self.tags, keys=keys)


class ProducerPool:
    """Producers by client name and their client instances' connections, made on first use; `shutdown()` closes
    them all."""

    def __init__(self, spec: LoadSpec) -> None:
        self.spec = spec
        self._producers: dict[str, Any] = {}
        self._instances: dict[str, Any] = {}

    def get(self, client: ClientSpec) -> Any:
        producer = self._producers.get(client.name)
        if producer is None:
            producer = self._producers[client.name] = self._create(client)
        return producer

    def _create(self, client: ClientSpec) -> Any:
        from remoting.client import RemotingClient
        from remoting.producer import Producer
        from remoting.profiles import resolve_profile

        overrides: dict[str, Any] = {"send_msg_timeout_ms": client.send_timeout_ms}
        if client.retries is not None:
            overrides["retry_times_when_send_failed"] = client.retries
        if client.serialize_type != "JSON":
            overrides["serialize_type"] = client.serialize_type
        if client.send_latency_fault_enable is not None:
            overrides["send_latency_fault_enable"] = client.send_latency_fault_enable
        if client.retry_another_broker_when_not_store_ok is not None:
            overrides["retry_another_broker_when_not_store_ok"] = client.retry_another_broker_when_not_store_ok
        name = client.instance_name
        connections = self._instances.get(name)
        if connections is None:
            rules = resolve_profile(client.profile).rules()
            connections = self._instances[name] = RemotingClient(self.spec.namesrv, rules=rules)
        return Producer(self.spec.namesrv, client.producer_group, profile=client.profile, instance_name=name,
                        client=connections, **overrides)

    def shutdown(self) -> None:
        producers, self._producers = self._producers, {}
        instances, self._instances = self._instances, {}
        for name, producer in producers.items():
            try:
                producer.close()
            except Exception:  # a broken connection must not keep the others from shutting down
                log.exception("shutting down the producer of client %s failed", name)
        for name, connections in instances.items():
            try:
                connections.shutdown()
            except Exception:
                log.exception("closing the connections of client instance %s failed", name)

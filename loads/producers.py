"""The producers of one worker process: one `remoting.producer.Producer` per client, shared by all users of that
client (as one Java `DefaultMQProducer` is shared by an application's threads, so a sync timeout that closes the
connection fails the other users' requests in flight, as in the recorded incident); and the message each send
carries (the harness key first in KEYS, then the client's own keys; TAGS; a body of the client's size).
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
    """Producers by client name, made on first use; `shutdown()` closes them all."""

    def __init__(self, spec: LoadSpec) -> None:
        self.spec = spec
        self._producers: dict[str, Any] = {}

    def get(self, client: ClientSpec) -> Any:
        producer = self._producers.get(client.name)
        if producer is None:
            producer = self._producers[client.name] = self._create(client)
        return producer

    def _create(self, client: ClientSpec) -> Any:
        from remoting.producer import Producer

        overrides: dict[str, Any] = {"send_msg_timeout_ms": client.send_timeout_ms}
        if client.retries is not None:
            overrides["retry_times_when_send_failed"] = client.retries
        return Producer(self.spec.namesrv, client.producer_group, profile=client.profile, **overrides)

    def shutdown(self) -> None:
        producers, self._producers = self._producers, {}
        for name, producer in producers.items():
            try:
                producer.close()
            except Exception:  # a broken connection must not keep the others from shutting down
                log.exception("shutting down the producer of client %s failed", name)

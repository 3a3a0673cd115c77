"""The `topic:` and `load:` sections of a scenario: the topic's name and queues, and the load's clients (producer
groups) with their model (open: a rate; closed: concurrent users), message size, timeout and client profile."""
from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from harness.scenario.schema import Duration, Name, Size, Strict, at

TOPIC_RE = re.compile(r"^[%|a-zA-Z0-9_-]{1,127}$")
DEFAULT_TOPIC = "ChaosTopic"
MAX_RATE = 1_000_000.0
"""sends/s: far above what one machine can send; a larger figure is a typo."""
MAX_CLIENTS = 64


def _default_workers() -> int:
    from loads.process import default_workers

    return default_workers()


class TopicSpec(Strict):
    name: str = DEFAULT_TOPIC
    queues: int = Field(default=4, ge=1, le=256)

    @field_validator("name")
    @classmethod
    def _topic(cls, v: str) -> str:
        if not TOPIC_RE.match(v):
            raise ValueError(f"{v!r} is not a valid topic name; allowed: letters, digits, '%', '|', '_', '-' "
                             "(at most 127)")
        return v


class ClientSpec(Strict):
    """One producer group of the load: its users share one producer, as threads share one Java producer."""

    name: Name
    model: Literal["open", "closed"] | None = Field(default=None, description="default: the load's model")
    users: int | None = Field(default=None, ge=1, le=10000, description="closed model: concurrent senders; open "
                                                                        "model: senders that own the slots")
    max_users: int | None = Field(default=None, ge=1, le=100000,
                                  description="open model: the most sends in flight at once; spare senders take "
                                              "the slots of busy users up to it (default: users)")
    rate: float | None = Field(default=None, gt=0, le=MAX_RATE, description="open model: this client's sends/s")
    share: float | None = Field(default=None, gt=0, le=1, description="open model: share of the load's rate")
    think_time: Duration = "0s"
    message_size: Size = "128B"
    timeout: Duration = "3s"
    profile: str = "java-4.9.1"
    retries: int | None = Field(default=None, ge=0, le=16, description="default: the profile's")
    serialize_type: Literal["JSON", "ROCKETMQ"] = Field(
        default="JSON", description="request header encoding (`rocketmq.serialize.type`); JSON is the Java default")
    tags: str | None = None
    instance: Name | None = Field(default=None, description="client instance (Java's instanceName): clients naming "
                                                            "the same one share its connections; default: its own")
    send_latency_fault_enable: bool | None = Field(
        default=None, description="the producer's sendLatencyFaultEnable (avoid slow or failing broker groups for a "
                                  "while, by the version's MQFaultStrategy); default: the profile's (off)")
    retry_another_broker_when_not_store_ok: bool | None = Field(
        default=None, description="the producer's retryAnotherBrokerWhenNotStoreOK: a send answered FLUSH_DISK_TIMEOUT, "
                                  "FLUSH_SLAVE_TIMEOUT or SLAVE_NOT_AVAILABLE is sent again to another broker group "
                                  "(the first copy stays where it was stored); default: the profile's (off)")


class LoadSection(Strict):
    model: Literal["open", "closed"] = "closed"
    max_lag: Duration = Field(default="5s", description="open model: a send not started within this long of its "
                                                        "intended time is dropped (counted, never sent), and every "
                                                        "expectation over its phase is unknown")
    rate: float | None = Field(default=None, gt=0, le=MAX_RATE,
                               description="open model: total sends/s of the open clients")
    workers: int = Field(default_factory=lambda: _default_workers(), ge=0, le=16,
                         description="Locust worker processes (0: one local process); default: half the cores where "
                                     "there are 4 or more (the cluster runs on the same machine), else 0")
    clients: list[ClientSpec] = Field(default=[ClientSpec(name="flood", users=8)], min_length=1,
                                      max_length=MAX_CLIENTS)
    hosts: list[str] = Field(default=[], max_length=64,
                             description="backend ssh: load hosts of the inventory, each running `workers` Locust "
                                         "workers (at least one) for a Locust master on the control node; none: the "
                                         "load runs on the control node")

    @model_validator(mode="after")
    def _models(self) -> LoadSection:
        names = [c.name for c in self.clients]
        for i, c in enumerate(self.clients):
            if names.index(c.name) != i:
                raise at(("clients", i, "name"), f"client name {c.name!r} is used twice")
            model = c.model or self.model
            if model == "closed" and (c.rate is not None or c.share is not None):
                raise at(("clients", i, "rate" if c.rate is not None else "share"),
                         "applies to the open model only; a closed-model client has users")
            if model == "closed" and c.users is None:
                raise at(("clients", i), "a closed-model client needs users")
            if c.max_users is not None and model == "closed":
                raise at(("clients", i, "max_users"), "applies to the open model only; a closed-model client has "
                                                      "exactly its users")
            if c.max_users is not None and c.users is not None and c.max_users < c.users:
                raise at(("clients", i, "max_users"), f"{c.max_users} is fewer than its users ({c.users}); allowed: "
                                                      f"{c.users} or more")
            if model == "open" and c.rate is None and self.rate is None:
                raise at(("clients", i), "an open-model client needs a rate (its own, or load.rate)")
            shared = [o for o in self.clients[:i] if (o.instance or o.name) == (c.instance or c.name)]
            if shared and shared[0].profile != c.profile:
                raise at(("clients", i, "instance"), f"instance {c.instance or c.name!r} is shared with client "
                                                     f"{shared[0].name!r} of profile {shared[0].profile}; allowed: "
                                                     "one profile per instance, or another instance")
        if self.rate is not None and not any(self.model_of(c) == "open" for c in self.clients):
            raise at(("rate",), "load.rate applies to open-model clients and there are none")
        return self

    def model_of(self, client: ClientSpec) -> str:
        return client.model or self.model

